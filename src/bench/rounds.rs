//! Stage *rounds*: the paired, interleaved measurement the verdict rests on.
//!
//! After the race has picked each path's fastest kernel, every round runs one step of
//! each (path, phase) row, one pass of the bandwidth probe and one of each prefill unit's
//! peak loop, in an order shuffled per round, so drift and bursts on a shared host land on
//! all of them alike. The per-round
//! ratio planned/rival is the statistic ([`super::paired`]); rounds stop once every
//! comparison is decided (or its interval is already narrower than the tie band), when
//! the time budget is spent, or at the round limit.

use super::backend::{Backend, KernelInfo, KernelPath, Parallel, Phase};
use super::bandwidth::Probe;
use super::clock::{Clock, RoundsPolicy as Policy, Sampling};
use super::measure::{Rotation, Timer};
use super::paired::{self, Interval, median_interval, ratios};
use super::peaks::RoundPeak;
use super::rng::Rng;
use super::rows::{Comparison, ResultRow, Stop};
use super::stats::Summary;
use super::workload::{DecodePlan, Workload};

/// Seed of the per-round shuffle: fixed, so a run's order reproduces.
const SHUFFLE_SEED: u64 = 0x5eed_0f0d;

/// One row to time each round.
pub struct Entrant<'a, W> {
    pub path: KernelPath,
    pub phase: Phase,
    pub kernel: &'a KernelInfo,
    pub rotation: &'a Rotation<W>,
    pub decode: DecodePlan,
    pub prefill_layers: usize,
    pub tokens: usize,
}

/// The rooflines re-measured in every round: the bandwidth probe and the peak loops of
/// the units the prefill rows run on.
pub struct Probes<'a> {
    pub bandwidth: &'a Probe,
    pub peaks: &'a [RoundPeak],
}

/// What the rounds measured: per entrant, its step seconds by round; the probe's GB/s by
/// round; per round peak (as [`Probes::peaks`]), its TMAC/s by round.
pub struct Rounds {
    pub seconds: Vec<Vec<f64>>,
    pub gbps: Vec<f64>,
    pub peak_tmacs: Vec<Vec<f64>>,
    pub spent_s: f64,
    pub stopped: Stop,
}

/// Runs rounds until `policy` says stop. `planned` is the bench path under test (none:
/// no comparison to decide, so `min_rounds` are run for information).
pub fn run<B: Backend>(
    backend: &B,
    clock: &dyn Clock,
    workload: &Workload,
    entrants: &[Entrant<B::Weights>],
    probes: Probes,
    planned: Option<KernelPath>,
    policy: Policy,
) -> anyhow::Result<Rounds> {
    let timer = Timer {
        backend,
        clock,
        workload,
        sampling: Sampling::ONCE,
    };
    let pool: &dyn Parallel = backend;
    let mut seconds = vec![Vec::new(); entrants.len()];
    let mut gbps = Vec::new();
    let mut peak_tmacs = vec![Vec::new(); probes.peaks.len()];
    let mut rng = Rng::new(SHUFFLE_SEED);
    // Entrants first, then the bandwidth probe, then the peak loops.
    let mut order: Vec<usize> = (0..=entrants.len() + probes.peaks.len()).collect();
    let start = clock.now();
    loop {
        shuffle(&mut order, &mut rng);
        for &i in &order {
            let Some(e) = entrants.get(i) else {
                match (i - entrants.len()).checked_sub(1) {
                    None => gbps.push(probes.bandwidth.once(pool, clock)),
                    Some(p) => peak_tmacs[p].push(probes.peaks[p].once(pool, clock)),
                }
                continue;
            };
            let s = match e.phase {
                Phase::Decode => timer.decode(e.kernel, e.rotation, e.decode)?,
                Phase::Prefill => {
                    timer.prefill(e.kernel, e.rotation, e.prefill_layers, e.tokens)?
                }
            };
            seconds[i].extend(s.first());
        }
        let done = gbps.len();
        let spent = clock.now() - start;
        let stop = if done >= policy.max_rounds {
            Some(Stop::Rounds)
        } else if done < policy.min_rounds {
            None
        } else if !compare(entrants, &seconds, planned)
            .iter()
            .any(|c| paired::wants_more(&c.ratio))
        {
            Some(Stop::Decided)
        } else if spent >= policy.budget_s {
            Some(Stop::Budget)
        } else {
            None
        };
        if let Some(stopped) = stop {
            return Ok(Rounds {
                seconds,
                gbps,
                peak_tmacs,
                spent_s: spent,
                stopped,
            });
        }
    }
}

/// Fisher-Yates with the bench's seeded generator.
fn shuffle(order: &mut [usize], rng: &mut Rng) {
    for i in (1..order.len()).rev() {
        let j = (rng.next_u64() % (i as u64 + 1)) as usize;
        order.swap(i, j);
    }
}

/// The planned path against every other path measured in the same phase.
pub fn compare<W>(
    entrants: &[Entrant<W>],
    seconds: &[Vec<f64>],
    planned: Option<KernelPath>,
) -> Vec<Comparison> {
    let Some(planned) = planned else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for (pi, p) in entrants.iter().enumerate() {
        if p.path != planned {
            continue;
        }
        for (ri, r) in entrants.iter().enumerate() {
            if r.phase != p.phase || r.path == planned {
                continue;
            }
            if let Some(ratio) = median_interval(&ratios(&seconds[pi], &seconds[ri])) {
                out.push(Comparison {
                    phase: p.phase,
                    planned,
                    rival: r.path,
                    judgement: paired::judge(&ratio),
                    ratio,
                });
            }
        }
    }
    out
}

/// Replaces a row's step statistics with its round series, rescaling the figures
/// derived from the step time; decode rows also get the per-round bandwidth share
/// (each step against the probe pass of its own round), prefill rows the per-round peak
/// share when `peak_tmacs` (their unit's peak loop by round) is given.
pub fn refresh(row: &mut ResultRow, seconds: &[f64], gbps: &[f64], peak_tmacs: Option<&[f64]>) {
    let Some(s) = Summary::of(seconds) else {
        return;
    };
    let ms = s.scaled(1e3);
    let factor = row.step_ms / ms.median.max(1e-12);
    row.step_ms = ms.median;
    row.step_ms_min = ms.min;
    row.step_ms_max = ms.max;
    row.step_ms_mad = ms.mad;
    row.repeats = s.n;
    row.rounds = s.n;
    row.tokens_per_s *= factor;
    row.weight_gbps *= factor;
    row.tmacs *= factor;
    row.peak_pct = row.peak_pct.map(|p| p * factor);
    if row.phase == Phase::Decode
        && let Some(ci) = paired_share(seconds, gbps, row.weight_bytes as f64 / 1e9)
    {
        row.bandwidth_pct = Some(ci.median);
        row.bandwidth_pct_paired = Some(ci);
    }
    if let (Phase::Prefill, Some(peaks)) = (row.phase, peak_tmacs)
        && let Some(ci) = paired_share(seconds, peaks, row.macs as f64 / 1e12)
    {
        row.peak_pct = Some(ci.median);
        row.peak_pct_paired = Some(ci);
    }
}

/// Per round, `work` per step second (GB or TMAC) as a percentage of that round's roof
/// (GB/s or TMAC/s): the median and its interval, over the rounds where both were timed.
fn paired_share(seconds: &[f64], roofs: &[f64], work: f64) -> Option<Interval> {
    let shares: Vec<f64> = seconds
        .iter()
        .zip(roofs)
        .filter(|(t, roof)| **t > 0.0 && **roof > 0.0)
        .map(|(t, roof)| work / t / roof * 100.0)
        .collect();
    median_interval(&shares)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::backend::{KernelInfo, Unit};
    use crate::bench::clock::FakeClock;
    use crate::bench::fake::FakeBackend;
    use crate::bench::paired::Judgement;
    use crate::bench::workload::Gemm;
    use std::sync::Arc;

    fn tiny() -> Workload {
        let g = |name: &str, n, k| Gemm {
            name: name.into(),
            n,
            k,
        };
        Workload {
            model: "tiny".into(),
            layers: 2,
            hidden_size: 128,
            intermediate_size: 256,
            vocab_size: 256,
            per_layer: vec![g("q_proj", 128, 128)],
            lm_head: g("lm_head", 256, 128),
        }
    }

    /// A row of `kernel` over `rot` with a fixed decode plan.
    fn entrant<'a, W>(
        kernel: &'a KernelInfo,
        rot: &'a Rotation<W>,
        path: KernelPath,
        phase: Phase,
    ) -> Entrant<'a, W> {
        Entrant {
            path,
            phase,
            kernel,
            rotation: rot,
            decode: DecodePlan {
                instances: 1,
                scale: 2.0,
                working_set_bytes: 0,
            },
            prefill_layers: 1,
            tokens: if phase == Phase::Decode { 1 } else { 8 },
        }
    }

    fn exactly(rounds: usize) -> Policy {
        Policy {
            min_rounds: rounds,
            max_rounds: rounds,
            budget_s: f64::INFINITY,
        }
    }

    #[test]
    fn rounds_stop_when_decided_or_at_the_limit_and_pair_every_row() {
        let clock = Arc::new(FakeClock::new(0.0));
        let b = FakeBackend::new(1, clock.clone()).slowing(Some(KernelPath::W4A16));
        let w = tiny();
        let kernels = b.kernels();
        let k = |name: &str| kernels.iter().find(|k| k.name == name).unwrap();
        let rot = Rotation::build(&b, KernelPath::W4A8, &w, 1, 1).unwrap();
        let es = [
            entrant(k("w4a8-fake"), &rot, KernelPath::W4A8, Phase::Decode),
            entrant(k("w4a16-fake"), &rot, KernelPath::W4A16, Phase::Decode),
        ];
        let probe = Probe::new(1 << 16);
        let probes = || Probes {
            bandwidth: &probe,
            peaks: &[],
        };
        let policy = Policy {
            min_rounds: 6,
            max_rounds: 50,
            budget_s: f64::INFINITY,
        };
        // The fake clock makes every round alike: decided at the minimum.
        let planned = Some(KernelPath::W4A16);
        let r = run(&b, clock.as_ref(), &w, &es, probes(), planned, policy).unwrap();
        assert_eq!((r.gbps.len(), r.stopped), (6, Stop::Decided));
        assert!(r.seconds.iter().all(|s| s.len() == 6));
        let cs = compare(&es, &r.seconds, planned);
        assert_eq!(cs.len(), 1);
        assert_eq!(
            (cs[0].rival, cs[0].judgement),
            (KernelPath::W4A8, Judgement::Beaten)
        );
        // A fixed count runs exactly that many.
        let r = run(&b, clock.as_ref(), &w, &es, probes(), planned, exactly(9)).unwrap();
        assert_eq!((r.gbps.len(), r.stopped), (9, Stop::Rounds));
    }

    #[test]
    fn every_round_remeasures_each_peak_loop_and_prefill_rows_take_its_share() {
        let clock = Arc::new(FakeClock::new(0.0));
        let b = FakeBackend::new(1, clock.clone());
        let w = tiny();
        let kernels = b.kernels();
        let kernel = kernels.iter().find(|k| k.name == "w4a8-fake").unwrap();
        let rot = Rotation::build(&b, KernelPath::W4A8, &w, 1, 1).unwrap();
        let es = [entrant(kernel, &rot, KernelPath::W4A8, Phase::Prefill)];
        // A no-op loop, calibrated against a clock that steps 1 ms per reading.
        let step = FakeClock::new(1e-3);
        let lp = crate::bench::peaks::Loop {
            macs: 1000,
            run: |_| {},
        };
        let peak = RoundPeak::with_loop(Unit::Avx2Int8, lp, &b, &step);
        let probe = Probe::new(1 << 16);
        let probes = Probes {
            bandwidth: &probe,
            peaks: std::slice::from_ref(&peak),
        };
        let r = run(&b, clock.as_ref(), &w, &es, probes, None, exactly(7)).unwrap();
        assert_eq!(r.peak_tmacs.len(), 1);
        assert_eq!(r.peak_tmacs[0].len(), 7, "one pass per round");
        // Against the fake clock's zero-length runs the rate is vast but finite.
        assert!(r.peak_tmacs[0].iter().all(|t| t.is_finite() && *t > 0.0));
        // The share: MACs per second of each step over the same round's peak.
        let mut row = ResultRow::example(KernelPath::W4A8, Phase::Prefill, 500.0, 10.0, "k");
        row.macs = 2_000_000_000_000;
        row.peak_pct = Some(1.0);
        let seconds = [1.0, 2.0, 1.0, 1.0, 1.0, 1.0, 4.0];
        let peaks = [4.0, 2.0, 8.0, 4.0, 4.0, 4.0, 1.0];
        refresh(&mut row, &seconds, &[], Some(&peaks));
        // Shares 50, 50, 25, 50, 50, 50, 50: the slow rounds were slow for both.
        let paired = row.peak_pct_paired.expect("paired share");
        assert_eq!((paired.median, paired.n), (50.0, 7));
        assert_eq!(row.peak_pct, Some(50.0));
        // Decode rows keep the start-of-run share; no series leaves prefill rows alone.
        let mut decode = ResultRow::example(KernelPath::W4A8, Phase::Decode, 5.0, 0.1, "k");
        decode.peak_pct = Some(10.0);
        refresh(&mut decode, &[5e-3; 7], &[], Some(&peaks));
        assert_eq!(
            (decode.peak_pct, decode.peak_pct_paired),
            (Some(10.0), None)
        );
        let mut alone = ResultRow::example(KernelPath::W4A8, Phase::Prefill, 500.0, 10.0, "k");
        alone.peak_pct = Some(30.0);
        refresh(&mut alone, &[0.5; 7], &[], None);
        assert_eq!((alone.peak_pct, alone.peak_pct_paired), (Some(30.0), None));
    }

    #[test]
    fn shuffle_is_a_permutation_and_varies() {
        let mut rng = Rng::new(1);
        let mut seen = std::collections::BTreeSet::new();
        for _ in 0..20 {
            let mut o: Vec<usize> = (0..4).collect();
            shuffle(&mut o, &mut rng);
            let mut sorted = o.clone();
            sorted.sort_unstable();
            assert_eq!(sorted, vec![0, 1, 2, 3]);
            seen.insert(o);
        }
        assert!(seen.len() > 5, "orders should differ between rounds");
    }
}
