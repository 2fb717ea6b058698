//! Kernel micro-benchmark:
//! `cargo run --release --example kernels_bench -- [threads] [kernel,...] [ms per shape] [working set MiB] [shapes]`
//! (`shapes` = `all` (default) or `NxK` like `256x2048` for a cache-resident compute check;
//! a 6th argument lists the M values, default `1,128,512`).
//!
//! Prints the pool dispatch overhead, DRAM read bandwidth, then W4A8 decode (M = 1) and
//! prefill (M = 128, 512) timings over Qwen3-1.7B shapes, with a working set of >= 512 MB
//! of packed weights per shape (larger than any L3 this targets).

use std::time::Duration;

use edgeplan::kernels::pool::{ThreadPool, dispatch_overhead};
use edgeplan::kernels::registry::{self, KernelPath};
use edgeplan::kernels::timing::{QWEN3_1_7B, read_bandwidth, time_w4a8};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let threads: usize = args.get(1).and_then(|s| s.parse().ok()).unwrap_or(2);
    let names: Vec<String> = args
        .get(2)
        .map(|s| s.split(',').map(str::to_string).collect())
        .unwrap_or_else(|| {
            registry::for_path(KernelPath::W4A8)
                .filter(|v| v.is_available())
                .map(|v| v.name.to_string())
                .collect()
        });
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

    println!("threads {threads}");
    println!(
        "pool dispatch overhead (median empty run): {:.2} us",
        dispatch_overhead(&pool, 20_000).as_secs_f64() * 1e6
    );
    if custom.is_none() {
        println!(
            "read bandwidth (1 GiB, {threads} threads): {:.1} GB/s",
            read_bandwidth(&pool, 1 << 30, Duration::from_secs(2))
        );
    }
    for name in &names {
        let kern = match registry::by_name(name).and_then(|v| v.ready()) {
            Ok(k) => k,
            Err(e) => {
                eprintln!("skip {name}: {e}");
                continue;
            }
        };
        let ms: Vec<usize> = args
            .get(6)
            .map(|s| s.split(',').filter_map(|v| v.parse().ok()).collect())
            .unwrap_or_else(|| vec![1, 128, 512]);
        for &m in &ms {
            if m > 1 && name.contains("scalar") {
                continue;
            }
            for &(layer, n, k) in &shapes {
                if layer == "lm_head" && m > 1 {
                    continue;
                }
                match time_w4a8(&kern, &pool, n, k, m, ws, budget) {
                    Ok(t) => println!(
                        "{:<18} M={:<4} {:<10} {:>6}x{:<5} {:>10.1} us  {:>6.1} GB/s  {:>6.3} TMAC/s  (caller cpu {:>9.1} us; {} copies, {} calls)",
                        t.kernel,
                        m,
                        layer,
                        n,
                        k,
                        t.secs * 1e6,
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
