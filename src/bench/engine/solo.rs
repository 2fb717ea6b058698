//! The solo check of a `bench --engine` run: was each side measured undisturbed?
//!
//! An `--engine` run times two sides one after the other: the engine's paired rounds,
//! then edgeplan's own kernels. After both, each side runs once more, briefly and alone
//! (the engine's planned build for a few rounds, then edgeplan's kernels on the paths
//! the engine rows compare with, in a `--quick` run), so each side's two samples are
//! separated by the other side's run. A figure of the run that is off its solo figure
//! by more than [`NOISE_LIMIT_PCT`] means one of the two samples was disturbed (another
//! job on the host, a throttled or stolen CPU, a process left over from the other
//! side), and the run is marked noisy: its verdict becomes inconclusive and `--save`
//! refuses it. The host's load average at the start of each stage is kept beside the
//! figures, as evidence of what else ran.

use std::collections::BTreeMap;

use serde::Serialize;

use super::Series;
use crate::bench::backend::{KernelPath, Phase};
use crate::bench::paired::median_interval;
use crate::bench::rows::ResultRow;

/// Largest difference, in percent of the solo figure, between a side's figure in the
/// run and in its solo run before the run counts as noisy.
pub const NOISE_LIMIT_PCT: f64 = 10.0;

/// Paired rounds of the engine's solo run.
pub const SOLO_ROUNDS: usize = 6;

/// Which side of an `--engine` run a figure belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Side {
    /// The engine's own kernels.
    Engine,
    /// edgeplan's kernels.
    Own,
}

impl Side {
    fn label(self) -> &'static str {
        match self {
            Side::Engine => "the engine's",
            Side::Own => "edgeplan's",
        }
    }
}

/// The stages of an `--engine` run, in the order they run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Stage {
    EngineRun,
    OwnRun,
    EngineSolo,
    OwnSolo,
}

/// The host's load when a stage started (`/proc/loadavg`).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, schemars::JsonSchema)]
pub struct LoadSample {
    pub stage: Stage,
    /// The one-minute load average.
    pub load_1m: f64,
    /// Tasks runnable at that instant, edgeplan's own thread included.
    pub runnable: u64,
}

impl LoadSample {
    /// Parses `/proc/loadavg` (`0.52 0.58 0.59 2/389 12345`).
    pub fn parse(stage: Stage, text: &str) -> Option<LoadSample> {
        let mut fields = text.split_whitespace();
        let load_1m = fields.next()?.parse::<f64>().ok()?;
        let runnable = fields.nth(2)?.split('/').next()?.parse::<u64>().ok()?;
        Some(LoadSample {
            stage,
            load_1m,
            runnable,
        })
    }
}

/// One figure of the run set against the same figure of its side's solo run.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct SoloFigure {
    pub side: Side,
    /// The engine's build (`w4a16`), or edgeplan's kernel path.
    pub build: String,
    pub phase: Phase,
    /// Milliseconds per step in the run (the median of its rounds).
    pub run_step_ms: f64,
    /// Milliseconds per step in the side's solo run.
    pub solo_step_ms: f64,
    /// `(run - solo) / solo` in percent: positive when the run was the slower.
    pub off_pct: f64,
    pub noisy: bool,
}

/// The solo check of one `--engine` run.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct SoloCheck {
    pub limit_pct: f64,
    pub figures: Vec<SoloFigure>,
    /// The host's load at the start of each stage; empty under the fake executor.
    pub load: Vec<LoadSample>,
    /// Set when a figure is off by more than `limit_pct`.
    pub noisy: bool,
    /// Why the run is noisy (`null` when it is not).
    pub reason: Option<String>,
}

/// What the two solo runs measured: the engine's step times per build, edgeplan's
/// result rows.
pub struct SoloRuns<'a> {
    pub engine: &'a BTreeMap<String, Series>,
    pub own: &'a [ResultRow],
    pub load: Vec<LoadSample>,
}

/// Sets each side's figures of the run (`engine`, `own`) against its solo run.
pub fn check(engine: &BTreeMap<String, Series>, own: &[ResultRow], solo: SoloRuns) -> SoloCheck {
    let mut figures = Vec::new();
    for (build, alone) in solo.engine {
        let Some(run) = engine.get(build) else {
            continue;
        };
        for phase in [Phase::Decode, Phase::Prefill] {
            let median = |s: &Series| median_interval(s.of(phase)).map(|i| i.median * 1e3);
            if let (Some(r), Some(s)) = (median(run), median(alone)) {
                figures.push(figure(Side::Engine, build, phase, r, s));
            }
        }
    }
    for alone in solo.own {
        if let Some(run) = own
            .iter()
            .find(|r| r.path == alone.path && r.phase == alone.phase)
        {
            figures.push(figure(
                Side::Own,
                alone.path.name(),
                alone.phase,
                run.step_ms,
                alone.step_ms,
            ));
        }
    }
    let noisy: Vec<&SoloFigure> = figures.iter().filter(|f| f.noisy).collect();
    let reason = (!noisy.is_empty()).then(|| reason(&noisy, &solo.load));
    SoloCheck {
        limit_pct: NOISE_LIMIT_PCT,
        noisy: reason.is_some(),
        reason,
        figures,
        load: solo.load,
    }
}

impl SoloCheck {
    /// One line for the table: quiet with the largest difference, or why it is noisy.
    pub fn summary_line(&self) -> String {
        if let Some(why) = &self.reason {
            return format!("solo check: NOISY: {why}");
        }
        match self
            .figures
            .iter()
            .max_by(|a, b| a.off_pct.abs().total_cmp(&b.off_pct.abs()))
        {
            Some(f) => format!(
                "solo check: quiet: each side within {:.0} % of a short run of it alone (largest: {} {} {} {:+.1} %)",
                self.limit_pct,
                f.side.label(),
                f.build,
                f.phase.name(),
                f.off_pct
            ),
            None => "solo check: nothing to compare (no figure was timed in both runs)".to_string(),
        }
    }
}

fn figure(side: Side, build: &str, phase: Phase, run_ms: f64, solo_ms: f64) -> SoloFigure {
    let off_pct = if solo_ms > 0.0 {
        (run_ms - solo_ms) / solo_ms * 100.0
    } else {
        0.0
    };
    SoloFigure {
        side,
        build: build.to_string(),
        phase,
        run_step_ms: run_ms,
        solo_step_ms: solo_ms,
        off_pct,
        noisy: off_pct.abs() > NOISE_LIMIT_PCT || !off_pct.is_finite(),
    }
}

fn reason(noisy: &[&SoloFigure], load: &[LoadSample]) -> String {
    let worst: Vec<String> = noisy
        .iter()
        .take(3)
        .map(|f| {
            format!(
                "{} {} {} took {:.3} ms a step in the run against {:.3} ms alone ({:+.0} %)",
                f.side.label(),
                f.build,
                f.phase.name(),
                f.run_step_ms,
                f.solo_step_ms,
                f.off_pct
            )
        })
        .collect();
    let more = match noisy.len() {
        n if n > 3 => format!(" and {} more", n - 3),
        _ => String::new(),
    };
    let busiest = load.iter().max_by(|a, b| a.load_1m.total_cmp(&b.load_1m));
    let load_note = match busiest {
        Some(l) => format!(
            "; the host's load average reached {:.2} ({} runnable) at the start of {}",
            l.load_1m,
            l.runnable,
            stage_name(l.stage)
        ),
        None => String::new(),
    };
    format!(
        "noisy run: {}{more}, more than {NOISE_LIMIT_PCT:.0} % off{load_note}: something else used the CPU during one of the two samples; rerun on a quiet host",
        worst.join("; ")
    )
}

fn stage_name(stage: Stage) -> &'static str {
    match stage {
        Stage::EngineRun => "the engine's rounds",
        Stage::OwnRun => "edgeplan's run",
        Stage::EngineSolo => "the engine's solo run",
        Stage::OwnSolo => "edgeplan's solo run",
    }
}

/// The own paths a solo run of edgeplan's kernels times: those the engine's rows are
/// set against, in the run's own order.
pub fn own_paths(own_paths_of_builds: impl Iterator<Item = Option<KernelPath>>) -> Vec<KernelPath> {
    let mut paths: Vec<KernelPath> = own_paths_of_builds.flatten().collect();
    paths.sort();
    paths.dedup();
    paths
}

#[cfg(test)]
mod tests {
    use super::*;

    fn series(decode_s: f64, prefill_s: f64) -> Series {
        Series {
            decode: vec![decode_s; 6],
            prefill: vec![prefill_s; 6],
        }
    }

    #[test]
    fn loadavg_parses_and_junk_does_not() {
        let l = LoadSample::parse(Stage::OwnRun, "1.52 0.58 0.59 3/389 12345\n").unwrap();
        assert_eq!((l.load_1m, l.runnable), (1.52, 3));
        assert!(LoadSample::parse(Stage::OwnRun, "").is_none());
        assert!(LoadSample::parse(Stage::OwnRun, "x 1 2 3/4 5").is_none());
        assert!(LoadSample::parse(Stage::OwnRun, "1 1 1").is_none());
    }

    #[test]
    fn a_side_within_the_limit_is_quiet_and_one_past_it_is_noisy_with_its_figures() {
        let run = BTreeMap::from([("w4a16".to_string(), series(0.010, 0.100))]);
        // 9 % slower decode, 5 % faster prefill: within the limit.
        let quiet = BTreeMap::from([("w4a16".to_string(), series(0.010 / 1.09, 0.105))]);
        let c = check(
            &run,
            &[],
            SoloRuns {
                engine: &quiet,
                own: &[],
                load: vec![],
            },
        );
        assert!(!c.noisy && c.reason.is_none(), "{c:?}");
        assert_eq!(c.figures.len(), 2);
        assert!((c.figures[0].off_pct - 9.0).abs() < 1e-9, "{c:?}");

        // The run's decode took twice the solo run's.
        let alone = BTreeMap::from([("w4a16".to_string(), series(0.005, 0.100))]);
        let load = vec![
            LoadSample::parse(Stage::EngineRun, "2.50 1 1 4/100 1").unwrap(),
            LoadSample::parse(Stage::EngineSolo, "0.10 1 1 1/100 1").unwrap(),
        ];
        let c = check(
            &run,
            &[],
            SoloRuns {
                engine: &alone,
                own: &[],
                load,
            },
        );
        assert!(c.noisy, "{c:?}");
        let why = c.reason.unwrap();
        assert!(
            why.contains("the engine's w4a16 decode took 10.000 ms a step in the run against 5.000 ms alone (+100 %)"),
            "{why}"
        );
        assert!(
            why.contains(
                "load average reached 2.50 (4 runnable) at the start of the engine's rounds"
            ),
            "{why}"
        );
        assert!(!why.contains("prefill"), "{why}");
    }

    #[test]
    fn only_builds_and_paths_both_runs_timed_are_compared() {
        let run = BTreeMap::from([("bf16".to_string(), series(0.01, 0.1))]);
        let alone = BTreeMap::from([("w4a16".to_string(), series(0.01, 0.1))]);
        let c = check(
            &run,
            &[],
            SoloRuns {
                engine: &alone,
                own: &[],
                load: vec![],
            },
        );
        assert!(c.figures.is_empty() && !c.noisy);
        assert_eq!(
            own_paths(
                [
                    Some(KernelPath::Bf16),
                    None,
                    Some(KernelPath::W4A8),
                    Some(KernelPath::Bf16)
                ]
                .into_iter()
            ),
            vec![KernelPath::W4A8, KernelPath::Bf16]
        );
    }
}
