//! `bench --save FILE`: the report's figures as the profile's typed
//! [`Measurements`](crate::profile::Measurements), for `plan` to show beside the
//! catalog's.
//!
//! The saved `measurements.bench` object keeps the report's own keys for what a plan
//! reads (when and by which edgeplan on which host CPU, model, executor, threads,
//! bandwidth, one row per path and phase, fidelity, the verdict), so it is a subset of
//! `bench --format json`; docs/measurements.md has the shape.

use super::engine::report::EngineReport;
use super::report::BenchReport;
use crate::profile::{
    BenchFastest, BenchFidelity, BenchHost, BenchModel, BenchRow, BenchRun, BenchVerdict,
    EngineRun, EngineRunVerdict, Measurements,
};

/// The measurements a saved profile carries for `report`. The engine runs saved
/// earlier are kept, but the one of this run's engine, which this run replaces.
pub fn measurements(report: &BenchReport, earlier: Option<&Measurements>) -> Measurements {
    let mut engines: Vec<EngineRun> = earlier.map_or_else(Vec::new, |m| m.engines.clone());
    if let Some(e) = &report.engine {
        engines.retain(|r| r.engine != e.engine);
        engines.push(engine_run(report, e));
    }
    let v = &report.verdict;
    Measurements {
        engines,
        bench: BenchRun {
            executor: Some(report.executor.clone()),
            measured_at: Some(report.measured_at.clone()),
            tool: Some(report.tool.clone()),
            host: Some(BenchHost {
                cpu_model: report.host.cpu_model.clone(),
            }),
            model: Some(BenchModel {
                name: Some(report.model.name.clone()),
            }),
            threads: Some(report.threads as u64),
            memory_bandwidth_gbps: report.memory_bandwidth_gbps,
            results: report
                .results
                .iter()
                .map(|r| BenchRow {
                    path: r.path.name().to_string(),
                    phase: r.phase.name().to_string(),
                    kernel: Some(r.kernel.clone()),
                    step_ms: Some(r.step_ms),
                    tokens_per_s: Some(r.tokens_per_s),
                    weight_gbps: Some(r.weight_gbps),
                })
                .collect(),
            fidelity: report
                .fidelity
                .iter()
                .map(|f| BenchFidelity {
                    path: f.path.name().to_string(),
                    scheme: f.scheme.clone(),
                    rel_error: Some(f.rel_error),
                    top1_agreement: Some(f.top1_agreement),
                })
                .collect(),
            verdict: Some(BenchVerdict {
                planned: v.planned.clone(),
                priority: Some(v.priority.as_str().to_string()),
                status: Some(v.status.as_str().to_string()),
                reason: Some(v.reason.clone()),
                fastest: Some(BenchFastest {
                    decode: v.fastest.decode.map(|p| p.name().to_string()),
                }),
            }),
        },
    }
}

/// The saved form of the engine section.
fn engine_run(report: &BenchReport, e: &EngineReport) -> EngineRun {
    EngineRun {
        engine: e.engine.clone(),
        version: e.version.clone(),
        executor: Some(report.executor.clone()),
        measured_at: Some(report.measured_at.clone()),
        host: Some(BenchHost {
            cpu_model: report.host.cpu_model.clone(),
        }),
        model: Some(BenchModel {
            name: Some(report.model.name.clone()),
        }),
        threads: Some(e.threads as u64),
        results: e
            .results
            .iter()
            .map(|r| BenchRow {
                path: r.catalog_path.clone(),
                phase: r.phase.name().to_string(),
                kernel: Some(r.kernel.clone()),
                step_ms: Some(r.step_ms.median),
                tokens_per_s: Some(r.tokens_per_s),
                weight_gbps: Some(r.weight_gbps),
            })
            .collect(),
        verdict: EngineRunVerdict {
            planned: e.verdict.planned.clone(),
            priority: Some(e.verdict.priority.as_str().to_string()),
            status: Some(e.verdict.status.as_str().to_string()),
            recommended_path: e.verdict.recommended_path.clone(),
            reason: Some(e.verdict.reason.clone()),
        },
    }
}
