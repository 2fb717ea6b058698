//! x86_64 register-only loops for the compute peaks: FMA (AVX2 and AVX-512), bf16 dot
//! products (AVX-512-BF16 `vdpbf16ps`), int8 multiply-add (AVX2 `vpmaddubsw`+`vpmaddwd`,
//! AVX-VNNI and AVX-512 VNNI `vpdpbusd`) and AMX (`TDPBSSD`, `TDPBF16PS`, through `asm!`).
//!
//! Each `#[target_feature]` loop is only reachable through [`loop_for`], which checks the
//! crate's one feature table ([`crate::arch::features`]: CPU and OS; for AMX also the
//! palette and the permission, granted by the kernels) before handing it out.

use std::arch::asm;
use std::arch::x86_64::*;
use std::hint::black_box;

use super::Loop;
use crate::bench::backend::Unit;
use crate::kernels::amx_tile::PALETTE1_16X64;

/// The loop for `unit` when this CPU (and OS) can run it.
pub fn loop_for(unit: Unit, amx: &Result<(), String>) -> Result<Loop, String> {
    let live = crate::arch::features::live();
    let has = |name: &str| live.usable(name);
    let need = |ok: bool, what: &str| {
        if ok {
            Ok(())
        } else {
            Err(format!("no {what} on this CPU"))
        }
    };
    match unit {
        Unit::Avx2Fma => {
            need(has("avx2") && has("fma"), "AVX2 FMA")?;
            Ok(Loop {
                macs: 12 * 8,
                run: fma256,
            })
        }
        Unit::Avx512Fma => {
            need(has("avx512f"), "AVX-512F")?;
            Ok(Loop {
                macs: 24 * 16,
                run: fma512,
            })
        }
        Unit::Avx512Bf16 => {
            need(
                is_x86_feature_detected!("avx512f") && is_x86_feature_detected!("avx512bf16"),
                "AVX-512-BF16",
            )?;
            Ok(Loop {
                macs: 24 * 32,
                run: dpbf16_512,
            })
        }
        Unit::Avx2Int8 => {
            need(has("avx2"), "AVX2")?;
            Ok(Loop {
                macs: 12 * 32,
                run: int8_avx2,
            })
        }
        Unit::AvxVnni => {
            need(has("avx_vnni"), "AVX-VNNI")?;
            Ok(Loop {
                macs: 12 * 32,
                run: vnni256,
            })
        }
        Unit::Avx512Vnni => {
            need(has("avx512f") && has("avx512_vnni"), "AVX-512 VNNI")?;
            Ok(Loop {
                macs: 24 * 64,
                run: vnni512,
            })
        }
        Unit::AmxInt8 | Unit::AmxBf16 => {
            let (cpu, name) = match unit {
                Unit::AmxInt8 => (live.get("amx_int8").cpu, "AMX-INT8"),
                _ => (live.get("amx_bf16").cpu, "AMX-BF16"),
            };
            need(cpu, name)?;
            amx.clone()
                .map_err(|why| format!("{name} not usable: {why}"))?;
            Ok(match unit {
                Unit::AmxInt8 => Loop {
                    macs: 4 * 16 * 16 * 64,
                    run: amx_int8,
                },
                _ => Loop {
                    macs: 4 * 16 * 16 * 32,
                    run: amx_bf16,
                },
            })
        }
        other => Err(format!("{} has no x86 peak loop", other.as_str())),
    }
}

fn fma256(iters: u64) {
    // SAFETY: handed out by `loop_for` only after AVX2 and FMA were detected.
    unsafe { fma256_tf(iters) }
}

#[target_feature(enable = "avx2,fma")]
fn fma256_tf(iters: u64) {
    // Opaque inputs: constants would let the compiler prove the loop a no-op.
    let m = black_box(_mm256_set1_ps(0.999));
    let c = black_box(_mm256_set1_ps(1e-3));
    let mut acc = black_box([_mm256_set1_ps(0.5); 12]);
    for _ in 0..iters {
        for a in acc.iter_mut() {
            *a = _mm256_fmadd_ps(*a, m, c);
        }
    }
    black_box(acc);
}

fn fma512(iters: u64) {
    // SAFETY: handed out by `loop_for` only after AVX-512F was detected.
    unsafe { fma512_tf(iters) }
}

#[target_feature(enable = "avx512f")]
fn fma512_tf(iters: u64) {
    let m = black_box(_mm512_set1_ps(0.999));
    let c = black_box(_mm512_set1_ps(1e-3));
    let mut acc = black_box([_mm512_set1_ps(0.5); 24]);
    for _ in 0..iters {
        for a in acc.iter_mut() {
            *a = _mm512_fmadd_ps(*a, m, c);
        }
    }
    black_box(acc);
}

fn dpbf16_512(iters: u64) {
    // SAFETY: handed out by `loop_for` only after AVX-512F and AVX-512-BF16 were detected.
    unsafe { dpbf16_512_tf(iters) }
}

/// `vdpbf16ps zmm`: 16 lanes x 2 bf16 products each, 24 independent accumulators.
#[target_feature(enable = "avx512f,avx512bf16")]
fn dpbf16_512_tf(iters: u64) {
    // 1.0 and -0.5 as bf16 pairs: the sums stay finite however long the loop runs.
    let a: __m512bh = black_box(bf16_splat(0x3F80_3F80));
    let b: __m512bh = black_box(bf16_splat(0xBF00_3F00));
    let mut acc = black_box([_mm512_setzero_ps(); 24]);
    for _ in 0..iters {
        for c in acc.iter_mut() {
            *c = _mm512_dpbf16_ps(*c, a, b);
        }
    }
    black_box(acc);
}

/// Sixteen copies of the dword `bits` as a bf16 vector.
#[target_feature(enable = "avx512f")]
fn bf16_splat(bits: u32) -> __m512bh {
    // SAFETY: __m512i and __m512bh are both 64 plain bytes.
    unsafe { std::mem::transmute(_mm512_set1_epi32(bits as i32)) }
}

fn int8_avx2(iters: u64) {
    // SAFETY: handed out by `loop_for` only after AVX2 was detected.
    unsafe { int8_avx2_tf(iters) }
}

/// `vpmaddubsw` alone (32 u8 x s8 products into 16 int16 pair sums): the AVX2 int8
/// multiplier's rate, which bounds every AVX2 W4A8 kernel. The kernels add an int16
/// `vpaddw` per `vpmaddubsw` and widen with `vpmaddwd` only every few of them (exact for
/// 4-bit codes, kernels.md §4.2), so the multiplier, not a widening sequence, is the roofline:
/// an earlier loop that widened every product pair ran at 0.66 of this rate on a Zen 2
/// and let `w4a8-gemm-avx2` report 152 % of its "peak". The result is fed back as the u8
/// operand so the compiler cannot hoist the multiplies out of the loop.
#[target_feature(enable = "avx2")]
fn int8_avx2_tf(iters: u64) {
    let b = black_box(_mm256_set1_epi8(3));
    let mut acc = black_box([_mm256_set1_epi32(0x0102_0304); 12]);
    for _ in 0..iters {
        for a in acc.iter_mut() {
            *a = _mm256_maddubs_epi16(*a, b);
        }
    }
    black_box(acc);
}

fn vnni256(iters: u64) {
    // SAFETY: handed out by `loop_for` only after AVX-VNNI was detected.
    unsafe { vnni256_tf(iters) }
}

#[target_feature(enable = "avx2,avxvnni")]
fn vnni256_tf(iters: u64) {
    let a = black_box(_mm256_set1_epi8(7));
    let b = black_box(_mm256_set1_epi8(-3));
    let mut acc = black_box([_mm256_setzero_si256(); 12]);
    for _ in 0..iters {
        for c in acc.iter_mut() {
            *c = _mm256_dpbusd_avx_epi32(*c, a, b);
        }
    }
    black_box(acc);
}

fn vnni512(iters: u64) {
    // SAFETY: handed out by `loop_for` only after AVX-512F and AVX-512 VNNI were detected.
    unsafe { vnni512_tf(iters) }
}

#[target_feature(enable = "avx512f,avx512vnni")]
fn vnni512_tf(iters: u64) {
    let a = black_box(_mm512_set1_epi8(7));
    let b = black_box(_mm512_set1_epi8(-3));
    let mut acc = black_box([_mm512_setzero_si512(); 24]);
    for _ in 0..iters {
        for c in acc.iter_mut() {
            *c = _mm512_dpbusd_epi32(*c, a, b);
        }
    }
    black_box(acc);
}

/// Four 16 x 64-byte operand tiles (A0, A1, B0, B1), 64-byte aligned.
#[repr(C, align(64))]
struct Operands([u8; 4096]);

fn amx_int8(iters: u64) {
    // SAFETY: `loop_for` hands this out only when CPUID reports AMX-INT8 and the kernels
    // obtained the XTILEDATA permission for this process; `amx_loop`'s contract holds.
    unsafe { amx_loop::<true>(iters) }
}

fn amx_bf16(iters: u64) {
    // SAFETY: as `amx_int8`, with AMX-BF16 reported by CPUID.
    unsafe { amx_loop::<false>(iters) }
}

/// Loads tiles 0-3 once and runs `iters` x 4 TDPs into tiles 4-7 (2 A x 2 B, four
/// independent C accumulators), then releases the tiles.
///
/// # Safety
/// The CPU must support AMX-TILE and AMX-INT8 (`INT8`) or AMX-BF16 (`!INT8`), and the OS
/// must have granted this process the XTILEDATA permission (`arch_prctl`), otherwise the
/// first tile instruction faults.
unsafe fn amx_loop<const INT8: bool>(iters: u64) {
    if iters == 0 {
        return;
    }
    let cfg = &PALETTE1_16X64;
    // int8: ones; bf16: 1.0 (0x3F80) as little-endian pairs.
    let mut ops = Operands([0; 4096]);
    for (i, b) in ops.0.iter_mut().enumerate() {
        *b = if INT8 {
            1
        } else if i % 2 == 1 {
            0x3F
        } else {
            0x80
        };
    }
    let base = ops.0.as_ptr();
    let stride = 64usize;
    if INT8 {
        // SAFETY: the caller guarantees AMX and the permission. `cfg` is the kernels' shared
        // 64-byte aligned static the asm reads (not `nomem`); every tile row read lies inside
        // `ops` (4 tiles x 16 rows x 64 bytes, stride in the index register); all eight
        // tiles are declared clobbered and released before the block ends.
        unsafe {
            asm!(
                "ldtilecfg [{cfg}]",
                "tileloadd tmm0, [{a0} + {s}*1]",
                "tileloadd tmm1, [{a1} + {s}*1]",
                "tileloadd tmm2, [{b0} + {s}*1]",
                "tileloadd tmm3, [{b1} + {s}*1]",
                "tilezero tmm4",
                "tilezero tmm5",
                "tilezero tmm6",
                "tilezero tmm7",
                "2:",
                "tdpbssd tmm4, tmm0, tmm2",
                "tdpbssd tmm5, tmm0, tmm3",
                "tdpbssd tmm6, tmm1, tmm2",
                "tdpbssd tmm7, tmm1, tmm3",
                "dec {n}",
                "jnz 2b",
                "tilerelease",
                cfg = in(reg) cfg,
                a0 = in(reg) base,
                a1 = in(reg) base.add(1024),
                b0 = in(reg) base.add(2048),
                b1 = in(reg) base.add(3072),
                s = in(reg) stride,
                n = inout(reg) iters => _,
                out("tmm0") _, out("tmm1") _, out("tmm2") _, out("tmm3") _,
                out("tmm4") _, out("tmm5") _, out("tmm6") _, out("tmm7") _,
                options(nostack, readonly),
            );
        }
    } else {
        // SAFETY: as above, with TDPBF16PS.
        unsafe {
            asm!(
                "ldtilecfg [{cfg}]",
                "tileloadd tmm0, [{a0} + {s}*1]",
                "tileloadd tmm1, [{a1} + {s}*1]",
                "tileloadd tmm2, [{b0} + {s}*1]",
                "tileloadd tmm3, [{b1} + {s}*1]",
                "tilezero tmm4",
                "tilezero tmm5",
                "tilezero tmm6",
                "tilezero tmm7",
                "2:",
                "tdpbf16ps tmm4, tmm0, tmm2",
                "tdpbf16ps tmm5, tmm0, tmm3",
                "tdpbf16ps tmm6, tmm1, tmm2",
                "tdpbf16ps tmm7, tmm1, tmm3",
                "dec {n}",
                "jnz 2b",
                "tilerelease",
                cfg = in(reg) cfg,
                a0 = in(reg) base,
                a1 = in(reg) base.add(1024),
                b0 = in(reg) base.add(2048),
                b1 = in(reg) base.add(3072),
                s = in(reg) stride,
                n = inout(reg) iters => _,
                out("tmm0") _, out("tmm1") _, out("tmm2") _, out("tmm3") _,
                out("tmm4") _, out("tmm5") _, out("tmm6") _, out("tmm7") _,
                options(nostack, readonly),
            );
        }
    }
    black_box(&ops);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tile_config_has_only_tiles_0_to_7() {
        let cfg = &PALETTE1_16X64;
        assert_eq!(cfg.palette, 1);
        assert!(cfg.colsb[8..].iter().all(|&c| c == 0));
        assert!(cfg.rows[8..].iter().all(|&r| r == 0));
        assert!(cfg.reserved.iter().all(|&r| r == 0));
        assert_eq!(std::mem::align_of_val(cfg), 64);
    }

    /// The AMX loops with the kernels' real permission answer (the test above passes a
    /// refusal, so it never reaches them): on an AMX host this executes `ldtilecfg`, the
    /// loads, the TDPs and `tilerelease`; a loop is refused only without the CPU bit or
    /// the permission.
    #[test]
    fn amx_loops_run_where_permitted() {
        let amx = crate::kernels::cpu::amx_permission().map_err(|m| m.to_string());
        let live = crate::arch::features::live();
        for (unit, bit) in [(Unit::AmxInt8, "amx_int8"), (Unit::AmxBf16, "amx_bf16")] {
            match loop_for(unit, &amx) {
                Ok(lp) => (lp.run)(1000),
                Err(why) => assert!(amx.is_err() || !live.get(bit).cpu, "{why}"),
            }
        }
    }

    #[test]
    fn available_loops_run() {
        for &unit in super::super::UNITS {
            if let Ok(lp) = loop_for(unit, &Err("no permission in tests".into())) {
                (lp.run)(10);
                assert!(lp.macs > 0);
            }
        }
    }
}
