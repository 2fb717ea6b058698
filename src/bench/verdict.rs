//! The verdict: does this host's measurement confirm the plan?
//!
//! Pure logic over the report's rows, so it is unit-tested with injected figures.
//!
//! Definitions (also in docs/performance.md):
//! - The planned path comes with the bench path that measures it (the catalog's
//!   `bench_path`: w4a8-amx -> w4a8, w4a16-tinygemm -> w4a16, bf16 and fp16 -> bf16).
//!   A path without one (an NPU export such as `export-qnn-w8a16`) has no bench path:
//!   status `not_applicable`, never a contradiction.
//! - Speed is judged on the paired rounds ([`super::paired`]): for each phase and each
//!   rival path, the per-round ratio `planned / rival` step time, its median and its
//!   95 % sign interval. Against one rival the plan *holds* when the whole interval is at
//!   or under `1 + 3 %` (the fixed tie band), is *beaten* when the whole interval is
//!   above it, and is *undecided* otherwise. A phase is won when the plan holds against
//!   every rival, lost when any rival beats it.
//! - Speed priority: `confirmed` when a phase is won (decode, the phase that sets
//!   generation speed, **or** prefill; `confirmed_in` lists them); `contradicted` when
//!   every measured phase is lost; otherwise `inconclusive`, with the widest interval
//!   and what to do. Noise widens intervals, never the band: it can only make a verdict
//!   inconclusive, never turn a gap into a pass. `noisy` is set when an interval is
//!   wider than 10 % of its median.
//! - Fidelity priority: `confirmed` when its path has the lowest layer relative error
//!   (symmetric scheme, 5 % tolerance) among the measured paths that store no more bits
//!   per weight than it does (bf16 competes only with a bf16 plan); `contradicted` otherwise.
//! - A planned path whose every kernel failed its correctness check is `contradicted`;
//!   one that could not be measured at all (no available kernel) is `inconclusive`.
//! - `--strict` exits 1 only on `contradicted`.

use crate::profile::Priority;
use serde::Serialize;

use super::backend::{KernelPath, Phase};
use super::paired::{self, Judgement, TIE_BAND};
use super::rows::{Comparison, FidelityRow, ResultRow};

/// Relative error slack when ranking fidelity.
pub const FIDELITY_TOLERANCE: f64 = 0.05;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    Confirmed,
    Contradicted,
    Inconclusive,
    NotApplicable,
}

impl Status {
    /// The JSON spelling (`not_applicable`).
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Confirmed => "confirmed",
            Status::Contradicted => "contradicted",
            Status::Inconclusive => "inconclusive",
            Status::NotApplicable => "not_applicable",
        }
    }
}

/// The plan as the verdict needs it.
#[derive(Debug, Clone, PartialEq)]
pub struct PlanInput {
    /// The catalog path name (`w4a8-amx`, `w4a16-tinygemm`, ...).
    pub name: String,
    /// The bench path that measures it (the catalog's `bench_path`), if any.
    pub bench_path: Option<KernelPath>,
    /// Why the plan does not run on a CPU bench can time (`runs on the CUDA GPU`):
    /// the verdict is then `not_applicable` and the CPU rows are for information.
    pub off_cpu: Option<String>,
    pub priority: Priority,
    /// Where the profile came from (`live probe`, a file name).
    pub source: String,
    /// The profile is an x86 CPU without usable AMX-INT8: vLLM will not run its W4A8
    /// kernel there, so a w4a8 win is one the plan cannot route to.
    pub x86_without_amx: bool,
}

/// The fastest path per phase, by median step time.
#[derive(Debug, Clone, Default, PartialEq, Serialize, schemars::JsonSchema)]
pub struct Fastest {
    pub decode: Option<KernelPath>,
    pub decode_step_ms: Option<f64>,
    pub prefill: Option<KernelPath>,
    pub prefill_step_ms: Option<f64>,
}

#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct Verdict {
    /// The planned path name; `null` when no plan could be made.
    pub planned: Option<String>,
    pub planned_bench_path: Option<KernelPath>,
    pub priority: Priority,
    pub plan_source: String,
    pub fastest: Fastest,
    pub confirmed: bool,
    pub status: Status,
    /// Phases in which the planned path is fastest or tied (speed priority).
    pub confirmed_in: Vec<Phase>,
    /// How much slower the planned path is than the fastest, per phase (0 when it is the fastest).
    pub decode_gap_pct: Option<f64>,
    pub prefill_gap_pct: Option<f64>,
    /// One sentence: why confirmed or not.
    pub reason: String,
    /// A compared measurement spread over 10 % of its median: re-run on a quiet machine.
    pub noisy: bool,
    /// Set when the profile describes another device than this host: figures are this host's.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub other_device: Option<String>,
    pub notes: Vec<String>,
}

impl Verdict {
    pub fn summary_line(&self) -> String {
        let Some(plan) = self.planned.as_deref() else {
            return format!("verdict: INCONCLUSIVE: {}", self.reason);
        };
        let word = match self.status {
            Status::Confirmed => "CONFIRMED",
            Status::Contradicted => "CONTRADICTED",
            Status::Inconclusive => "INCONCLUSIVE",
            Status::NotApplicable => "NOT APPLICABLE",
        };
        let line = format!(
            "verdict: plan {plan} (priority {}, from {}) {word}: {}",
            self.priority, self.plan_source, self.reason
        );
        match &self.other_device {
            Some(label) => format!("{line}\nNOTE: {label}"),
            None => line,
        }
    }
}

fn row(results: &[ResultRow], path: KernelPath, phase: Phase) -> Option<&ResultRow> {
    results.iter().find(|r| r.path == path && r.phase == phase)
}

fn fastest_in(results: &[ResultRow], phase: Phase) -> Option<&ResultRow> {
    results
        .iter()
        .filter(|r| r.phase == phase)
        .min_by(|a, b| a.step_ms.total_cmp(&b.step_ms))
}

/// Relative interval width above which the verdict is flagged `noisy`.
pub const NOISY_WIDTH: f64 = 0.10;

/// What the verdict needs besides the rows: the plan, or why there is none, and the
/// paths whose kernels all failed their check.
pub struct VerdictInput<'a> {
    pub plan: Result<PlanInput, String>,
    pub priority: Priority,
    pub results: &'a [ResultRow],
    pub fidelity: &'a [FidelityRow],
    pub failed_paths: &'a [KernelPath],
    /// The paired comparisons of the planned path with each rival, per phase.
    pub comparisons: &'a [Comparison],
    /// The kernel each measured path used, to spot a plan naming an ISA the host lacks.
    pub notes: Vec<String>,
}

/// Decides the verdict.
pub fn decide(input: VerdictInput<'_>) -> Verdict {
    let results = input.results;
    let fd = fastest_in(results, Phase::Decode);
    let fp = fastest_in(results, Phase::Prefill);
    let fastest = Fastest {
        decode: fd.map(|r| r.path),
        decode_step_ms: fd.map(|r| r.step_ms),
        prefill: fp.map(|r| r.path),
        prefill_step_ms: fp.map(|r| r.step_ms),
    };
    let mut v = Verdict {
        planned: None,
        planned_bench_path: None,
        priority: input.priority,
        plan_source: String::new(),
        fastest,
        confirmed: false,
        status: Status::Inconclusive,
        confirmed_in: Vec::new(),
        decode_gap_pct: None,
        prefill_gap_pct: None,
        reason: String::new(),
        noisy: false,
        other_device: None,
        notes: input.notes,
    };
    let plan = match input.plan {
        Ok(plan) => plan,
        Err(why) => {
            v.plan_source = "none".into();
            v.reason = format!("no plan to check: {why}");
            return v;
        }
    };
    v.planned = Some(plan.name.clone());
    v.priority = plan.priority;
    v.plan_source = plan.source.clone();
    if let Some(why) = &plan.off_cpu {
        v.status = Status::NotApplicable;
        v.reason = format!(
            "{} {why}; bench times this host's CPU kernels only: the rows above are the CPU paths, for information, not a check of this plan",
            plan.name
        );
        return v;
    }
    let Some(path) = plan.bench_path else {
        v.status = Status::NotApplicable;
        v.reason = format!(
            "{} has no bench path (bench measures the CPU w4a8, w4a16 and bf16 kernels only)",
            plan.name
        );
        return v;
    };
    v.planned_bench_path = Some(path);
    // AMX serves prefill only (decode is a GEMV on every AMX host, as in vLLM and
    // llama.cpp): the note is for a host where no row of the path ran an AMX kernel.
    let rows_of_path = || results.iter().filter(|r| r.path == path);
    if plan.name.contains("amx")
        && rows_of_path().next().is_some()
        && !rows_of_path().any(|r| r.kernel.contains("amx"))
    {
        v.notes.push(format!(
            "{} names AMX, but this host measured {path} without AMX kernels: the figures describe this host's fallback, not the planned kernel",
            plan.name
        ));
    }
    let pd = row(results, path, Phase::Decode);
    let pp = row(results, path, Phase::Prefill);
    if pd.is_none() && pp.is_none() {
        unmeasured(&mut v, path, input.failed_paths);
        return v;
    }
    gaps_and_noise(&mut v, input.comparisons);
    v.decode_gap_pct = v.decode_gap_pct.or(pd.map(|_| 0.0));
    v.prefill_gap_pct = v.prefill_gap_pct.or(pp.map(|_| 0.0));
    if plan.priority == Priority::Fidelity {
        decide_fidelity(&mut v, path, input.fidelity);
    } else {
        let measured = [(Phase::Decode, pd), (Phase::Prefill, pp)]
            .into_iter()
            .filter_map(|(phase, row)| row.map(|_| phase))
            .collect::<Vec<_>>();
        decide_speed(&mut v, path, &measured, input.comparisons);
        if plan.x86_without_amx && path != KernelPath::W4A8 {
            explain_unroutable_w4a8(&mut v, results, [fd, fp]);
        }
    }
    v.confirmed = v.status == Status::Confirmed;
    v
}

/// The planned path has no row: every kernel failed its check (contradicted), or none
/// could run here (inconclusive).
fn unmeasured(v: &mut Verdict, path: KernelPath, failed_paths: &[KernelPath]) {
    if failed_paths.contains(&path) {
        v.status = Status::Contradicted;
        v.reason = format!("every {path} kernel failed its correctness check on this host");
    } else {
        v.status = Status::Inconclusive;
        v.reason = format!("{path} could not be measured on this host (no available kernel)");
    }
}

/// The planned path's gap to its fastest rival per phase (the largest median ratio,
/// 0 when it is the fastest), and a note when an interval is wide.
fn gaps_and_noise(v: &mut Verdict, comparisons: &[Comparison]) {
    let gap = |phase: Phase| {
        comparisons
            .iter()
            .filter(|c| c.phase == phase)
            .map(|c| ((c.ratio.median - 1.0) * 100.0).max(0.0))
            .max_by(f64::total_cmp)
    };
    v.decode_gap_pct = gap(Phase::Decode);
    v.prefill_gap_pct = gap(Phase::Prefill);
    if let Some(worst) = comparisons
        .iter()
        .map(|c| c.ratio.relative_width())
        .filter(|w| *w > NOISY_WIDTH)
        .max_by(f64::total_cmp)
    {
        v.noisy = true;
        v.notes.push(format!(
            "the paired intervals are wide (up to {:.0}% of the median ratio): a quieter host or more rounds narrows them",
            worst * 100.0
        ));
    }
}

/// `0.93 [0.91, 0.95]`: a ratio with its interval.
fn ratio_text(c: &Comparison) -> String {
    format!(
        "{:.3} [{:.3}, {:.3}]",
        c.ratio.median, c.ratio.low, c.ratio.high
    )
}

fn decide_speed(v: &mut Verdict, path: KernelPath, measured: &[Phase], comparisons: &[Comparison]) {
    let band = TIE_BAND * 100.0;
    let (mut won, mut lost, mut open) = (Vec::new(), Vec::new(), Vec::new());
    for &phase in measured {
        let name = phase.name();
        let mine: Vec<&Comparison> = comparisons.iter().filter(|c| c.phase == phase).collect();
        let rounds = mine.iter().map(|c| c.ratio.n).max().unwrap_or(0);
        let beaten: Vec<&&Comparison> = mine
            .iter()
            .filter(|c| c.judgement == Judgement::Beaten)
            .collect();
        let list = |cs: &[&Comparison]| {
            cs.iter()
                .map(|c| format!("vs {} {}", c.rival, ratio_text(c)))
                .collect::<Vec<_>>()
                .join(", ")
        };
        if !beaten.is_empty() {
            let by: Vec<String> = beaten
                .iter()
                .map(|c| {
                    format!(
                        "{} beats {path} in {name} (time ratio {}, beyond the {band:.0}% band)",
                        c.rival,
                        ratio_text(c)
                    )
                })
                .collect();
            lost.push(by.join("; "));
        } else if mine.iter().all(|c| c.judgement == Judgement::Holds) {
            v.confirmed_in.push(phase);
            won.push(if mine.is_empty() {
                format!("{path} is the only path measured in {name}")
            } else {
                format!(
                    "{path} is the fastest {name} path or within the {band:.0}% tie band over {rounds} paired rounds (time ratio {})",
                    list(&mine)
                )
            });
        } else {
            let undecided: Vec<&Comparison> = mine
                .iter()
                .copied()
                .filter(|c| c.judgement == Judgement::Undecided)
                .collect();
            open.push(format!(
                "{name} undecided over {rounds} rounds ({})",
                list(&undecided)
            ));
        }
    }
    if !won.is_empty() {
        v.status = Status::Confirmed;
        let mut parts = won;
        parts.extend(lost.iter().map(|l| format!("but {l}")));
        v.reason = parts.join("; ");
    } else if !lost.is_empty() && open.is_empty() {
        v.status = Status::Contradicted;
        v.reason = lost.join("; ");
    } else {
        v.status = Status::Inconclusive;
        let widest = comparisons
            .iter()
            .map(|c| c.ratio.relative_width() * 100.0)
            .fold(0.0, f64::max);
        let mut parts = lost;
        parts.extend(open);
        v.reason = format!(
            "{}: the 95% intervals (widest {widest:.0}% of the ratio) do not settle against the {band:.0}% tie band; {}",
            parts.join("; "),
            advice(comparisons)
        );
    }
}

/// What would settle the undecided comparisons, from the spread their rounds showed:
/// the rounds the sign intervals would need, or that no count of rounds will.
fn advice(comparisons: &[Comparison]) -> String {
    let band = TIE_BAND * 100.0;
    let undecided = comparisons
        .iter()
        .filter(|c| c.judgement == Judgement::Undecided);
    let mut needed = 0usize;
    let mut never = Vec::new();
    for c in undecided {
        match paired::rounds_to_settle(&c.ratio) {
            Some(n) => needed = needed.max(n),
            None => never.push(c),
        }
    }
    if let Some(c) = never.first() {
        let edge = 1.0 + TIE_BAND;
        let why = if (c.ratio.median - edge).abs() <= paired::ON_THE_EDGE * edge {
            format!(
                "its median ratio {:.3} sits on the {band:.0}% band's edge: {} and {} differ by about {band:.0}%",
                c.ratio.median, c.planned, c.rival
            )
        } else {
            format!(
                "at the spread observed it would take over {} rounds",
                paired::MAX_ADVISED_ROUNDS
            )
        };
        return format!(
            "more rounds will not settle {} vs {} in {} ({why}); a quieter host narrows the intervals, or read the two as tied within about {band:.0}%",
            c.planned,
            c.rival,
            c.phase.name()
        );
    }
    // Rounded up to a multiple of ten: the estimate is no finer than that.
    let rounds = needed.div_ceil(10) * 10;
    let run = comparisons.iter().map(|c| c.ratio.n).max().unwrap_or(0);
    format!(
        "at the spread observed over {run} rounds, about {rounds} would settle it: run again with --rounds {rounds} (or a quieter host, which narrows the intervals)"
    )
}

/// When edgeplan's own W4A8 kernel beat the plan on an x86 host without usable AMX,
/// the reason says why that win is not a path the plan can take: vLLM gates its W4A8
/// kernel on AMX. The status is left as it is.
fn explain_unroutable_w4a8(v: &mut Verdict, results: &[ResultRow], best: [Option<&ResultRow>; 2]) {
    let beaten_by_w4a8 = best
        .iter()
        .flatten()
        .any(|b| b.path == KernelPath::W4A8 && !v.confirmed_in.contains(&b.phase));
    if !beaten_by_w4a8 {
        return;
    }
    let kernel = results
        .iter()
        .find(|r| r.path == KernelPath::W4A8 && r.phase == Phase::Decode)
        .or_else(|| results.iter().find(|r| r.path == KernelPath::W4A8))
        .map_or("W4A8", |r| r.kernel.as_str());
    v.reason.push_str(&format!(
        "; but vLLM's W4A8 kernel requires AMX (vLLM gates W4A8 on AMX), which this host lacks: the measured w4a8 win is for edgeplan's own {kernel} kernel, which vLLM does not run here, so the plan cannot route to it"
    ));
}

fn decide_fidelity(v: &mut Verdict, path: KernelPath, fidelity: &[FidelityRow]) {
    // Compare like with like: the symmetric scheme for int4 paths, the bf16 row for bf16.
    let pick = |p: KernelPath| -> Option<&FidelityRow> {
        fidelity
            .iter()
            .filter(|f| f.path == p)
            .find(|f| f.scheme == "symmetric" || f.scheme == "bf16")
    };
    let Some(mine) = pick(path) else {
        v.status = Status::Inconclusive;
        v.reason = format!("no fidelity figures for {path}");
        return;
    };
    let rivals: Vec<&FidelityRow> = KernelPath::ALL
        .into_iter()
        .filter(|p| *p != path && p.bits_per_weight() <= path.bits_per_weight())
        .filter_map(pick)
        .collect();
    let better: Vec<&&FidelityRow> = rivals
        .iter()
        .filter(|r| r.rel_error * (1.0 + FIDELITY_TOLERANCE) < mine.rel_error)
        .collect();
    if better.is_empty() {
        v.status = Status::Confirmed;
        let against: Vec<String> = rivals
            .iter()
            .map(|r| format!("{} {:.4}", r.path, r.rel_error))
            .collect();
        v.reason = if against.is_empty() {
            format!(
                "{path} has no rival at its bit budget (rel error {:.4})",
                mine.rel_error
            )
        } else {
            format!(
                "{path} is the most faithful at its bit budget (rel error {:.4} vs {}; top-1 agreement {:.1}%)",
                mine.rel_error,
                against.join(", "),
                mine.top1_agreement * 100.0
            )
        };
    } else {
        v.status = Status::Contradicted;
        let beaten: Vec<String> = better
            .iter()
            .map(|r| format!("{} {:.4}", r.path, r.rel_error))
            .collect();
        v.reason = format!(
            "{path} is less faithful (rel error {:.4}) than {}",
            mine.rel_error,
            beaten.join(", ")
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(path: KernelPath, phase: Phase, ms: f64, mad: f64, kernel: &str) -> ResultRow {
        ResultRow::example(path, phase, ms, mad, kernel)
    }

    fn f(path: KernelPath, scheme: &str, rel: f64) -> FidelityRow {
        FidelityRow {
            path,
            scheme: scheme.into(),
            kernel: "k".into(),
            rel_error: rel,
            cosine: 1.0 - rel * rel / 2.0,
            top1_agreement: 0.9,
            top1_vocab: 4096,
            top1_states: 256,
            layer: "q_proj 2048x2048".into(),
        }
    }

    fn plan(name: &str, priority: &str) -> Result<PlanInput, String> {
        // The built-in catalog's bench paths (plan/catalog.toml).
        let bench_path = match name {
            "w4a8-amx" => Some(KernelPath::W4A8),
            "w4a16-tinygemm" => Some(KernelPath::W4A16),
            "bf16" | "fp16" => Some(KernelPath::Bf16),
            _ => None,
        };
        Ok(PlanInput {
            name: name.into(),
            bench_path,
            off_cpu: None,
            priority: Priority::ALL
                .into_iter()
                .find(|p| p.as_str() == priority)
                .unwrap(),
            source: "test".into(),
            x86_without_amx: false,
        })
    }

    fn decide_with(
        plan: Result<PlanInput, String>,
        results: &[ResultRow],
        fid: &[FidelityRow],
    ) -> Verdict {
        decide(VerdictInput {
            priority: Priority::Speed,
            plan,
            results,
            fidelity: fid,
            failed_paths: &[],
            comparisons: &[],
            notes: vec![],
        })
    }

    fn decide_paired(
        plan: Result<PlanInput, String>,
        results: &[ResultRow],
        comparisons: &[Comparison],
    ) -> Verdict {
        decide(VerdictInput {
            priority: Priority::Speed,
            plan,
            results,
            fidelity: &[],
            failed_paths: &[],
            comparisons,
            notes: vec![],
        })
    }

    /// A paired comparison of `planned` against `rival` from per-round ratios.
    fn c(phase: Phase, planned: KernelPath, rival: KernelPath, ratios: &[f64]) -> Comparison {
        let ratio = crate::bench::paired::median_interval(ratios).unwrap();
        Comparison {
            phase,
            planned,
            rival,
            judgement: crate::bench::paired::judge(&ratio),
            ratio,
        }
    }

    /// `n` ratios spread evenly over `[lo, hi]`.
    fn spread(lo: f64, hi: f64, n: usize) -> Vec<f64> {
        (0..n)
            .map(|i| lo + (hi - lo) * i as f64 / (n - 1) as f64)
            .collect()
    }

    use KernelPath::*;
    use Phase::*;

    #[test]
    fn status_spelling_matches_the_json() {
        for s in [
            Status::Confirmed,
            Status::Contradicted,
            Status::Inconclusive,
            Status::NotApplicable,
        ] {
            assert_eq!(serde_json::to_value(s).unwrap(), s.as_str());
        }
    }

    #[test]
    fn speed_plan_confirmed_when_fastest_in_decode() {
        let rows = [
            r(W4A8, Decode, 40.0, 0.5, "w4a8-amx"),
            r(W4A16, Decode, 48.0, 0.5, "w4a16-avx512"),
            r(Bf16, Decode, 160.0, 1.0, "bf16-avx512"),
        ];
        let cs = [
            c(Decode, W4A8, W4A16, &spread(0.80, 0.86, 10)),
            c(Decode, W4A8, Bf16, &spread(0.24, 0.26, 10)),
        ];
        let v = decide_paired(plan("w4a8-amx", "speed"), &rows, &cs);
        assert_eq!(v.status, Status::Confirmed, "{}", v.reason);
        assert!(v.confirmed);
        assert_eq!(v.confirmed_in, vec![Decode]);
        assert_eq!(v.fastest.decode, Some(W4A8));
        assert_eq!(v.decode_gap_pct, Some(0.0));
        assert!(v.reason.contains("10 paired rounds"), "{}", v.reason);
    }

    #[test]
    fn a_tie_needs_the_whole_interval_inside_the_band() {
        let rows = [
            r(W4A8, Decode, 51.0, 0.1, "a"),
            r(W4A16, Decode, 50.0, 0.1, "b"),
        ];
        // 2 % slower with a tight interval: tied, confirmed.
        let tight = [c(Decode, W4A8, W4A16, &spread(1.01, 1.03, 10))];
        let v = decide_paired(plan("w4a8-amx", "speed"), &rows, &tight);
        assert_eq!(v.status, Status::Confirmed, "{}", v.reason);
        // The same median with a wide interval: inconclusive, never a pass.
        let wide = [c(Decode, W4A8, W4A16, &spread(0.90, 1.14, 10))];
        let v = decide_paired(plan("w4a8-amx", "speed"), &rows, &wide);
        assert_eq!(v.status, Status::Inconclusive, "{}", v.reason);
        assert!(v.reason.contains("--rounds"), "{}", v.reason);
        assert!(v.noisy);
    }

    #[test]
    fn inconclusive_advice_follows_the_spread() {
        let rows = [
            r(W4A8, Decode, 51.0, 0.1, "a"),
            r(W4A16, Decode, 50.0, 0.1, "b"),
        ];
        // 1 % slower, interval [~0.98, ~1.04] over 20 rounds: more rounds will settle it,
        // and the advice names more than were run.
        let near = [c(Decode, W4A8, W4A16, &spread(0.95, 1.07, 20))];
        let v = decide_paired(plan("w4a8-amx", "speed"), &rows, &near);
        assert_eq!(v.status, Status::Inconclusive, "{}", v.reason);
        let n: usize = v
            .reason
            .split("--rounds ")
            .nth(1)
            .and_then(|t| t.split(|ch: char| !ch.is_ascii_digit()).next())
            .and_then(|d| d.parse().ok())
            .unwrap_or_else(|| panic!("no --rounds N in {}", v.reason));
        assert!(n > 20 && n <= 200, "{n}: {}", v.reason);
        assert!(v.reason.contains("over 20 rounds"), "{}", v.reason);
        // 75 rounds whose median sits on the band's edge: the advice says more rounds
        // will not separate them, and never asks for --rounds (issue 27).
        let edge = [c(Decode, W4A8, W4A16, &spread(0.98, 1.08, 75))];
        let v = decide_paired(plan("w4a8-amx", "speed"), &rows, &edge);
        assert_eq!(v.status, Status::Inconclusive, "{}", v.reason);
        assert!(
            v.reason.contains("more rounds will not settle"),
            "{}",
            v.reason
        );
        assert!(v.reason.contains("band's edge"), "{}", v.reason);
        assert!(!v.reason.contains("--rounds"), "{}", v.reason);
    }

    #[test]
    fn noise_never_turns_a_78_percent_gap_into_a_pass() {
        let rows = [
            r(W4A16, Decode, 111.0, 40.0, "a"),
            r(W4A8, Decode, 61.88, 20.0, "b"),
        ];
        // Very noisy rounds: the interval is wide but all of it above the band.
        let cs = [c(Decode, W4A16, W4A8, &spread(1.2, 2.6, 8))];
        let v = decide_paired(plan("w4a16-tinygemm", "speed"), &rows, &cs);
        assert_eq!(v.status, Status::Contradicted, "{}", v.reason);
        // Noisier still, reaching below the band: inconclusive, still no pass.
        let cs = [c(Decode, W4A16, W4A8, &spread(0.9, 2.6, 8))];
        let v = decide_paired(plan("w4a16-tinygemm", "speed"), &rows, &cs);
        assert_eq!(v.status, Status::Inconclusive, "{}", v.reason);
    }

    #[test]
    fn speed_plan_confirmed_by_prefill_alone_says_so() {
        let rows = [
            r(W4A8, Decode, 60.0, 0.1, "a"),
            r(W4A16, Decode, 50.0, 0.1, "b"),
            r(W4A8, Prefill, 300.0, 1.0, "a"),
            r(W4A16, Prefill, 450.0, 1.0, "b"),
        ];
        let cs = [
            c(Decode, W4A8, W4A16, &spread(1.18, 1.22, 9)),
            c(Prefill, W4A8, W4A16, &spread(0.64, 0.68, 9)),
        ];
        let v = decide_paired(plan("w4a8-amx", "speed"), &rows, &cs);
        assert_eq!(v.status, Status::Confirmed);
        assert_eq!(v.confirmed_in, vec![Prefill]);
        assert!(
            v.reason.contains("but w4a16 beats w4a8 in decode"),
            "{}",
            v.reason
        );
        assert!((v.decode_gap_pct.unwrap() - 20.0).abs() < 1e-9);
    }

    #[test]
    fn speed_plan_contradicted_when_beaten_in_every_phase() {
        let rows = [
            r(W4A8, Decode, 60.0, 0.1, "a"),
            r(W4A16, Decode, 50.0, 0.1, "b"),
            r(W4A8, Prefill, 500.0, 1.0, "a"),
            r(Bf16, Prefill, 400.0, 1.0, "c"),
        ];
        let cs = [
            c(Decode, W4A8, W4A16, &spread(1.15, 1.25, 8)),
            c(Prefill, W4A8, Bf16, &spread(1.2, 1.3, 8)),
        ];
        let v = decide_paired(plan("w4a8-amx", "speed"), &rows, &cs);
        assert_eq!(v.status, Status::Contradicted);
        assert!(!v.confirmed);
        assert!(
            v.reason.contains("w4a16 beats w4a8 in decode"),
            "{}",
            v.reason
        );
        assert!(
            v.reason.contains("bf16 beats w4a8 in prefill"),
            "{}",
            v.reason
        );
        assert_eq!(v.fastest.prefill, Some(Bf16));
        // One phase lost and the other undecided: inconclusive, not contradicted.
        let cs = [
            c(Decode, W4A8, W4A16, &spread(1.15, 1.25, 8)),
            c(Prefill, W4A8, Bf16, &spread(0.95, 1.3, 8)),
        ];
        let v = decide_paired(plan("w4a8-amx", "speed"), &rows, &cs);
        assert_eq!(v.status, Status::Inconclusive, "{}", v.reason);
    }

    #[test]
    fn w4a8_win_without_amx_names_the_vllm_gate() {
        let rows = [
            r(W4A8, Decode, 40.0, 0.1, "w4a8-avx2"),
            r(W4A16, Decode, 50.0, 0.1, "w4a16-avx2"),
        ];
        let cs = [c(Decode, W4A16, W4A8, &spread(1.2, 1.3, 8))];
        let mut p = plan("w4a16-tinygemm", "speed").unwrap();
        p.x86_without_amx = true;
        let v = decide_paired(Ok(p.clone()), &rows, &cs);
        assert_eq!(v.status, Status::Contradicted);
        assert!(
            v.reason.starts_with("w4a8 beats w4a16 in decode"),
            "{}",
            v.reason
        );
        assert!(v.reason.contains("vLLM gates W4A8 on AMX"), "{}", v.reason);
        assert!(v.reason.contains("w4a8-avx2 kernel"), "{}", v.reason);
        let v = decide_paired(plan("w4a16-tinygemm", "speed"), &rows, &cs);
        assert!(!v.reason.contains("AMX"), "{}", v.reason);
        // Beaten by bf16, not w4a8: nothing to add.
        let rows = [
            r(Bf16, Decode, 40.0, 0.1, "bf16-avx2"),
            r(W4A16, Decode, 50.0, 0.1, "w4a16-avx2"),
        ];
        let cs = [c(Decode, W4A16, Bf16, &spread(1.2, 1.3, 8))];
        let v = decide_paired(Ok(p), &rows, &cs);
        assert!(!v.reason.contains("AMX"), "{}", v.reason);
    }

    #[test]
    fn qnn_export_has_no_bench_path() {
        let rows = [r(W4A8, Decode, 60.0, 0.1, "a")];
        let v = decide_with(plan("export-qnn-w8a16", "speed"), &rows, &[]);
        assert_eq!(v.status, Status::NotApplicable);
        assert!(!v.confirmed);
        assert!(v.reason.contains("no bench path"), "{}", v.reason);
    }

    #[test]
    fn gpu_plans_are_not_applicable_even_when_a_cpu_path_loses() {
        let rows = [
            r(Bf16, Decode, 160.0, 1.0, "c"),
            r(W4A8, Decode, 40.0, 0.1, "a"),
        ];
        let mut p = plan("bf16", "speed").unwrap();
        p.off_cpu = Some("runs on the CUDA GPU".into());
        p.bench_path = None;
        let v = decide_with(Ok(p), &rows, &[]);
        assert_eq!(v.status, Status::NotApplicable);
        assert!(v.reason.contains("for information"), "{}", v.reason);
        assert!(v.reason.contains("CUDA GPU"), "{}", v.reason);
    }

    #[test]
    fn no_plan_is_inconclusive_with_the_reason() {
        let v = decide_with(Err("probe failed".into()), &[], &[]);
        assert_eq!(v.status, Status::Inconclusive);
        assert!(v.reason.contains("probe failed"));
        assert_eq!(v.planned, None);
    }

    #[test]
    fn failed_kernels_contradict_unmeasured_is_inconclusive() {
        let rows = [r(W4A16, Decode, 50.0, 0.1, "b")];
        let v = decide(VerdictInput {
            priority: Priority::Speed,
            plan: plan("w4a8-amx", "speed"),
            results: &rows,
            fidelity: &[],
            failed_paths: &[W4A8],
            comparisons: &[],
            notes: vec![],
        });
        assert_eq!(v.status, Status::Contradicted);
        let v = decide_with(plan("w4a8-amx", "speed"), &rows, &[]);
        assert_eq!(v.status, Status::Inconclusive);
    }

    #[test]
    fn amx_plan_measured_without_amx_gets_a_note() {
        let rows = [r(W4A8, Decode, 50.0, 0.1, "w4a8-avx2")];
        let v = decide_with(plan("w4a8-amx", "speed"), &rows, &[]);
        assert_eq!(v.status, Status::Confirmed);
        assert!(
            v.notes.iter().any(|n| n.contains("without AMX")),
            "{:?}",
            v.notes
        );
    }

    #[test]
    fn amx_prefill_with_a_gemv_decode_gets_no_fallback_note() {
        let rows = [
            r(W4A8, Decode, 50.0, 0.1, "w4a8-avx512vnni"),
            r(W4A8, Prefill, 300.0, 1.0, "w4a8-amx"),
        ];
        let v = decide_with(plan("w4a8-amx", "speed"), &rows, &[]);
        assert!(
            !v.notes.iter().any(|n| n.contains("without AMX")),
            "{:?}",
            v.notes
        );
    }

    #[test]
    fn fidelity_plan_compares_within_its_bit_budget() {
        let fid = [
            f(W4A8, "symmetric", 0.120),
            f(W4A8, "asymmetric", 0.100),
            f(W4A16, "symmetric", 0.090),
            f(W4A16, "asymmetric", 0.080),
            f(Bf16, "bf16", 0.004),
        ];
        let rows = [r(W4A16, Decode, 50.0, 0.1, "b")];
        // bf16 stores more bits: it does not count against a 4-bit plan.
        let v = decide_with(plan("w4a16-tinygemm", "fidelity"), &rows, &fid);
        assert_eq!(v.status, Status::Confirmed, "{}", v.reason);
        let v = decide_with(
            plan("w4a8-amx", "fidelity"),
            &[r(W4A8, Decode, 1.0, 0.0, "a")],
            &fid,
        );
        assert_eq!(v.status, Status::Contradicted);
        assert!(v.reason.contains("w4a16 0.0900"), "{}", v.reason);
        let v = decide_with(
            plan("bf16", "fidelity"),
            &[r(Bf16, Decode, 1.0, 0.0, "c")],
            &fid,
        );
        assert_eq!(v.status, Status::Confirmed);
    }

    #[test]
    fn fidelity_tolerance_is_five_percent() {
        let fid = [f(W4A8, "symmetric", 0.104), f(W4A16, "symmetric", 0.100)];
        let v = decide_with(
            plan("w4a8-amx", "fidelity"),
            &[r(W4A8, Decode, 1.0, 0.0, "a")],
            &fid,
        );
        assert_eq!(v.status, Status::Confirmed, "{}", v.reason);
    }
}
