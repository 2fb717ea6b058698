//! `bench --save FILE`: the measurements written into a copy of the profile, and the
//! reader `plan` uses to show them beside the catalog's figures.
//!
//! The profile's `measurements` field holds `{"bench": <the bench JSON report>}`, so a
//! saved profile carries exactly what `bench --format json` printed. [`measured_summary`]
//! reads back the few figures a plan needs (per path: decode and prefill tokens/s, step
//! time, fidelity; the measured bandwidth; the verdict) and never fails: a profile
//! without measurements, or with ones it cannot read, gives `None`.

use std::path::Path;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::report::BenchReport;
use crate::error::io_error;
use crate::profile::Profile;

/// Writes `profile` with `report` as its measurements to `path` (pretty JSON + newline).
pub fn save(profile: &Profile, report: &BenchReport, path: &Path) -> anyhow::Result<()> {
    let mut copy = profile.clone();
    copy.measurements = Some(measurements_value(report)?);
    let mut text = serde_json::to_string_pretty(&copy)?;
    text.push('\n');
    std::fs::write(path, text)
        .map_err(|e| io_error(format!("--save {}: cannot write: {e}", path.display())))
}

/// The value stored in `profile.measurements`.
pub fn measurements_value(report: &BenchReport) -> anyhow::Result<Value> {
    Ok(serde_json::json!({ "bench": serde_json::to_value(report)? }))
}

/// Measured figures for one path.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MeasuredPath {
    pub path: String,
    pub decode_kernel: Option<String>,
    pub decode_step_ms: Option<f64>,
    pub decode_tokens_per_s: Option<f64>,
    pub prefill_tokens_per_s: Option<f64>,
    /// Weight bytes streamed per second in decode (GB/s).
    #[serde(default)]
    pub decode_weight_gbps: Option<f64>,
    /// Symmetric int4 (or bf16) layer relative error.
    pub rel_error: Option<f64>,
    pub top1_agreement: Option<f64>,
}

/// What `plan` can show from a saved bench run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MeasuredSummary {
    pub model: Option<String>,
    /// `real`, or `fake` for the simulated test executor (not measurements).
    #[serde(default)]
    pub executor: Option<String>,
    pub threads: Option<u64>,
    pub memory_bandwidth_gbps: Option<f64>,
    pub paths: Vec<MeasuredPath>,
    pub fastest_decode: Option<String>,
    pub planned: Option<String>,
    /// The priority the planned path was checked at.
    #[serde(default)]
    pub priority: Option<String>,
    /// `confirmed`, `contradicted`, `inconclusive` or `not_applicable`.
    pub verdict: Option<String>,
    /// The verdict's one-sentence reason.
    #[serde(default)]
    pub reason: Option<String>,
}

impl MeasuredSummary {
    /// The figures for a catalog path name (`w4a8-amx` finds `w4a8`).
    pub fn for_plan_path(&self, plan_path: &str) -> Option<&MeasuredPath> {
        let bench = super::verdict::bench_path_for(plan_path)?;
        self.paths.iter().find(|p| p.path == bench.as_str())
    }

    /// One line per path, ready for a table note or `--explain`.
    pub fn lines(&self) -> Vec<String> {
        let mut out = Vec::new();
        let head = format!(
            "measured on this device ({}, {} threads, {} GB/s read)",
            self.model.as_deref().unwrap_or("unknown model"),
            self.threads.map_or("?".into(), |t| t.to_string()),
            self.memory_bandwidth_gbps
                .map_or("?".into(), |b| format!("{b:.1}"))
        );
        out.push(head);
        for p in &self.paths {
            let num =
                |v: Option<f64>, digits: usize| v.map_or("-".into(), |v| format!("{v:.digits$}"));
            out.push(format!(
                "{}: decode {} tok/s ({} ms/step, {}), prefill {} tok/s, rel error {}",
                p.path,
                num(p.decode_tokens_per_s, 1),
                num(p.decode_step_ms, 2),
                p.decode_kernel.as_deref().unwrap_or("-"),
                num(p.prefill_tokens_per_s, 1),
                num(p.rel_error, 4)
            ));
        }
        if let (Some(plan), Some(v)) = (&self.planned, &self.verdict) {
            out.push(format!("bench verdict for {plan}: {v}"));
        }
        out
    }
}

/// The measured figures of a profile saved by `bench --save`, if any.
pub fn measured_summary(profile: &Profile) -> Option<MeasuredSummary> {
    let bench = profile.measurements.as_ref()?.get("bench")?;
    let f = |v: &Value, key: &str| v.get(key).and_then(Value::as_f64);
    let s = |v: &Value, key: &str| v.get(key).and_then(Value::as_str).map(str::to_owned);
    let results = bench.get("results")?.as_array()?;
    let fidelity = bench
        .get("fidelity")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let mut names: Vec<String> = results.iter().filter_map(|r| s(r, "path")).collect();
    names.dedup();
    names.sort();
    names.dedup();
    let find = |path: &str, phase: &str| {
        results.iter().find(|r| {
            s(r, "path").as_deref() == Some(path) && s(r, "phase").as_deref() == Some(phase)
        })
    };
    let paths = names
        .iter()
        .map(|name| {
            let d = find(name, "decode");
            let p = find(name, "prefill");
            let fid = fidelity.iter().find(|r| {
                s(r, "path").as_deref() == Some(name.as_str())
                    && matches!(s(r, "scheme").as_deref(), Some("symmetric") | Some("bf16"))
            });
            MeasuredPath {
                path: name.clone(),
                decode_kernel: d.and_then(|d| s(d, "kernel")),
                decode_step_ms: d.and_then(|d| f(d, "step_ms")),
                decode_tokens_per_s: d.and_then(|d| f(d, "tokens_per_s")),
                prefill_tokens_per_s: p.and_then(|p| f(p, "tokens_per_s")),
                decode_weight_gbps: d.and_then(|d| f(d, "weight_gbps")),
                rel_error: fid.and_then(|r| f(r, "rel_error")),
                top1_agreement: fid.and_then(|r| f(r, "top1_agreement")),
            }
        })
        .collect();
    let verdict = bench.get("verdict");
    Some(MeasuredSummary {
        model: bench.get("model").and_then(|m| s(m, "name")),
        executor: s(bench, "executor"),
        threads: bench.get("threads").and_then(Value::as_u64),
        memory_bandwidth_gbps: f(bench, "memory_bandwidth_gbps"),
        paths,
        fastest_decode: verdict
            .and_then(|v| v.get("fastest"))
            .and_then(|x| s(x, "decode")),
        planned: verdict.and_then(|v| s(v, "planned")),
        priority: verdict.and_then(|v| s(v, "priority")),
        verdict: verdict.and_then(|v| s(v, "status")),
        reason: verdict.and_then(|v| s(v, "reason")),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn profile_with(measurements: Option<Value>) -> Profile {
        let text = r#"{"schema_version": 1, "tool": {"name": "edgeplan", "version": "0"},
            "arch": "x86_64", "hardware_class": "x86_cpu", "supports_bf16": true,
            "cpu": {"vendor": null, "model_name": null, "logical_cpus": 2, "usable_threads": 2},
            "memory": {"total_bytes": null, "available_bytes": null, "limit_bytes": null}}"#;
        let mut p = Profile::from_json(text, "t").unwrap();
        p.measurements = measurements;
        p
    }

    #[test]
    fn no_measurements_no_summary() {
        assert_eq!(measured_summary(&profile_with(None)), None);
        assert_eq!(
            measured_summary(&profile_with(Some(serde_json::json!({"other": 1})))),
            None
        );
    }

    #[test]
    fn reads_back_the_figures_plan_needs() {
        let m = serde_json::json!({"bench": {
            "model": {"name": "qwen3-1.7b"}, "threads": 2, "memory_bandwidth_gbps": 27.5,
            "results": [
                {"path": "w4a8", "phase": "decode", "kernel": "w4a8-avx2", "step_ms": 50.0, "tokens_per_s": 20.0},
                {"path": "w4a8", "phase": "prefill", "kernel": "w4a8-avx2", "step_ms": 900.0, "tokens_per_s": 142.2},
                {"path": "bf16", "phase": "decode", "kernel": "bf16-avx2", "step_ms": 170.0, "tokens_per_s": 5.9}
            ],
            "fidelity": [
                {"path": "w4a8", "scheme": "asymmetric", "rel_error": 0.09},
                {"path": "w4a8", "scheme": "symmetric", "rel_error": 0.11, "top1_agreement": 0.8}
            ],
            "verdict": {"planned": "w4a8-amx", "priority": "speed", "status": "confirmed",
                        "reason": "w4a8 is the fastest decode path", "fastest": {"decode": "w4a8"}}
        }});
        let s = measured_summary(&profile_with(Some(m))).unwrap();
        assert_eq!(s.paths.len(), 2);
        let w = s.for_plan_path("w4a8-amx").unwrap();
        assert_eq!(w.decode_tokens_per_s, Some(20.0));
        assert_eq!(w.prefill_tokens_per_s, Some(142.2));
        assert_eq!(w.rel_error, Some(0.11));
        assert_eq!(s.fastest_decode.as_deref(), Some("w4a8"));
        assert_eq!(s.verdict.as_deref(), Some("confirmed"));
        assert_eq!(s.priority.as_deref(), Some("speed"));
        assert!(s.reason.as_deref().unwrap().contains("fastest decode"));
        let lines = s.lines();
        assert!(lines[0].contains("27.5 GB/s"), "{lines:?}");
        assert!(
            lines
                .iter()
                .any(|l| l.starts_with("w4a8: decode 20.0 tok/s")),
            "{lines:?}"
        );
        assert!(s.for_plan_path("export-qnn-w8a16").is_none());
    }
}
