//! The engine rounds, statistics and verdict against the fake engine.

use std::sync::Arc;

use super::fake::{FakeBuild, FakeEngine};
use super::*;
use crate::bench::clock::FakeClock;
use crate::bench::verdict::Status;
use crate::model::ModelShape;

fn workload() -> Workload {
    Workload::from_model(&ModelShape::load("qwen3-1.7b").unwrap()).unwrap()
}

fn builds() -> Vec<EngineBuild> {
    let b = |build: &str, path: &str, bits, own| EngineBuild {
        build: build.into(),
        catalog_path: path.into(),
        bits_per_weight: bits,
        own_path: Some(own),
    };
    vec![
        b("w4a8", "w4a8-amx", 4.25, KernelPath::W4A8),
        b("w4a16", "w4a16-tinygemm", 4.25, KernelPath::W4A16),
        b("bf16", "bf16", 16.0, KernelPath::Bf16),
    ]
}

fn policy() -> RoundsPolicy {
    RoundsPolicy {
        min_rounds: 8,
        max_rounds: 60,
        budget_s: 1000.0,
    }
}

fn run_fake(
    engine: &FakeEngine,
    clock: &FakeClock,
    planned: Result<&str, &str>,
    priority: &str,
) -> EngineReport {
    let w = workload();
    let inputs = EngineInputs {
        builds: builds(),
        planned: planned.map(str::to_string).map_err(str::to_string),
        priority: crate::profile::Priority::ALL
            .into_iter()
            .find(|p| p.as_str() == priority)
            .unwrap(),
        workload: &w,
        model: protocol::ModelDims {
            family: Some("qwen3".into()),
            hidden_size: 2048,
            intermediate_size: 6144,
            layers: 28,
            attention_heads: 16,
            kv_heads: 8,
            head_dim: 128,
            vocab_size: 151936,
            tie_word_embeddings: true,
        },
        threads: 2,
        prefill_tokens: 128,
        quick: true,
        rounds: policy(),
        l3_bytes: 32 << 20,
    };
    let m = measure(&inputs, engine, clock).unwrap();
    let own = OwnRun {
        memory_bandwidth_gbps: Some(20.0),
        results: &[],
        peaks: &[],
    };
    assemble(&inputs, m, own, None)
}

#[test]
fn vllm_shapes_are_merged_as_vllm_holds_them() {
    let shapes = merged_shapes(&workload());
    let got: Vec<(&str, usize, usize)> =
        shapes.iter().map(|s| (s.name.as_str(), s.n, s.k)).collect();
    assert_eq!(
        got,
        vec![
            ("qkv_proj", 4096, 2048),
            ("o_proj", 2048, 2048),
            ("gate_up_proj", 12288, 2048),
            ("down_proj", 2048, 6144)
        ]
    );
}

#[test]
fn decode_walks_more_than_twice_the_l3() {
    let w = workload();
    let layers = decode_layers(&w, 32 << 20);
    let per: u64 = w.per_layer.iter().map(|g| g.bytes(KernelPath::W4A16)).sum();
    assert!(layers as u64 * per > 64 << 20, "{layers}");
    assert!((layers - 1) as u64 * per <= 64 << 20);
    assert_eq!(decode_layers(&w, 1 << 40), w.layers);
}

#[test]
fn a_w4a16_plan_slower_than_bf16_in_the_engine_is_contradicted() {
    let clock = Arc::new(FakeClock::new(0.0));
    let engine = FakeEngine::vllm_like(clock.clone());
    let r = run_fake(&engine, &clock, Ok("w4a16"), "speed");
    assert_eq!(
        r.verdict.status,
        Status::Contradicted,
        "{}",
        r.verdict.reason
    );
    assert_eq!(r.verdict.recommended_build.as_deref(), Some("bf16"));
    assert_eq!(r.verdict.recommended_path.as_deref(), Some("bf16"));
    assert_eq!(r.verdict.planned.as_deref(), Some("w4a16-tinygemm"));
    // Decided early: the gap is far beyond the band.
    assert_eq!(r.paired.rounds, 8);
    assert_eq!(r.paired.stopped, Stop::Decided);
    // w4a8 was asked for, not timed, and says why.
    let w4a8 = r.builds.iter().find(|b| b.build == "w4a8").unwrap();
    assert!(!w4a8.timed && w4a8.skipped.as_deref().unwrap().contains("AMX"));
    // Decode is scaled to 28 layers plus the head: 28 x 4.5 ms + 10 ms, within the noise.
    let d = r
        .results
        .iter()
        .find(|r| r.build == "w4a16" && r.phase == Phase::Decode)
        .unwrap();
    assert!(
        (d.step_ms.median / 136.0 - 1.0).abs() < 0.07,
        "{}",
        d.step_ms.median
    );
    assert!(d.bandwidth_pct.is_some());
}

#[test]
fn a_bf16_plan_that_decodes_fastest_is_confirmed() {
    let clock = Arc::new(FakeClock::new(0.0));
    let engine = FakeEngine::vllm_like(clock.clone());
    let r = run_fake(&engine, &clock, Ok("bf16"), "speed");
    assert_eq!(r.verdict.status, Status::Confirmed, "{}", r.verdict.reason);
    assert_eq!(r.verdict.recommended_build.as_deref(), Some("bf16"));
}

#[test]
fn at_fidelity_a_build_with_more_bits_that_is_not_slower_wins() {
    let clock = Arc::new(FakeClock::new(0.0));
    let engine = FakeEngine::vllm_like(clock.clone());
    let r = run_fake(&engine, &clock, Ok("w4a16"), "fidelity");
    assert_eq!(
        r.verdict.status,
        Status::Contradicted,
        "{}",
        r.verdict.reason
    );
    assert_eq!(r.verdict.recommended_build.as_deref(), Some("bf16"));
    assert!(r.verdict.reason.contains("only saves memory"));
}

#[test]
fn a_4bit_build_faster_than_bf16_confirms_a_fidelity_plan() {
    let clock = Arc::new(FakeClock::new(0.0));
    let mut engine = FakeEngine::vllm_like(clock.clone());
    engine.builds.insert(
        "w4a16".into(),
        FakeBuild {
            decode_layer_s: 0.001,
            head_s: 0.010,
            prefill_layer_s: 0.010,
        },
    );
    let r = run_fake(&engine, &clock, Ok("w4a16"), "fidelity");
    assert_eq!(r.verdict.status, Status::Confirmed, "{}", r.verdict.reason);
}

#[test]
fn equal_builds_are_inconclusive_and_say_more_rounds_will_not_help() {
    let clock = Arc::new(FakeClock::new(0.0));
    let mut engine = FakeEngine::vllm_like(clock.clone());
    let same = FakeBuild {
        decode_layer_s: 0.003,
        head_s: 0.010,
        prefill_layer_s: 0.02,
    };
    // 2 % slower: inside the band, but the interval straddles nothing it can decide.
    let slower = FakeBuild {
        decode_layer_s: 0.003 * 1.03,
        ..same
    };
    engine.builds.insert("w4a16".into(), slower);
    engine.builds.insert("bf16".into(), same);
    let r = run_fake(&engine, &clock, Ok("w4a16"), "speed");
    assert_ne!(
        r.verdict.status,
        Status::Contradicted,
        "{}",
        r.verdict.reason
    );
    if r.verdict.status == Status::Inconclusive {
        assert!(r.verdict.reason.contains("rounds"), "{}", r.verdict.reason);
    }
}

#[test]
fn a_plan_the_engine_does_not_run_here_is_inconclusive_with_the_reason() {
    let clock = Arc::new(FakeClock::new(0.0));
    let engine = FakeEngine::vllm_like(clock.clone());
    let r = run_fake(&engine, &clock, Ok("w4a8"), "speed");
    assert_eq!(r.verdict.status, Status::Inconclusive);
    assert!(r.verdict.reason.contains("AMX"), "{}", r.verdict.reason);
    assert!(r.paired.comparisons.is_empty());
}

#[test]
fn no_cpu_plan_is_not_applicable_and_still_reports_the_rows() {
    let clock = Arc::new(FakeClock::new(0.0));
    let engine = FakeEngine::vllm_like(clock.clone());
    let r = run_fake(&engine, &clock, Err("bf16 runs on the CUDA GPU"), "speed");
    assert_eq!(r.verdict.status, Status::NotApplicable);
    assert!(r.verdict.reason.contains("CUDA"));
    assert_eq!(r.results.len(), 4);
    assert_eq!(r.paired.rounds, 8);
}
