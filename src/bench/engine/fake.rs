//! The fake engine: deterministic timings on the fake clock, for testing the rounds,
//! the statistics and the verdict of `bench --engine` without an engine installed.
//!
//! Chosen with `EDGEPLAN_BENCH_EXECUTOR=fake` (as the fake kernels are). Each build has
//! a base time per phase; every round adds a small seeded multiplicative noise shared by
//! all builds of the round (as a busy host slows both sides of a pair) plus a smaller
//! per-build noise. The report says `executor: fake`, so nothing here is mistaken for a
//! measurement.

use std::collections::BTreeMap;
use std::sync::Arc;

use super::protocol::{BuildTimes, EngineKernel, HarnessRequest, Hello, Launcher, Round, Session};
use crate::bench::clock::FakeClock;
use crate::bench::rng::Rng;

/// One fake build: seconds per timed decode layer, lm_head and prefill layer.
#[derive(Debug, Clone, Copy)]
pub struct FakeBuild {
    pub decode_layer_s: f64,
    pub head_s: f64,
    pub prefill_layer_s: f64,
}

/// The fake engine.
pub struct FakeEngine {
    pub name: &'static str,
    pub builds: BTreeMap<String, FakeBuild>,
    /// Builds it says it does not run here, with why.
    pub skipped: BTreeMap<String, String>,
    /// Every step time is multiplied by this (a disturbed host).
    pub disturbance: f64,
    clock: Arc<FakeClock>,
}

impl FakeEngine {
    /// A vLLM-like engine whose bf16 decodes faster than its W4A16 (the ordering
    /// issue 30 measured on a Zen 5 host; figures invented) and that runs W4A8 only
    /// with AMX, which it says it lacks.
    pub fn vllm_like(clock: Arc<FakeClock>) -> FakeEngine {
        let b = |d, h, p| FakeBuild {
            decode_layer_s: d,
            head_s: h,
            prefill_layer_s: p,
        };
        FakeEngine {
            name: "vllm",
            builds: BTreeMap::from([
                ("w4a16".to_string(), b(0.0045, 0.010, 0.044)),
                ("bf16".to_string(), b(0.0029, 0.010, 0.016)),
            ]),
            skipped: BTreeMap::from([(
                "w4a8".to_string(),
                "the fake engine routes W4A8 only with AMX".to_string(),
            )]),
            disturbance: 1.0,
            clock,
        }
    }
}

impl Launcher for FakeEngine {
    fn engine(&self) -> &'static str {
        self.name
    }

    fn program(&self) -> String {
        "fake".to_string()
    }

    fn start(&self, request: &HarnessRequest) -> anyhow::Result<Box<dyn Session>> {
        let timed: Vec<String> = request
            .paths
            .iter()
            .filter(|p| self.builds.contains_key(*p))
            .cloned()
            .collect();
        let kernel = |b: &str| EngineKernel {
            kernel_class: format!("Fake{}", b.to_uppercase()),
            op: format!("fake_{b}"),
            isa_hint: None,
            rel_error: Some(0.005),
            check: "passed".into(),
        };
        let hello = Hello {
            engine: self.name.to_string(),
            version: "0.0.0-fake".into(),
            torch: None,
            python: None,
            build: None,
            threads: request.threads,
            kernels: timed.iter().map(|b| (b.clone(), kernel(b))).collect(),
            skipped: self
                .skipped
                .iter()
                .filter(|(b, _)| request.paths.contains(b))
                .map(|(b, w)| (b.clone(), w.clone()))
                .collect(),
            layer_weight_bytes: timed
                .iter()
                .map(|b| {
                    let per: u64 = request.shapes.iter().map(|s| (s.n * s.k) as u64).sum();
                    (b.clone(), if b == "bf16" { per * 2 } else { per * 17 / 32 })
                })
                .collect(),
            head_weight_bytes: (request.lm_head.n * request.lm_head.k * 2) as u64,
            layers_timed_decode: request.layers,
            layers_timed_prefill: request.prefill_layers,
            setup_s: 1.0,
            whole_model: false,
            timed,
        };
        Ok(Box::new(FakeSession {
            builds: self.builds.clone(),
            disturbance: self.disturbance,
            request: request.clone(),
            hello,
            rng: Rng::new(request.seed),
            clock: Arc::clone(&self.clock),
            round: 0,
            stopped: false,
        }))
    }
}

struct FakeSession {
    builds: BTreeMap<String, FakeBuild>,
    disturbance: f64,
    request: HarnessRequest,
    hello: Hello,
    rng: Rng,
    clock: Arc<FakeClock>,
    round: usize,
    stopped: bool,
}

impl Session for FakeSession {
    fn hello(&self) -> &Hello {
        &self.hello
    }

    fn next_round(&mut self) -> anyhow::Result<Option<Round>> {
        if self.stopped || self.round >= self.request.max_rounds {
            return Ok(None);
        }
        self.round += 1;
        let shared = 1.0 + 0.05 * self.rng.uniform() as f64;
        let mut times = BTreeMap::new();
        for name in &self.hello.timed {
            let b = self.builds[name];
            let own = 1.0 + 0.01 * self.rng.uniform() as f64;
            let f = shared * own * self.disturbance;
            let t = BuildTimes {
                decode_layers_s: b.decode_layer_s * self.request.layers as f64 * f,
                head_s: b.head_s * f,
                prefill_layers_s: b.prefill_layer_s * self.request.prefill_layers as f64 * f,
            };
            self.clock
                .advance(t.decode_layers_s + t.head_s + t.prefill_layers_s);
            times.insert(name.clone(), t);
        }
        Ok(Some(Round {
            round: self.round,
            times,
        }))
    }

    fn answer(&mut self, more: bool) -> anyhow::Result<()> {
        self.stopped = !more;
        Ok(())
    }

    fn finish(self: Box<Self>) -> anyhow::Result<()> {
        Ok(())
    }
}
