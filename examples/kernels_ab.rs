//! Paired A/B of kernel variants of one path, inside one process:
//! `cargo run --release --example kernels_ab -- THREADS A,B[,C..] NxK M [ROUNDS] [integer|fractional]`
//!
//! On a shared host separate runs drift by 5-10 %, more than most kernel changes are
//! worth; this tool compares variants the way `bench` compares paths. Every variant passes
//! the kernels' correctness gate first; then each round times every variant (10 calls, the
//! weights rotating over >= 64 MiB of copies so they come from DRAM) in a shuffled order,
//! and the statistic is the per-round ratio of each variant's time to the first one's:
//! its median and its range over the rounds. W4 weights get integer zeros (GPTQ
//! checkpoints, both of edgeplan's quantizer schemes) unless `fractional` is asked for.

use std::time::Instant;

use edgeplan::kernels::acts::{Bf16Rows, QuantActs};
use edgeplan::kernels::bf16::Bf16;
use edgeplan::kernels::fidelity::Rng;
use edgeplan::kernels::pack::{PackedBf16, PackedW4};
use edgeplan::kernels::pool::ThreadPool;
use edgeplan::kernels::registry::{self, KernelPath, Ready};
use edgeplan::kernels::verify;
use edgeplan::kernels::weights::{GROUP, QuantWeights};

const USAGE: &str = "usage: kernels_ab THREADS A,B[,C..] NxK M [ROUNDS] [integer|fractional] (variants of one path)";

fn fail(msg: &str) -> ! {
    eprintln!("kernels_ab: {msg}");
    std::process::exit(2)
}

/// Random W4 weights: uniform codes and scales, integer or fractional zeros.
fn w4(n: usize, k: usize, fractional: bool, rng: &mut Rng) -> PackedW4 {
    let groups = n * (k / GROUP);
    let codes = (0..n * k).map(|_| rng.below(16) as u8).collect();
    let scales = (0..groups)
        .map(|_| Bf16::from_f32((0.001 + 0.05 * rng.uniform()) as f32))
        .collect();
    let zeros = (0..groups)
        .map(|_| {
            Bf16::from_f32(if fractional {
                (15.0 * rng.uniform()) as f32
            } else {
                rng.below(16) as f32
            })
        })
        .collect();
    let q = QuantWeights::from_parts(n, k, codes, scales, zeros)
        .unwrap_or_else(|e| fail(&e.to_string()));
    PackedW4::pack(&q)
}

enum Weights {
    W4(Vec<PackedW4>),
    Bf16(Vec<PackedBf16>),
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() < 5 {
        fail(USAGE);
    }
    let threads: usize = args[1].parse().unwrap_or_else(|_| fail(USAGE));
    let (n, k) = args[3]
        .split_once('x')
        .and_then(|(n, k)| Some((n.parse().ok()?, k.parse().ok()?)))
        .unwrap_or_else(|| fail(USAGE));
    let m: usize = args[4].parse().unwrap_or_else(|_| fail(USAGE));
    let rounds: usize = args
        .get(5)
        .map_or(15, |s| s.parse().unwrap_or_else(|_| fail(USAGE)));
    let fractional = args.get(6).is_some_and(|s| s == "fractional");
    let pool = ThreadPool::new(threads).unwrap_or_else(|e| fail(&e.to_string()));

    let kerns: Vec<Ready> = args[2]
        .split(',')
        .map(|name| {
            let k = registry::by_name(name)
                .and_then(|v| v.ready())
                .unwrap_or_else(|e| fail(&e.to_string()));
            verify::gate(&k, &pool).unwrap_or_else(|e| fail(&e.to_string()));
            k
        })
        .collect();
    let path = kerns[0].variant().path();
    if kerns.iter().any(|k| k.variant().path() != path) {
        fail("the variants must all serve one path (w4a8, w4a16 or bf16)");
    }

    let mut rng = Rng::new(5);
    let weights = match path {
        KernelPath::Bf16 => {
            let first = PackedBf16::random(n, k, 1).unwrap_or_else(|e| fail(&e.to_string()));
            let copies = (64usize << 20).div_ceil(first.bytes()).max(1);
            let mut all = vec![first];
            all.extend((1..copies).map(|c| PackedBf16::random(n, k, 1 + c as u64).unwrap()));
            Weights::Bf16(all)
        }
        _ => {
            let first = w4(n, k, fractional, &mut rng);
            let copies = (64usize << 20).div_ceil(first.bytes()).max(1);
            let mut all = vec![first];
            all.extend((1..copies).map(|_| w4(n, k, fractional, &mut rng)));
            Weights::W4(all)
        }
    };
    let x: Vec<Bf16> = (0..m * k)
        .map(|_| Bf16::from_f32(rng.normal() as f32))
        .collect();
    let rows = Bf16Rows::new(&x, m, k).unwrap_or_else(|e| fail(&e.to_string()));
    let acts = QuantActs::quantize(rows).unwrap_or_else(|e| fail(&e.to_string()));
    let mut out = vec![0f32; m * n];
    let mut next = 0usize;
    let mut call = |kern: &Ready| {
        let r = match &weights {
            Weights::W4(ws) if path == KernelPath::W4A8 => {
                kern.w4a8(&pool, &ws[next % ws.len()], &acts, &mut out)
            }
            Weights::W4(ws) => kern.w4a16(&pool, &ws[next % ws.len()], rows, &mut out),
            Weights::Bf16(ws) => kern.bf16(&pool, &ws[next % ws.len()], rows, &mut out),
        };
        r.unwrap_or_else(|e| fail(&e.to_string()));
        next += 1;
    };

    for kern in &kerns {
        for _ in 0..3 {
            call(kern); // warm-up
        }
    }
    let reps = 10;
    let mut times = vec![Vec::with_capacity(rounds); kerns.len()];
    let mut order: Vec<usize> = (0..kerns.len()).collect();
    for _ in 0..rounds {
        // Fisher-Yates with the seeded generator: the order reproduces.
        for i in (1..order.len()).rev() {
            order.swap(i, rng.below(i as u64 + 1) as usize);
        }
        for &v in &order {
            let t = Instant::now();
            for _ in 0..reps {
                call(&kerns[v]);
            }
            times[v].push(t.elapsed().as_secs_f64() / reps as f64);
        }
    }

    let macs = (m * n * k) as f64;
    println!("{path:?} {n}x{k} M={m}, {threads} threads, {rounds} rounds of {reps} calls");
    for (v, kern) in kerns.iter().enumerate() {
        let mut ratios: Vec<f64> = (0..rounds).map(|r| times[v][r] / times[0][r]).collect();
        ratios.sort_by(f64::total_cmp);
        let mut t = times[v].clone();
        t.sort_by(f64::total_cmp);
        let med = t[t.len() / 2];
        println!(
            "{:<26} {:>9.1} us  {:.3} TMAC/s  time / {}: {:.3} [{:.3}, {:.3}]",
            kern.name(),
            med * 1e6,
            macs / med / 1e12,
            kerns[0].name(),
            ratios[ratios.len() / 2],
            ratios[0],
            ratios[ratios.len() - 1]
        );
    }
}
