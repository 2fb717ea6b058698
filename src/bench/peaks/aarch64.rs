//! arm64 register-only loops for the compute peaks, one per unit the aarch64 kernels lean
//! on: f32 `fmla` (`neon-fma`), ARMv8.0 int8 `smlal`/`smlal2` (`neon-int8`), `sdot`
//! (`neon-dotprod`), `smmla` (`neon-i8mm`), `bfdot` (`neon-bfdot`) and `bfmmla`
//! (`neon-bfmmla`).
//!
//! Each loop is one `asm!` block: 24 accumulators (v8..v31, enough independent chains to
//! cover a 4-cycle latency on 4 vector pipes, and more on smaller cores) are zeroed, the
//! counted loop issues one instruction per accumulator per iteration (two for `neon-int8`:
//! `smlal` and `smlal2`), and the accumulators are stored for the caller. `asm!` rather
//! than intrinsics for all six: `sdot`, `smmla`, `bfdot` and `bfmmla` have no stable
//! intrinsic in Rust 1.95, and the compiler may rewrite an intrinsic `smlal` with
//! loop-invariant operands into a hoisted multiply and a plain add.
//!
//! Both operands are all ones (1 or bf16/f32 1.0), so every multiply-accumulate adds exactly
//! 1 and the accumulators' lane sum after `n` iterations is the number of MACs performed:
//! the tests check the per-instruction MAC counts of the Arm ARM that way.
//!
//! A loop is handed out by [`loop_for`] only when the kernels' feature check (HWCAP/HWCAP2
//! through [`crate::kernels::cpu`], the facts `probe` reports) says the CPU has it.

use std::arch::aarch64::*;
use std::arch::asm;
use std::hint::black_box;

use super::Loop;
use crate::bench::backend::Unit;
use crate::kernels::cpu::{self, Feature};

/// Accumulator registers per loop (v8..v31).
const CHAINS: usize = 24;

/// The accumulators after a loop: v8 first, 16 bytes each, little-endian lanes.
type Accs = [u8; CHAINS * 16];

/// How an accumulator's lanes read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Lanes {
    F32,
    I32,
    I16,
}

/// One unit's loop and what it needs.
struct Spec {
    unit: Unit,
    needs: &'static [Feature],
    /// The extension, for the skip reason.
    what: &'static str,
    /// Multiply-accumulates of one instruction (128-bit vectors, Arm ARM semantics).
    macs_per_instr: u64,
    /// Instructions per iteration (each accumulator gets `instrs / CHAINS`).
    instrs: u64,
    /// How the accumulators read (the tests' MAC count).
    #[cfg_attr(not(test), allow(dead_code))]
    lanes: Lanes,
    /// The loop, returning the accumulators.
    ///
    /// # Safety
    /// The CPU must have `needs`.
    accs: unsafe fn(u64) -> Accs,
}

/// The arm64 units, best first (the order bench reports them in).
const SPECS: [Spec; 6] = [
    Spec {
        unit: Unit::NeonI8mm,
        needs: &[Feature::Neon, Feature::I8mm],
        what: "FEAT_I8MM (HWCAP2 i8mm)",
        macs_per_instr: 32,
        instrs: CHAINS as u64,
        lanes: Lanes::I32,
        accs: smmla_accs,
    },
    Spec {
        unit: Unit::NeonDotprod,
        needs: &[Feature::Neon, Feature::Dotprod],
        what: "FEAT_DotProd (HWCAP asimddp)",
        macs_per_instr: 16,
        instrs: CHAINS as u64,
        lanes: Lanes::I32,
        accs: sdot_accs,
    },
    Spec {
        unit: Unit::NeonInt8,
        needs: &[Feature::Neon],
        what: "Advanced SIMD (HWCAP asimd)",
        macs_per_instr: 8,
        instrs: 2 * CHAINS as u64,
        lanes: Lanes::I16,
        accs: smlal_accs,
    },
    Spec {
        unit: Unit::NeonBfmmla,
        needs: &[Feature::Neon, Feature::Bf16],
        what: "FEAT_BF16 (HWCAP2 bf16)",
        macs_per_instr: 16,
        instrs: CHAINS as u64,
        lanes: Lanes::F32,
        accs: bfmmla_accs,
    },
    Spec {
        unit: Unit::NeonBfdot,
        needs: &[Feature::Neon, Feature::Bf16],
        what: "FEAT_BF16 (HWCAP2 bf16)",
        macs_per_instr: 8,
        instrs: CHAINS as u64,
        lanes: Lanes::F32,
        accs: bfdot_accs,
    },
    Spec {
        unit: Unit::NeonFma,
        needs: &[Feature::Neon],
        what: "Advanced SIMD (HWCAP asimd)",
        macs_per_instr: 4,
        instrs: CHAINS as u64,
        lanes: Lanes::F32,
        accs: fma_accs,
    },
];

/// The units measured on arm64, best first.
pub const UNITS: [Unit; 6] = [
    SPECS[0].unit,
    SPECS[1].unit,
    SPECS[2].unit,
    SPECS[3].unit,
    SPECS[4].unit,
    SPECS[5].unit,
];

/// `SPECS[I]`'s loop for timing: the accumulators are discarded.
fn run_spec<const I: usize>(iters: u64) {
    // SAFETY: `RUNS[I]` is handed out by `loop_for` only after `SPECS[I].needs` were all
    // found (HWCAP/HWCAP2 through `cpu::has`).
    black_box(unsafe { (SPECS[I].accs)(iters) });
}

/// The timed loops, index for index with [`SPECS`].
const RUNS: [fn(u64); 6] = [
    run_spec::<0>,
    run_spec::<1>,
    run_spec::<2>,
    run_spec::<3>,
    run_spec::<4>,
    run_spec::<5>,
];

/// The loop for `unit` when this CPU can run it, else why not.
pub fn loop_for(unit: Unit) -> Result<Loop, String> {
    let Some(i) = SPECS.iter().position(|s| s.unit == unit) else {
        return Err(format!("{} has no arm64 peak loop", unit.as_str()));
    };
    let s = &SPECS[i];
    if !s.needs.iter().all(|&f| cpu::has(f)) {
        return Err(format!("no {} on this CPU", s.what));
    }
    Ok(Loop {
        macs: s.instrs * s.macs_per_instr,
        run: RUNS[i],
    })
}

/// `$pre vN $post` for every accumulator v8..v31, one line each.
macro_rules! each_acc {
    ($pre:literal, $post:literal) => {
        concat!(
            $pre, "v8", $post, "\n", $pre, "v9", $post, "\n", $pre, "v10", $post, "\n", $pre,
            "v11", $post, "\n", $pre, "v12", $post, "\n", $pre, "v13", $post, "\n", $pre, "v14",
            $post, "\n", $pre, "v15", $post, "\n", $pre, "v16", $post, "\n", $pre, "v17", $post,
            "\n", $pre, "v18", $post, "\n", $pre, "v19", $post, "\n", $pre, "v20", $post, "\n",
            $pre, "v21", $post, "\n", $pre, "v22", $post, "\n", $pre, "v23", $post, "\n", $pre,
            "v24", $post, "\n", $pre, "v25", $post, "\n", $pre, "v26", $post, "\n", $pre, "v27",
            $post, "\n", $pre, "v28", $post, "\n", $pre, "v29", $post, "\n", $pre, "v30", $post,
            "\n", $pre, "v31", $post, "\n",
        )
    };
}

/// A function running `iters` iterations of `$body` (one line per accumulator, see
/// [`each_acc`]) on zeroed v8..v31 with `$x` in v0 and `$y` in v1, returning v8..v31.
/// The counter lives in x9, the store pointer in x10 (`clobber_abi` wants explicit
/// registers).
macro_rules! peak_loop {
    ($(#[$doc:meta])* $name:ident, $feat:literal, $x:expr, $y:expr, $($body:expr),+) => {
        $(#[$doc])*
        #[target_feature(enable = $feat)]
        fn $name(iters: u64) -> Accs {
            let mut out: Accs = [0; CHAINS * 16];
            if iters == 0 {
                return out;
            }
            let (x, y) = ($x, $y);
            // SAFETY: the instructions need exactly the features enabled on this function,
            // which its callers hold (`loop_for` checked HWCAP, tests check `cpu::has`). The
            // block writes only `out` (24 stores of 16 bytes through x10, 384 bytes, its
            // length) and registers: v0-v31 through `clobber_abi("C")` (every vector
            // register on AArch64), the counter x9 and pointer x10 as operands, and the
            // flags (`subs`; the block does not claim `preserves_flags`). No stack use.
            unsafe {
                asm!(
                    each_acc!("movi ", ".16b, #0"),
                    "2:",
                    $($body,)+
                    "subs x9, x9, #1",
                    "b.ne 2b",
                    "st1 {{v8.16b, v9.16b, v10.16b, v11.16b}}, [x10], #64",
                    "st1 {{v12.16b, v13.16b, v14.16b, v15.16b}}, [x10], #64",
                    "st1 {{v16.16b, v17.16b, v18.16b, v19.16b}}, [x10], #64",
                    "st1 {{v20.16b, v21.16b, v22.16b, v23.16b}}, [x10], #64",
                    "st1 {{v24.16b, v25.16b, v26.16b, v27.16b}}, [x10], #64",
                    "st1 {{v28.16b, v29.16b, v30.16b, v31.16b}}, [x10], #64",
                    inout("x9") iters => _,
                    inout("x10") out.as_mut_ptr() => _,
                    in("v0") x,
                    in("v1") y,
                    clobber_abi("C"),
                    options(nostack),
                );
            }
            out
        }
    };
}

peak_loop!(
    /// `fmla v.4s`: 4 f32 MACs per instruction.
    fma_accs,
    "neon",
    vdupq_n_f32(1.0),
    vdupq_n_f32(1.0),
    each_acc!("fmla ", ".4s, v0.4s, v1.4s")
);

peak_loop!(
    /// `smlal v.8h, v0.8b, v1.8b` then `smlal2 v.8h, v0.16b, v1.16b`: 8 s8 x s8 MACs each
    /// into int16 lanes, the ARMv8.0 int8 path of `w4a8-neon`.
    smlal_accs,
    "neon",
    vdupq_n_s8(1),
    vdupq_n_s8(1),
    each_acc!("smlal ", ".8h, v0.8b, v1.8b"),
    each_acc!("smlal2 ", ".8h, v0.16b, v1.16b")
);

peak_loop!(
    /// `sdot v.4s, v0.16b, v1.16b`: each int32 lane gains a 4-way s8 dot product, 16 MACs.
    sdot_accs,
    "neon,dotprod",
    vdupq_n_s8(1),
    vdupq_n_s8(1),
    each_acc!("sdot ", ".4s, v0.16b, v1.16b")
);

peak_loop!(
    /// `smmla v.4s, v0.16b, v1.16b`: (2 x 8 s8) by (8 x 2 s8) into 2 x 2 int32, 32 MACs.
    smmla_accs,
    "neon,i8mm",
    vdupq_n_s8(1),
    vdupq_n_s8(1),
    each_acc!("smmla ", ".4s, v0.16b, v1.16b")
);

peak_loop!(
    /// `bfdot v.4s, v0.8h, v1.8h`: each f32 lane gains 2 bf16 products, 8 MACs.
    bfdot_accs,
    "neon,bf16",
    vdupq_n_u16(BF16_ONE),
    vdupq_n_u16(BF16_ONE),
    each_acc!("bfdot ", ".4s, v0.8h, v1.8h")
);

peak_loop!(
    /// `bfmmla v.4s, v0.8h, v1.8h`: (2 x 4 bf16) by (4 x 2 bf16) into 2 x 2 f32, 16 MACs.
    bfmmla_accs,
    "neon,bf16",
    vdupq_n_u16(BF16_ONE),
    vdupq_n_u16(BF16_ONE),
    each_acc!("bfmmla ", ".4s, v0.8h, v1.8h")
);

/// 1.0 in bf16.
const BF16_ONE: u16 = 0x3F80;

#[cfg(test)]
mod tests {
    use super::*;

    /// The lane sum of accumulator `i` (exact while the lanes have not wrapped or rounded).
    fn acc_sum(accs: &Accs, i: usize, lanes: Lanes) -> f64 {
        let v = &accs[16 * i..16 * i + 16];
        match lanes {
            Lanes::F32 => v
                .chunks_exact(4)
                .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]) as f64)
                .sum(),
            Lanes::I32 => v
                .chunks_exact(4)
                .map(|b| i32::from_le_bytes([b[0], b[1], b[2], b[3]]) as f64)
                .sum(),
            Lanes::I16 => v
                .chunks_exact(2)
                .map(|b| i16::from_le_bytes([b[0], b[1]]) as f64)
                .sum(),
        }
    }

    #[test]
    fn every_accumulator_gains_the_macs_the_arm_arm_defines() {
        // The Arm ARM's MACs per 128-bit instruction, independent of the table above.
        let arm_arm = |u: Unit| match u {
            Unit::NeonFma => 4,      // FMLA .4S
            Unit::NeonInt8 => 8,     // SMLAL .8H from .8B, SMLAL2 from the upper .16B
            Unit::NeonDotprod => 16, // SDOT .4S: 4 lanes x 4 products
            Unit::NeonI8mm => 32,    // SMMLA: 2x2 int32, 8 products each
            Unit::NeonBfdot => 8,    // BFDOT .4S: 4 lanes x 2 products
            Unit::NeonBfmmla => 16,  // BFMMLA: 2x2 f32, 4 products each
            other => panic!("{} is not an arm64 unit", other.as_str()),
        };
        let iters = 1000u64;
        let mut ran = 0;
        for s in &SPECS {
            assert_eq!(s.macs_per_instr, arm_arm(s.unit), "{}", s.unit.as_str());
            if !s.needs.iter().all(|&f| cpu::has(f)) {
                continue; // skipped: `units_the_cpu_lacks_say_which_extension` checks why
            }
            // SAFETY: the features were checked just above.
            let accs = unsafe { (s.accs)(iters) };
            let per_chain = iters * s.instrs / CHAINS as u64 * s.macs_per_instr;
            for i in 0..CHAINS {
                assert_eq!(
                    acc_sum(&accs, i, s.lanes),
                    per_chain as f64,
                    "{}: accumulator v{} after {iters} iterations",
                    s.unit.as_str(),
                    8 + i
                );
            }
            let lp = loop_for(s.unit).unwrap();
            assert_eq!(lp.macs * iters, per_chain * CHAINS as u64);
            (lp.run)(3);
            ran += 1;
        }
        assert!(ran >= 2, "fma and int8 run on every arm64 CPU");
        // SAFETY: zero iterations execute no instruction.
        assert!(unsafe { fma_accs(0) }.iter().all(|&b| b == 0));
    }

    #[test]
    fn units_the_cpu_lacks_say_which_extension() {
        for s in &SPECS {
            match loop_for(s.unit) {
                Ok(lp) => assert!(s.needs.iter().all(|&f| cpu::has(f)) && lp.macs > 0),
                Err(why) => {
                    assert!(why.contains(s.what), "{why}");
                    assert!(!s.needs.iter().all(|&f| cpu::has(f)));
                }
            }
        }
        assert!(loop_for(Unit::Avx2Fma).is_err());
    }
}
