//! The AMX-BF16 drivers (W4A16 and bf16 prefill) with emulated tiles, through the shared
//! W4A16/bf16 harness (`kernels::tests::float`). On hosts without AMX this is what tests the
//! slab dequantization, VNNI-2 addressing, tile strides, M tails and output clipping; only
//! the tile instructions themselves (one `asm!` block) are left to AMX hosts, where the
//! registered `*-gemm-amx` variants run through the same harness.

use crate::kernels::tests::float::{B16Entry, Data, MS, W4Entry, bf16_case, w4a16_case};
use crate::kernels::x86::lanes::Avx2;
use crate::kernels::x86::{bf16 as bf16_gemm, w4a16 as w4a16_gemm};

fn w4_entries() -> Vec<W4Entry> {
    if Avx2::new().is_none() {
        eprintln!("SKIPPED w4a16-gemm-amx(emulated tiles): its dequantizer needs avx2, fma");
        return Vec::new();
    }
    vec![(
        "w4a16-gemm-amx(emulated tiles)".to_string(),
        // SAFETY: AVX2 + FMA checked above; the harness passes agreeing shapes.
        Box::new(|p, w, x, o| unsafe { w4a16_gemm::gemm_amx_emulated(p, w, x, o) }),
    )]
}

fn b16_entries() -> Vec<B16Entry> {
    vec![(
        "bf16-gemm-amx(emulated tiles)".to_string(),
        // SAFETY: no CPU feature needed; the harness passes agreeing shapes.
        Box::new(|p, w, x, o| unsafe { bf16_gemm::gemm_amx_emulated(p, w, x, o) }),
    )]
}

#[test]
fn w4a16_amx_driver_emulated() {
    let e = w4_entries();
    for (i, &m) in MS.iter().enumerate() {
        let (n, k) = [(65, 128), (100, 256), (130, 384)][i % 3];
        w4a16_case(&e, m, n, k, Data::Random, 300 + i as u64);
    }
    w4a16_case(&e, 33, 40, 2048, Data::Random, 5);
    w4a16_case(&e, 17, 20, 6144, Data::Random, 6);
    for data in [
        Data::CodeExtremes,
        Data::Huge,
        Data::MaxBf16,
        Data::Denormal,
        Data::ZeroRows,
    ] {
        w4a16_case(&e, 33, 70, 256, data, 7);
    }
}

#[test]
fn bf16_amx_driver_emulated() {
    let e = b16_entries();
    for (i, &m) in MS.iter().enumerate() {
        let (n, k) = [(65, 128), (100, 256), (130, 384)][i % 3];
        assert_eq!(bf16_case(&e, m, n, k, Data::Random, 400 + i as u64), 1);
    }
    bf16_case(&e, 33, 40, 2048, Data::Random, 8);
    for data in [Data::Huge, Data::MaxBf16, Data::Denormal, Data::ZeroRows] {
        bf16_case(&e, 33, 64, 128, data, 9);
    }
}
