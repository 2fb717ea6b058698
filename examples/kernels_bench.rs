//! Kernel micro-benchmark over every path (W4A8, W4A16, bf16):
//! `cargo run --release --example kernels_bench -- [threads] [kernels] [ms per shape] [working set MiB] [shapes] [Ms]`
//!
//! - `kernels`: comma-separated variant names, or path names (`w4a8`, `w4a16`, `bf16`) for
//!   every available variant of the path, or `all` (default);
//! - `shapes`: `all` (default: Qwen3-1.7B's linear layers) or `NxK` like `256x2048` for a
//!   cache-resident compute check;
//! - `Ms`: the row counts, default `1,128`.
//!
//! Prints the pool dispatch overhead, the read bandwidth (measured like the kernels read;
//! with the default shapes only), then one line per (variant, M, shape): median and best
//! time, weight GB/s and TMAC/s.
//! Every variant passes the kernels' correctness gate before it is timed. Weights rotate
//! over >= `working set` MiB of packed copies per shape (default 512, above any L3 here).

use std::time::Duration;

use edgeplan::kernels::pool::{ThreadPool, dispatch_overhead};
use edgeplan::kernels::registry::{self, KernelPath, Phase};
use edgeplan::kernels::timing::{QWEN3_1_7B, read_bandwidth, time_variant};

fn variants(arg: Option<&String>) -> Vec<String> {
    let all = [KernelPath::W4A8, KernelPath::W4A16, KernelPath::Bf16];
    let spec = arg.map(String::as_str).unwrap_or("all");
    spec.split(',')
        .flat_map(|s| {
            let paths: Vec<KernelPath> = all
                .into_iter()
                .filter(|p| s == "all" || s == p.name())
                .collect();
            if paths.is_empty() {
                return vec![s.to_string()];
            }
            paths
                .into_iter()
                .flat_map(registry::for_path)
                .filter(|v| v.is_available())
                .map(|v| v.name.to_string())
                .collect()
        })
        .collect()
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let threads: usize = args.get(1).and_then(|s| s.parse().ok()).unwrap_or(2);
    let names = variants(args.get(2));
    let budget = Duration::from_millis(args.get(3).and_then(|s| s.parse().ok()).unwrap_or(400));
    let pool = ThreadPool::new(threads).expect("thread pool");
    let ws = args
        .get(4)
        .and_then(|s| s.parse::<usize>().ok())
        .unwrap_or(512)
        << 20;
    let custom: Option<(usize, usize)> = args
        .get(5)
        .and_then(|s| s.split_once('x'))
        .and_then(|(n, k)| Some((n.parse().ok()?, k.parse().ok()?)));
    let shapes: Vec<(&str, usize, usize)> = match custom {
        Some((n, k)) => vec![("custom", n, k)],
        None => QWEN3_1_7B.to_vec(),
    };
    let ms: Vec<usize> = args
        .get(6)
        .map(|s| s.split(',').filter_map(|v| v.parse().ok()).collect())
        .unwrap_or_else(|| vec![1, 128]);

    println!("threads {threads}");
    println!(
        "pool dispatch overhead (median empty run): {:.2} us",
        dispatch_overhead(&pool, 20_000).as_secs_f64() * 1e6
    );
    if custom.is_none() {
        println!(
            "read bandwidth (best 32 MiB slice of 1 GiB, {threads} threads): {:.1} GB/s",
            read_bandwidth(&pool, 1 << 30, Duration::from_secs(2))
        );
    }
    for name in &names {
        let kern = match registry::by_name(name).and_then(|v| v.ready()) {
            Ok(k) => k,
            Err(e) => {
                eprintln!("SKIPPED {name}: {e}");
                continue;
            }
        };
        for &m in &ms {
            let phase = Phase::for_m(m);
            if !kern.variant().serves(phase) || (m > 1 && kern.variant().isa == "scalar") {
                continue;
            }
            for &(layer, n, k) in &shapes {
                if layer == "lm_head" && m > 1 {
                    continue;
                }
                match time_variant(&kern, &pool, n, k, m, ws, budget) {
                    Ok(t) => println!(
                        "{:<22} M={:<4} {:<10} {:>6}x{:<5} {:>10.1} us (best {:>10.1})  {:>6.1} GB/s  {:>6.3} TMAC/s  (caller cpu {:>9.1} us; {} copies, {} calls)",
                        t.kernel,
                        m,
                        layer,
                        n,
                        k,
                        t.secs * 1e6,
                        t.best_secs * 1e6,
                        t.weight_gbps,
                        t.tmacs,
                        t.cpu_secs * 1e6,
                        t.copies,
                        t.calls
                    ),
                    Err(e) => println!("{name} M={m} {layer}: FAILED: {e}"),
                }
            }
        }
    }
}
