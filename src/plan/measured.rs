//! Measured figures beside the catalog's: what a profile saved by `bench --save` says
//! about a plan.
//!
//! The own-kernel bench figures never change the decision (only a saved `bench
//! --engine` run does, in `measured_choice.rs`). This module only reads the profile's typed
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
    let context = Context {
        now_unix: crate::timestamp::now_unix(),
        profile_cpu: profile.cpu.model_name.as_deref(),
    };
    // A run saved before a path was renamed names it by its earlier name (an alias).
    let mut run = m.bench.clone();
    if let Some(v) = run.verdict.as_mut()
        && let Some(spec) = v.planned.as_deref().and_then(|p| catalog.get(p))
    {
        v.planned = Some(spec.name.clone());
    }
    let measured = measured_for(&run, bench_path, plan, &context);
    plan.explain.push(step(&measured, plan));
    // A real bench run on this device that confirms this plan measured this exact path
    // (a run on another CPU measured that CPU, not this device).
    if measured.confirms_plan
        && m.bench.executor.as_deref() != Some("fake")
        && measured.host_matches_profile != Some(false)
    {
        plan.path.verified = Verified::Measured;
        plan.path.verified_basis = format!(
            "measured on this device by the saved bench run ({}; {}): {}",
            SOURCE,
            provenance(&measured),
            measured.reason
        );
    }
    plan.measured = Some(measured);
}

/// What the `measured` object is judged against besides the run: the time now (for the
/// run's age) and the CPU the profile describes (to tell whether the run measured it).
pub struct Context<'a> {
    pub now_unix: i64,
    pub profile_cpu: Option<&'a str>,
}

/// The `measured` object for `plan` from a saved bench run; `bench_path` is the bench
/// path that measures the plan's path (the catalog's `bench_path`).
pub fn measured_for(
    run: &BenchRun,
    bench_path: Option<&str>,
    plan: &Plan,
    context: &Context<'_>,
) -> Measured {
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
    let host_matches_profile = match (run.host_cpu(), context.profile_cpu) {
        (Some(host), Some(profile)) => Some(host.trim() == profile.trim()),
        _ => None,
    };
    let reason = match (host_matches_profile, run.host_cpu(), context.profile_cpu) {
        (Some(false), Some(host), Some(profile)) => format!(
            "{reason}; the run measured {host}, not the CPU this profile describes ({profile}), so the figures are that host's"
        ),
        _ => reason,
    };
    let age_s = run
        .measured_at
        .as_deref()
        .and_then(crate::timestamp::parse_rfc3339)
        .map(|at| context.now_unix - at);
    Measured {
        executor: run.executor.clone(),
        measured_at: run.measured_at.clone(),
        age_s,
        edgeplan_version: run.version().map(str::to_owned),
        host_cpu: run.host_cpu().map(str::to_owned),
        host_matches_profile,
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

/// When, where and by what the figures were measured, in words:
/// `measured 2026-12-01T03:20:00Z (3 days ago) on AMD EPYC 9R14 by edgeplan 0.1.0`.
pub fn provenance(m: &Measured) -> String {
    let when = match (&m.measured_at, m.age_s) {
        (Some(at), Some(age)) => format!("{at} ({})", crate::timestamp::human_age(age)),
        (Some(at), None) => format!("{at} (not a readable RFC 3339 time)"),
        (None, _) => "at an unknown time (not saved)".into(),
    };
    let cpu = m.host_cpu.as_deref().unwrap_or("an unknown CPU");
    let version = m
        .edgeplan_version
        .as_deref()
        .map_or("an unknown edgeplan version".into(), |v| {
            format!("edgeplan {v}")
        });
    format!("measured {when} on {cpu} by {version}")
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
            field: "measurements.bench.measured_at".into(),
            value: json!({"measured_at": m.measured_at, "age_s": m.age_s}),
            source: SOURCE.into(),
        },
        Fact {
            field: "measurements.bench.host.cpu_model".into(),
            value: json!(m.host_cpu),
            source: SOURCE.into(),
        },
        Fact {
            field: "measurements.bench.tool.version".into(),
            value: json!(m.edgeplan_version),
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
    outcome.push_str("; ");
    outcome.push_str(&provenance(m));
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
    use crate::profile::{
        BenchFastest, BenchFidelity, BenchHost, BenchModel, BenchRow, BenchVerdict,
    };

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
            measured_at: Some("2026-12-01T00:00:00Z".into()),
            tool: Some(crate::profile::Tool {
                name: "edgeplan".into(),
                version: "0.1.0".into(),
            }),
            host: Some(BenchHost {
                cpu_model: Some("AMD EPYC 9R14".into()),
            }),
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

    /// 2026-12-03T12:00:00Z: two and a half days after [`summary`]'s run.
    const NOW: i64 = 1_796_083_200 + 2 * 86_400 + 12 * 3600;

    fn measured_for_plan(run: &BenchRun, plan: &Plan) -> Measured {
        let context = Context {
            now_unix: NOW,
            profile_cpu: Some("AMD EPYC 9R14"),
        };
        measured_for(run, bench_path(plan).as_deref(), plan, &context)
    }

    #[test]
    fn the_age_host_and_version_are_shown() {
        let plan = amx_plan(Priority::Speed);
        let m = measured_for_plan(&summary("w4a8-amx", "speed", "confirmed"), &plan);
        assert_eq!(m.measured_at.as_deref(), Some("2026-12-01T00:00:00Z"));
        assert_eq!(m.age_s, Some(2 * 86_400 + 12 * 3600));
        assert_eq!(m.host_cpu.as_deref(), Some("AMD EPYC 9R14"));
        assert_eq!(m.edgeplan_version.as_deref(), Some("0.1.0"));
        assert_eq!(m.host_matches_profile, Some(true));
        assert_eq!(
            provenance(&m),
            "measured 2026-12-01T00:00:00Z (2 days ago) on AMD EPYC 9R14 by edgeplan 0.1.0"
        );
        let s = step(&m, &plan);
        assert!(s.outcome.ends_with(&provenance(&m)), "{}", s.outcome);
        let fact = |name: &str| {
            s.facts
                .iter()
                .find(|f| f.field == name)
                .map(|f| f.value.clone())
        };
        assert_eq!(
            fact("measurements.bench.measured_at"),
            Some(json!({"measured_at": "2026-12-01T00:00:00Z", "age_s": 216_000}))
        );
        assert_eq!(
            fact("measurements.bench.host.cpu_model"),
            Some(json!("AMD EPYC 9R14"))
        );
        assert_eq!(
            fact("measurements.bench.tool.version"),
            Some(json!("0.1.0"))
        );
    }

    #[test]
    fn a_profile_saved_before_the_timestamp_reads_as_unknown() {
        let plan = amx_plan(Priority::Speed);
        let mut run = summary("w4a8-amx", "speed", "confirmed");
        run.measured_at = None;
        run.tool = None;
        run.host = None;
        let m = measured_for_plan(&run, &plan);
        assert_eq!((m.age_s, m.host_matches_profile), (None, None));
        assert_eq!(
            provenance(&m),
            "measured at an unknown time (not saved) on an unknown CPU by an unknown edgeplan version"
        );
        run.measured_at = Some("last Tuesday".into());
        let m = measured_for_plan(&run, &plan);
        assert_eq!(m.age_s, None);
        assert!(provenance(&m).contains("last Tuesday (not a readable RFC 3339 time)"));
    }

    #[test]
    fn a_run_on_another_cpu_is_named_and_never_verifies_the_plan() {
        let plan = amx_plan(Priority::Speed);
        let context = Context {
            now_unix: NOW,
            profile_cpu: Some("Intel(R) Xeon(R) Platinum 8480C"),
        };
        let run = summary("w4a8-amx", "speed", "confirmed");
        let m = measured_for(&run, bench_path(&plan).as_deref(), &plan, &context);
        assert_eq!(m.host_matches_profile, Some(false));
        assert!(m.confirms_plan);
        assert!(
            m.reason.ends_with(
                "the run measured AMD EPYC 9R14, not the CPU this profile describes (Intel(R) Xeon(R) Platinum 8480C), so the figures are that host's"
            ),
            "{}",
            m.reason
        );
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
