//! Measured figures beside the catalog's: what a profile saved by `bench --save` says
//! about a plan.
//!
//! The decision is the catalog's and stays so ([`super::rules`] never reads
//! measurements). This module only reads the profile's typed
//! [`Measurements`](crate::profile::Measurements) (never `bench`), decides whether the
//! saved verdict speaks to
//! *this* plan (same path, same priority), and words the result: the plan's `measured`
//! object and one `--explain` step. When the saved verdict for the same path and
//! priority is `contradicted`, the plan says so plainly; when the bench run checked a
//! different path or priority, it says that instead of applying the verdict.

use serde_json::json;

use super::catalog::Catalog;
use super::schema::{Fact, Measured, Plan, Step, Verified};
use crate::profile::{BenchRun, Profile};

/// Where the figures came from, for the trace.
const SOURCE: &str = "profile.measurements.bench (bench --save)";

/// Adds the profile's saved measurements to `plan`: the `measured` object and an
/// explain step. Does nothing when the profile carries none.
pub fn attach(profile: &Profile, plan: &mut Plan, catalog: &Catalog) {
    let Some(m) = &profile.measurements else {
        return;
    };
    let bench_path = catalog
        .get(&plan.path.name)
        .and_then(|spec| spec.bench_path.as_deref());
    let measured = measured_for(&m.bench, bench_path, plan);
    plan.explain.push(step(&measured, plan));
    // A real bench run on this device that confirms this plan measured this exact path.
    if measured.confirms_plan && m.bench.executor.as_deref() != Some("fake") {
        plan.path.verified = Verified::Measured;
        plan.path.verified_basis = format!(
            "measured on this device by the saved bench run ({}): {}",
            SOURCE, measured.reason
        );
    }
    plan.measured = Some(measured);
}

/// The `measured` object for `plan` from a saved bench run; `bench_path` is the bench
/// path that measures the plan's path (the catalog's `bench_path`).
pub fn measured_for(run: &BenchRun, bench_path: Option<&str>, plan: &Plan) -> Measured {
    let name = plan.path.name.as_str();
    let priority = plan.priority.as_str();
    let saved = run.verdict.clone().unwrap_or(crate::profile::BenchVerdict {
        planned: None,
        priority: None,
        status: None,
        reason: None,
        fastest: None,
    });
    let same_path = saved.planned.as_deref() == Some(name);
    let same_priority = saved.priority.as_deref() == Some(priority);
    let applies = same_path && same_priority;
    let verdict = saved.status.as_deref();
    let contradicts_plan = applies && verdict == Some("contradicted");
    let confirms_plan = applies && verdict == Some("confirmed");
    let why = saved.reason.as_deref().unwrap_or("no reason saved");
    let basis = "the decision stays the catalog's";
    let reason = if contradicts_plan {
        format!(
            "the measurements on this host CONTRADICT the plan ({name} at priority {priority}): {why}; {basis}"
        )
    } else if confirms_plan {
        format!(
            "the measurements on this host confirm the plan ({name} at priority {priority}): {why}"
        )
    } else if applies {
        format!(
            "the measurements neither confirm nor contradict {name} (bench verdict {}): {why}; {basis}",
            verdict.unwrap_or("missing")
        )
    } else {
        let checked = format!(
            "{} at priority {}",
            saved.planned.as_deref().unwrap_or("no plan"),
            saved.priority.as_deref().unwrap_or("unknown")
        );
        let differs = match (same_path, same_priority) {
            (false, false) => "a different path and priority",
            (false, true) => "a different path",
            _ => "a different priority",
        };
        format!(
            "the saved bench verdict ({}) was for {checked}, {differs} from this plan ({name} at priority {priority}), so it is not applied here; the figures are shown for reference only",
            verdict.unwrap_or("missing")
        )
    };
    Measured {
        executor: run.executor.clone(),
        model: run.model_name().map(str::to_owned),
        threads: run.threads,
        memory_bandwidth_gbps: run.memory_bandwidth_gbps,
        paths: run.paths(),
        plan_bench_path: bench_path.map(str::to_owned),
        bench_planned: saved.planned.clone(),
        bench_priority: saved.priority.clone(),
        bench_verdict: saved.status.clone(),
        bench_reason: saved.reason.clone(),
        applies,
        contradicts_plan,
        confirms_plan,
        reason,
    }
}

/// The `--explain` step: the figures used, and whether they confirm the catalog's basis.
fn step(m: &Measured, plan: &Plan) -> Step {
    let mut facts = vec![
        Fact {
            field: "measurements.bench.executor".into(),
            value: json!(m.executor),
            source: SOURCE.into(),
        },
        Fact {
            field: "measurements.bench.memory_bandwidth_gbps".into(),
            value: json!(m.memory_bandwidth_gbps.map(|v| round(v, 1))),
            source: SOURCE.into(),
        },
        Fact {
            field: "measurements.bench.verdict".into(),
            value: json!({
                "planned": m.bench_planned,
                "priority": m.bench_priority,
                "status": m.bench_verdict,
            }),
            source: SOURCE.into(),
        },
    ];
    for p in &m.paths {
        facts.push(Fact {
            field: format!("measurements.bench.{}", p.path),
            value: json!({
                "kernel": p.decode_kernel,
                "decode_tokens_per_s": p.decode_tokens_per_s.map(|v| round(v, 1)),
                "decode_step_ms": p.decode_step_ms.map(|v| round(v, 3)),
                "prefill_tokens_per_s": p.prefill_tokens_per_s.map(|v| round(v, 1)),
                "rel_error": p.rel_error.map(|v| round(v, 4)),
                "top1_agreement": p.top1_agreement.map(|v| round(v, 3)),
            }),
            source: SOURCE.into(),
        });
    }
    let mut outcome = m.reason.clone();
    if m.executor.as_deref() == Some("fake") {
        outcome.push_str(" (figures from the simulated test executor, not measurements)");
    }
    if m.applies && !m.contradicts_plan && plan.path.verified == Verified::Measured {
        outcome.push_str("; the catalog's basis (measured on this class of hardware) stands");
    }
    Step {
        rule: "measured_figures".into(),
        outcome,
        facts,
    }
}

/// `v` to `digits` decimals, for a readable trace (the `measured` object keeps all).
fn round(v: f64, digits: i32) -> f64 {
    let scale = 10f64.powi(digits);
    (v * scale).round() / scale
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::rules::decide;
    use crate::plan::schema::Priority;
    use crate::profile::{BenchFastest, BenchFidelity, BenchModel, BenchRow, BenchVerdict};

    fn amx_plan(priority: Priority) -> Plan {
        let profile = Profile::from_json(
            r#"{"schema_version": 1, "tool": {"name": "edgeplan", "version": "0"},
                "arch": "x86_64", "hardware_class": "x86_cpu", "supports_bf16": true,
                "cpu": {"vendor": null, "model_name": null, "logical_cpus": 2, "usable_threads": 2,
                        "flags": ["amx_tile", "amx_int8"], "features": {}},
                "memory": {"total_bytes": null, "available_bytes": null, "limit_bytes": null}}"#,
            "t",
        )
        .unwrap();
        decide(&profile, priority, &Catalog::builtin())
    }

    fn summary(planned: &str, priority: &str, verdict: &str) -> BenchRun {
        let row = |phase: &str, step_ms: f64, tps: f64, gbps: Option<f64>| BenchRow {
            path: "w4a8".into(),
            phase: phase.into(),
            kernel: Some("w4a8-avx2".into()),
            step_ms: Some(step_ms),
            tokens_per_s: Some(tps),
            weight_gbps: gbps,
        };
        BenchRun {
            model: Some(BenchModel {
                name: Some("m".into()),
            }),
            executor: Some("real".into()),
            threads: Some(2),
            memory_bandwidth_gbps: Some(20.0),
            results: vec![
                row("decode", 50.0, 20.0, Some(18.0)),
                row("prefill", 1280.0, 100.0, None),
            ],
            fidelity: vec![BenchFidelity {
                path: "w4a8".into(),
                scheme: "symmetric".into(),
                rel_error: Some(0.1),
                top1_agreement: Some(0.9),
            }],
            verdict: Some(BenchVerdict {
                planned: Some(planned.into()),
                priority: Some(priority.into()),
                status: Some(verdict.into()),
                reason: Some("w4a16 beats w4a8 in decode".into()),
                fastest: Some(BenchFastest {
                    decode: Some("w4a16".into()),
                }),
            }),
        }
    }

    /// The bench path the built-in catalog names for `plan`'s path.
    fn bench_path(plan: &Plan) -> Option<String> {
        Catalog::builtin().get(&plan.path.name)?.bench_path.clone()
    }

    fn measured_for_plan(run: &BenchRun, plan: &Plan) -> Measured {
        measured_for(run, bench_path(plan).as_deref(), plan)
    }

    #[test]
    fn contradiction_for_the_same_plan_is_stated() {
        let plan = amx_plan(Priority::Speed);
        assert_eq!(plan.path.name, "w4a8-amx");
        let m = measured_for_plan(&summary("w4a8-amx", "speed", "contradicted"), &plan);
        assert!(m.applies && m.contradicts_plan && !m.confirms_plan);
        assert!(m.reason.contains("CONTRADICT the plan"), "{}", m.reason);
        assert!(m.reason.contains("w4a16 beats w4a8"), "{}", m.reason);
        assert_eq!(m.plan_bench_path.as_deref(), Some("w4a8"));
    }

    #[test]
    fn verdict_for_another_priority_is_not_applied() {
        let plan = amx_plan(Priority::Fidelity);
        let m = measured_for_plan(&summary("w4a8-amx", "speed", "contradicted"), &plan);
        assert!(!m.applies && !m.contradicts_plan);
        assert!(
            m.reason.contains("a different path and priority"),
            "{}",
            m.reason
        );
        let plan = amx_plan(Priority::Speed);
        let m = measured_for_plan(&summary("w4a8-amx", "fidelity", "confirmed"), &plan);
        assert!(!m.applies && !m.confirms_plan);
        assert!(m.reason.contains("a different priority"), "{}", m.reason);
    }

    #[test]
    fn inconclusive_verdict_neither_confirms_nor_contradicts() {
        let plan = amx_plan(Priority::Speed);
        let m = measured_for_plan(&summary("w4a8-amx", "speed", "inconclusive"), &plan);
        assert!(m.applies && !m.confirms_plan && !m.contradicts_plan);
        assert!(
            m.reason.contains("neither confirm nor contradict"),
            "{}",
            m.reason
        );
    }

    #[test]
    fn attach_adds_the_step_and_leaves_the_decision() {
        let mut plan = amx_plan(Priority::Speed);
        let before = plan.path.clone();
        let m = measured_for_plan(&summary("w4a8-amx", "speed", "confirmed"), &plan);
        let s = step(&m, &plan);
        assert_eq!(s.rule, "measured_figures");
        assert!(s.outcome.contains("confirm the plan"), "{}", s.outcome);
        assert!(s.facts.iter().any(|f| f.field == "measurements.bench.w4a8"));
        plan.measured = Some(m);
        assert_eq!(plan.path, before);
    }
}
