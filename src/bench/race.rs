//! Stages *race* and *fidelity*: for each chosen path, pack its rotation of weights,
//! time every verified kernel in decode and in prefill (the fastest is the row, the
//! others its alternatives), then measure fidelity with the kernel that served.

use super::backend::{Backend, KernelInfo, KernelPath, Phase, Scheme, Unit};
use super::clock::{Clock, Sampling, Seconds};
use super::fidelity::{FidelitySize, Reference};
use super::measure::{Roofs, Rotation, RowSpec, Timer, row};
use super::request::{Effort, Policies};
use super::rows::{Alternative, Bandwidth, FidelityRow, KernelCheck, Peak, ResultRow};
use super::workload::Workload;
use crate::output;

/// Where a long run reports its stages (a progress bar, or nothing).
pub trait Progress {
    /// The run will have `stages` stages.
    fn start(&self, stages: u64);
    /// Starts the next stage, named `what`.
    fn stage(&self, what: &str);
    /// Skips `n` stages that will not run.
    fn skip(&self, n: u64);
    /// The timed stages are over.
    fn finish(&self);
}

/// What every path's race shares.
pub struct Race<'a, B: Backend> {
    pub backend: &'a B,
    pub clock: &'a dyn Clock,
    pub progress: &'a dyn Progress,
    pub workload: &'a Workload,
    pub kernels: &'a [KernelInfo],
    pub checks: &'a [KernelCheck],
    /// `--kernel`: the one variant to run on its path.
    pub forced: Option<&'a KernelInfo>,
    pub l3: u64,
    pub effort: Effort,
    /// Tokens per prefill step.
    pub tokens: usize,
    pub fidelity: FidelitySize,
    pub policies: Policies,
}

/// The race's rows, and the rotations it packed (kept for the paired rounds: one per
/// weight layout).
pub struct Raced<W> {
    pub results: Vec<ResultRow>,
    pub fidelity: Vec<FidelityRow>,
    pub rotations: Vec<Rotation<W>>,
}

/// Races every path in `paths`, adding a note for each path or phase not timed.
pub fn run<B: Backend>(
    race: &Race<B>,
    paths: &[KernelPath],
    bw: &Bandwidth,
    peaks: &[Peak],
    notes: &mut Vec<String>,
) -> anyhow::Result<Raced<B::Weights>> {
    let peak_of = |u: Unit| peaks.iter().find(|p| p.unit == u).and_then(|p| p.tmacs);
    let roofs = Roofs {
        bandwidth_gbps: Some(bw.gbps),
        peak_tmacs: &peak_of,
    };
    let mut out = Raced {
        results: Vec::new(),
        fidelity: Vec::new(),
        rotations: Vec::new(),
    };
    let mut reference: Option<Reference> = None;
    for &path in paths {
        let forced_here = race
            .forced
            .filter(|k| k.path == path)
            .map(|k| k.name.as_str());
        let dec = candidates(race.kernels, race.checks, path, Phase::Decode, forced_here);
        let pre = candidates(race.kernels, race.checks, path, Phase::Prefill, forced_here);
        if dec.is_empty() && pre.is_empty() {
            notes.push(format!(
                "{path}: no kernel passed its check on this host; not timed"
            ));
            race.progress.skip(3);
            continue;
        }
        let shared = out
            .rotations
            .iter()
            .position(|r| r.path.shares_layout(path))
            .map(|i| out.rotations.swap_remove(i));
        let (rows, rot) = race_path(race, path, &dec, &pre, shared, &roofs, notes)?;
        out.rotations.push(rot);
        // Fidelity with the kernel that served prefill (else decode).
        let served = rows.iter().rev().map(|r| r.kernel.as_str()).next();
        if let Some(fk) = served.and_then(|n| race.kernels.iter().find(|k| k.name == n)) {
            let reference = reference.get_or_insert_with(|| {
                let w = race.workload;
                Reference::new(
                    race.backend,
                    &w.per_layer[0],
                    w.hidden_size,
                    race.fidelity,
                    42,
                )
            });
            let schemes: &[Scheme] = match path {
                KernelPath::Bf16 => &[Scheme::Symmetric],
                _ => &[Scheme::Symmetric, Scheme::Asymmetric],
            };
            for &scheme in schemes {
                out.fidelity
                    .push(reference.measure(race.backend, path, fk, scheme)?);
            }
        }
        out.results.extend(rows);
    }
    Ok(out)
}

/// One path: its rotation (reusing `cached` when the layout matches), then the decode
/// and prefill races. Returns the rows (decode first) and the rotation for the next path.
fn race_path<B: Backend>(
    race: &Race<B>,
    path: KernelPath,
    dec: &[&KernelInfo],
    pre: &[&KernelInfo],
    cached: Option<Rotation<B::Weights>>,
    roofs: &Roofs,
    notes: &mut Vec<String>,
) -> anyhow::Result<(Vec<ResultRow>, Rotation<B::Weights>)> {
    let (w, backend) = (race.workload, race.backend);
    let plan_d = w.decode_plan(path, race.l3, race.effort);
    let pre_layers = w.prefill_layers(race.effort);
    let instances = plan_d.instances.max(pre_layers);
    race.progress.stage(&format!(
        "{path}: packing {} of weights",
        output::bytes(plan_d.working_set_bytes)
    ));
    // W4A8 and W4A16 share a layout: keep the rotation rather than pack it twice.
    let rot = match cached {
        Some(r) if r.serves(path, instances) => r,
        other => {
            drop(other);
            Rotation::build(backend, path, w, instances, 1)?
        }
    };
    let timer = Timer {
        backend,
        clock: race.clock,
        workload: w,
        sampling: race.policies.decode,
    };
    let mut rows = Vec::new();
    race.progress.stage(&format!("{path}: decode"));
    rows.extend(race_decode(race, &timer, path, dec, &rot, roofs)?);
    race.progress.stage(&format!("{path}: prefill"));
    let timer = Timer {
        sampling: race.policies.prefill,
        ..timer
    };
    let only_scalar = pre.iter().all(|k| k.unit == Unit::Scalar);
    if pre.is_empty() {
        notes.push(format!(
            "{path}: no verified kernel serves prefill; not timed"
        ));
    } else if only_scalar && race.forced.is_none() {
        notes.push(format!(
            "{path}: only the scalar reference serves prefill here; not timed (minutes per step)"
        ));
    } else {
        rows.extend(race_prefill(race, &timer, path, pre, &rot, roofs)?);
    }
    Ok((rows, rot))
}

/// One kernel's samples under a timer (decode or prefill steps).
type SampleFn<'a, B> = dyn Fn(&Timer<B>, &KernelInfo) -> anyhow::Result<Vec<Seconds>> + 'a;

/// Samples of every kernel in `kernels` under `timer`'s policy, taken in alternation: the
/// warm-up runs of each, then rounds that time each kernel once (each round starting one
/// kernel later), until every kernel has `min_repeats` samples and either `max_repeats` or
/// the policy's budget times the number of kernels is spent. A burst of noise on a shared
/// host then lands on all the candidates alike instead of on the one being timed (timed
/// one after the other, a 25 % slower bf16 GEMV once won a `--quick` race on a Zen 1).
fn alternated<B: Backend>(
    timer: &Timer<B>,
    kernels: &[&KernelInfo],
    sample: &SampleFn<B>,
) -> anyhow::Result<Vec<Vec<Seconds>>> {
    let policy = timer.sampling;
    let once = Timer {
        backend: timer.backend,
        clock: timer.clock,
        workload: timer.workload,
        sampling: Sampling::ONCE,
    };
    for k in kernels {
        for _ in 0..policy.warmup {
            sample(&once, k)?;
        }
    }
    let n = kernels.len();
    let mut samples = vec![Vec::new(); n];
    let start = timer.clock.now();
    for round in 0.. {
        for i in 0..n {
            let j = (round + i) % n;
            samples[j].extend(sample(&once, kernels[j])?);
        }
        let repeats = round + 1;
        let spent = timer.clock.now() - start;
        if repeats >= policy.max_repeats.max(1)
            || (repeats >= policy.min_repeats.max(1) && spent >= policy.budget * n as f64)
        {
            break;
        }
    }
    Ok(samples)
}

/// Decode: each candidate timed over the rotation, the fastest kept.
fn race_decode<B: Backend>(
    race: &Race<B>,
    timer: &Timer<B>,
    path: KernelPath,
    dec: &[&KernelInfo],
    rot: &Rotation<B::Weights>,
    roofs: &Roofs,
) -> anyhow::Result<Option<ResultRow>> {
    let w = race.workload;
    let plan_d = w.decode_plan(path, race.l3, race.effort);
    let layer_bytes = rot.layer_bytes(race.backend, 0);
    let head_bytes = race.backend.weight_bytes(&rot.head) as u64;
    let mut raced = Vec::new();
    let samples = alternated(timer, dec, &|t, k| t.decode(k, rot, plan_d))?;
    for (k, samples) in dec.iter().zip(samples) {
        let spec = RowSpec {
            path,
            phase: Phase::Decode,
            tokens: 1,
            kernel: k,
            weight_bytes: layer_bytes * w.layers as u64 + head_bytes,
            macs: w.step_params(),
            layers_measured: plan_d.instances.min(w.layers),
            working_set_bytes: layer_bytes * plan_d.instances as u64 + head_bytes,
        };
        raced.push(row(spec, &samples, roofs)?);
    }
    Ok(fastest_of(raced))
}

/// Prefill: each candidate timed over the prefill layers, the fastest kept.
fn race_prefill<B: Backend>(
    race: &Race<B>,
    timer: &Timer<B>,
    path: KernelPath,
    pre: &[&KernelInfo],
    rot: &Rotation<B::Weights>,
    roofs: &Roofs,
) -> anyhow::Result<Option<ResultRow>> {
    let w = race.workload;
    let pre_layers = w.prefill_layers(race.effort);
    let layer_bytes = rot.layer_bytes(race.backend, 0);
    let mut raced = Vec::new();
    let samples = alternated(timer, pre, &|t, k| {
        t.prefill(k, rot, pre_layers, race.tokens)
    })?;
    for (k, samples) in pre.iter().zip(samples) {
        let spec = RowSpec {
            path,
            phase: Phase::Prefill,
            tokens: race.tokens,
            kernel: k,
            weight_bytes: layer_bytes * w.layers as u64,
            macs: w.layer_params() * w.layers as u64 * race.tokens as u64,
            layers_measured: pre_layers,
            working_set_bytes: layer_bytes * pre_layers as u64,
        };
        raced.push(row(spec, &samples, roofs)?);
    }
    Ok(fastest_of(raced))
}

/// The verified kernels of `path` that serve `phase`, in rank order (higher first, as in
/// the kernels' registry). The
/// scalar reference is a contender only when nothing else serves the phase.
pub fn candidates<'k>(
    kernels: &'k [KernelInfo],
    checks: &[KernelCheck],
    path: KernelPath,
    phase: Phase,
    forced: Option<&str>,
) -> Vec<&'k KernelInfo> {
    let passed = |k: &KernelInfo| {
        checks
            .iter()
            .any(|c| c.name == k.name && c.status == "passed")
    };
    let mut found: Vec<&KernelInfo> = kernels
        .iter()
        .filter(|k| k.path == path && k.serves(phase) && passed(k))
        .filter(|k| forced.is_none_or(|f| k.name == f))
        .collect();
    found.sort_by_key(|k| std::cmp::Reverse(k.rank));
    if found.iter().any(|k| k.unit != Unit::Scalar) {
        found.retain(|k| k.unit != Unit::Scalar);
    }
    found
}

/// Within this share of the fastest race time, the registry's first choice (the
/// highest-ranked candidate, raced first) keeps its place: the race has few repeats, and
/// two kernels that close swap places from run to run on a shared host (measured: the
/// two W4A8 prefill kernels at 512 and 514 ms in one run, 5 % apart in another).
pub const RACE_TIE: f64 = 0.02;

/// Which of the raced step times wins: the fastest, unless the first (highest-ranked) is
/// within [`RACE_TIE`] of it.
fn pick(step_ms: &[f64]) -> Option<usize> {
    let fastest = (0..step_ms.len()).min_by(|&a, &b| step_ms[a].total_cmp(&step_ms[b]))?;
    Some(if step_ms[0] <= step_ms[fastest] * (1.0 + RACE_TIE) {
        0
    } else {
        fastest
    })
}

/// The winner of the rows raced for one path and phase (see [`pick`]), with the others,
/// fastest first, as its alternatives.
fn fastest_of(mut raced: Vec<ResultRow>) -> Option<ResultRow> {
    let times: Vec<f64> = raced.iter().map(|r| r.step_ms).collect();
    let mut best = raced.remove(pick(&times)?);
    raced.sort_by(|a, b| a.step_ms.total_cmp(&b.step_ms));
    best.alternatives = raced
        .into_iter()
        .map(|r| Alternative {
            kernel: r.kernel,
            step_ms: r.step_ms,
        })
        .collect();
    Some(best)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn k(name: &str, path: KernelPath, unit: Unit, rank: u32) -> KernelInfo {
        KernelInfo {
            name: name.into(),
            path,
            phases: vec![Phase::Decode],
            unit,
            unavailable: None,
            rank,
        }
    }

    fn passed(name: &str, path: KernelPath) -> KernelCheck {
        KernelCheck {
            name: name.into(),
            path,
            phases: vec![],
            unit: Unit::Scalar,
            status: "passed".into(),
            detail: None,
        }
    }

    #[test]
    fn candidates_are_timed_in_alternation_under_the_policy() {
        use crate::bench::clock::FakeClock;
        use crate::bench::fake::FakeBackend;
        use crate::bench::workload::{Gemm, Workload};
        use std::cell::RefCell;
        use std::sync::Arc;
        let clock = Arc::new(FakeClock::new(1.0));
        let backend = FakeBackend::new(1, clock.clone());
        let g = Gemm {
            name: "q_proj".into(),
            n: 64,
            k: 128,
        };
        let workload = Workload {
            model: "tiny".into(),
            layers: 1,
            hidden_size: 128,
            intermediate_size: 128,
            vocab_size: 64,
            per_layer: vec![g.clone()],
            lm_head: g,
        };
        let names = ["a", "b", "c"];
        let infos: Vec<KernelInfo> = names
            .iter()
            .map(|n| k(n, KernelPath::W4A8, Unit::Avx2Int8, 1))
            .collect();
        let kernels: Vec<&KernelInfo> = infos.iter().collect();
        let calls = RefCell::new(Vec::new());
        let sample = |t: &Timer<FakeBackend>, k: &KernelInfo| {
            assert_eq!(t.sampling.max_repeats, 1, "one sample per call");
            calls.borrow_mut().push(k.name.clone());
            Ok(vec![calls.borrow().len() as f64])
        };
        let timer = |warmup, min_repeats, max_repeats, budget| Timer {
            backend: &backend,
            clock: clock.as_ref(),
            workload: &workload,
            sampling: Sampling {
                warmup,
                min_repeats,
                max_repeats,
                budget,
            },
        };
        // Budget spent at once: the minimum, each round starting one kernel later.
        let got = alternated(&timer(1, 2, 5, 0.0), &kernels, &sample).unwrap();
        let order: Vec<String> = calls.borrow().clone();
        assert_eq!(order, ["a", "b", "c", "a", "b", "c", "b", "c", "a"]);
        assert_eq!(got, [vec![4.0, 9.0], vec![5.0, 7.0], vec![6.0, 8.0]]);
        // A budget never spent: the maximum.
        calls.borrow_mut().clear();
        let got = alternated(&timer(0, 2, 5, f64::INFINITY), &kernels, &sample).unwrap();
        assert!(got.iter().all(|s| s.len() == 5), "{got:?}");
        assert_eq!(calls.borrow().len(), 15);
    }

    #[test]
    fn the_first_choice_keeps_its_place_only_within_the_tie() {
        assert_eq!(pick(&[]), None);
        assert_eq!(pick(&[5.0]), Some(0));
        // The highest-ranked (first) is fastest, or within 2 %: it stays.
        assert_eq!(pick(&[10.0, 11.0, 12.0]), Some(0));
        assert_eq!(pick(&[514.0, 512.0]), Some(0));
        assert_eq!(pick(&[10.2, 10.0]), Some(0));
        // Past the tie, the fastest wins wherever it was raced.
        assert_eq!(pick(&[10.3, 10.0]), Some(1));
        assert_eq!(pick(&[20.0, 12.0, 10.0]), Some(2));
    }

    #[test]
    fn candidates_prefer_rank_and_drop_scalar_when_possible() {
        let ks = [
            k("w4a8-scalar", KernelPath::W4A8, Unit::Scalar, 0),
            k("w4a8-avx2", KernelPath::W4A8, Unit::Avx2Int8, 2),
            k("w4a8-vnni", KernelPath::W4A8, Unit::Avx512Vnni, 3),
        ];
        let checks = [
            passed("w4a8-scalar", KernelPath::W4A8),
            passed("w4a8-avx2", KernelPath::W4A8),
        ];
        let c = candidates(&ks, &checks, KernelPath::W4A8, Phase::Decode, None);
        let names: Vec<&str> = c.iter().map(|k| k.name.as_str()).collect();
        assert_eq!(
            names,
            vec!["w4a8-avx2"],
            "unchecked vnni and scalar are out"
        );
        let c = candidates(
            &ks,
            &checks,
            KernelPath::W4A8,
            Phase::Decode,
            Some("w4a8-scalar"),
        );
        assert_eq!(c.len(), 1);
        assert!(candidates(&ks, &checks, KernelPath::W4A8, Phase::Prefill, None).is_empty());
    }
}
