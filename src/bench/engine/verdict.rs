//! The engine verdict: which build to deploy with this engine on this host.
//!
//! Decode decides (it sets generation speed); prefill is reported beside it. Speed
//! priority: `confirmed` when the planned build holds against every rival in decode
//! (the whole interval of `planned / rival` at or under 1 + 3 %), `contradicted` when a
//! rival beats it beyond the band (the fastest such rival is the build to deploy),
//! `inconclusive` otherwise. Fidelity priority: a rival that keeps more bits per weight
//! and is not slower beyond the band (`rival / planned` held) is the build to deploy
//! (`contradicted`); when every such rival is slower beyond the band the plan is
//! `confirmed`. A plan the engine's CPU builds cannot check is `not_applicable`.

use super::EngineInputs;
use super::protocol::Hello;
use super::report::{EngineComparison, EngineRow, EngineVerdict};
use crate::bench::backend::Phase;
use crate::bench::paired::{Interval, Judgement, TIE_BAND, judge};
use crate::bench::verdict::{NOISY_WIDTH, Status};
use crate::profile::Priority;

pub(super) fn decide(
    inputs: &EngineInputs,
    hello: &Hello,
    comparisons: &[EngineComparison],
    rows: &[EngineRow],
) -> EngineVerdict {
    let catalog_of = |build: &str| {
        inputs
            .builds
            .iter()
            .find(|b| b.build == build)
            .map(|b| b.catalog_path.clone())
    };
    let mut v = EngineVerdict {
        planned: None,
        planned_build: None,
        priority: inputs.priority,
        status: Status::NotApplicable,
        recommended_build: None,
        recommended_path: None,
        reason: String::new(),
        noisy: comparisons
            .iter()
            .any(|c| c.ratio.relative_width() > NOISY_WIDTH),
    };
    let planned = match &inputs.planned {
        Err(why) => {
            v.reason = why.clone();
            return v;
        }
        Ok(p) => p.clone(),
    };
    v.planned = catalog_of(&planned);
    v.planned_build = Some(planned.clone());
    if !hello.timed.contains(&planned) {
        v.status = Status::Inconclusive;
        v.reason = match hello.skipped.get(&planned) {
            Some(why) => format!("the engine does not run {planned} here: {why}"),
            None => format!("{planned} could not be timed in this engine"),
        };
        return v;
    }
    let decode: Vec<&EngineComparison> = comparisons
        .iter()
        .filter(|c| c.phase == Phase::Decode)
        .collect();
    if decode.is_empty() {
        v.status = Status::Confirmed;
        v.recommended_build = Some(planned.clone());
        v.recommended_path = catalog_of(&planned);
        v.reason = format!("{planned} is the only build this engine runs here");
        return v;
    }
    let chosen = if inputs.priority == Priority::Fidelity {
        fidelity(inputs, &planned, &decode, &mut v)
    } else {
        speed(&planned, &decode, rows, &mut v)
    };
    if let Some(c) = chosen.as_deref() {
        prefill_caveat(c, comparisons, &mut v);
    }
    v.recommended_path = chosen.as_deref().and_then(catalog_of);
    v.recommended_build = chosen;
    v
}

/// When the build to deploy loses prefill beyond the band to another timed build, says
/// so: decode decides, but long prompts pay the difference.
fn prefill_caveat(chosen: &str, comparisons: &[EngineComparison], v: &mut EngineVerdict) {
    let prefill = comparisons.iter().filter(|c| c.phase == Phase::Prefill);
    let slower = prefill
        .filter_map(|c| {
            // Each comparison is planned / rival: orient it as chosen / other.
            if c.planned == chosen {
                Some((c.rival.as_str(), c.ratio))
            } else if c.rival == chosen {
                Some((c.planned.as_str(), inverse(&c.ratio)))
            } else {
                None
            }
        })
        .filter(|(_, r)| judge(r) == Judgement::Beaten)
        .max_by(|a, b| a.1.median.total_cmp(&b.1.median));
    if let Some((other, r)) = slower {
        v.reason.push_str(&format!(
            "; but {chosen} prefills {:.1}x slower than {other} here, so long prompts favour {other}",
            r.median
        ));
    }
}

fn ratio_text(c: &EngineComparison) -> String {
    format!(
        "{:.3} [{:.3}, {:.3}] over {} rounds",
        c.ratio.median, c.ratio.low, c.ratio.high, c.ratio.n
    )
}

/// Advice for an undecided comparison that can change the outcome, or says it will not.
fn advice(c: &EngineComparison) -> String {
    if c.ratio.relative_width() <= TIE_BAND {
        format!(
            "{} and {} are within about {:.0}% of each other here: more rounds will not separate them, either build serves",
            c.planned,
            c.rival,
            TIE_BAND * 100.0
        )
    } else {
        format!(
            "the interval is {:.0}% wide: more rounds (--rounds 60) on a quiet host narrow it",
            c.ratio.relative_width() * 100.0
        )
    }
}

fn speed(
    planned: &str,
    decode: &[&EngineComparison],
    rows: &[EngineRow],
    v: &mut EngineVerdict,
) -> Option<String> {
    let step_of = |build: &str| {
        rows.iter()
            .find(|r| r.build == build && r.phase == Phase::Decode)
            .map_or(f64::INFINITY, |r| r.step_ms.median)
    };
    let beaten: Vec<&&EngineComparison> = decode
        .iter()
        .filter(|c| c.judgement == Judgement::Beaten)
        .collect();
    if let Some(best) = beaten
        .iter()
        .min_by(|a, b| step_of(&a.rival).total_cmp(&step_of(&b.rival)))
    {
        v.status = Status::Contradicted;
        v.reason = format!(
            "in this engine {} decodes faster than {planned} (time ratio {planned}/{} {}, beyond the {:.0}% band): deploy {}",
            best.rival,
            best.rival,
            ratio_text(best),
            TIE_BAND * 100.0,
            best.rival
        );
        return Some(best.rival.clone());
    }
    if decode.iter().all(|c| c.judgement == Judgement::Holds) {
        v.status = Status::Confirmed;
        let vs: Vec<String> = decode
            .iter()
            .map(|c| format!("vs {} {}", c.rival, ratio_text(c)))
            .collect();
        v.reason = format!(
            "{planned} decodes fastest in this engine or within the {:.0}% band ({})",
            TIE_BAND * 100.0,
            vs.join(", ")
        );
        return Some(planned.to_string());
    }
    v.status = Status::Inconclusive;
    let open = decode
        .iter()
        .filter(|c| c.judgement == Judgement::Undecided)
        .max_by(|a, b| {
            a.ratio
                .relative_width()
                .total_cmp(&b.ratio.relative_width())
        });
    v.reason = match open {
        Some(c) => format!(
            "decode vs {} undecided ({}): {}",
            c.rival,
            ratio_text(c),
            advice(c)
        ),
        None => "decode undecided".to_string(),
    };
    Some(planned.to_string())
}

/// `rival / planned` from a `planned / rival` interval.
fn inverse(i: &Interval) -> Interval {
    Interval {
        median: 1.0 / i.median,
        low: 1.0 / i.high,
        high: 1.0 / i.low,
        n: i.n,
    }
}

fn fidelity(
    inputs: &EngineInputs,
    planned: &str,
    decode: &[&EngineComparison],
    v: &mut EngineVerdict,
) -> Option<String> {
    let bits = |build: &str| {
        inputs
            .builds
            .iter()
            .find(|b| b.build == build)
            .map_or(0.0, |b| b.bits_per_weight)
    };
    let richer: Vec<&&EngineComparison> = decode
        .iter()
        .filter(|c| bits(&c.rival) > bits(planned))
        .collect();
    if richer.is_empty() {
        v.status = Status::Confirmed;
        v.reason = format!("no build this engine runs here keeps more bits than {planned}");
        return Some(planned.to_string());
    }
    if let Some(c) = richer
        .iter()
        .find(|c| judge(&inverse(&c.ratio)) == Judgement::Holds)
    {
        v.status = Status::Contradicted;
        v.reason = format!(
            "{} keeps more bits and is not slower in this engine (time ratio {planned}/{} {}): deploy {}; {planned} only saves memory",
            c.rival,
            c.rival,
            ratio_text(c),
            c.rival
        );
        return Some(c.rival.clone());
    }
    if richer
        .iter()
        .all(|c| judge(&inverse(&c.ratio)) == Judgement::Beaten)
    {
        v.status = Status::Confirmed;
        let vs: Vec<String> = richer
            .iter()
            .map(|c| format!("{} {}", c.rival, ratio_text(c)))
            .collect();
        v.reason = format!(
            "every build with more bits is slower in this engine beyond the band ({})",
            vs.join(", ")
        );
    } else {
        v.status = Status::Inconclusive;
        v.reason = format!(
            "whether a build with more bits is as fast is undecided: {}",
            advice(richer[0])
        );
    }
    Some(planned.to_string())
}
