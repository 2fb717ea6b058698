//! Activation preparation for the float-accumulating kernels (W4A16 and bf16).
//!
//! The FMA kernels read activations as f32, once per call: bf16 → f32 is a shift, and bf16
//! denormals are flushed to zero here (kernels.md pitfall 7). The flush keeps the FMA
//! paths free of microcode assists and makes them agree with `vdpbf16ps`/`TDPBF16PS`,
//! which treat denormal inputs as zero anyway. The W4A16 zero fold also needs Σa per
//! (token, 128-group), computed here from the flushed values so that `Σ q·a − z·Σa`
//! cancels consistently.
//!
//! Not here: int8 activation quantization (W4A8), which lives with K1's foundation.

use std::cell::RefCell;

use super::acts::Bf16Rows;
use super::bf16::Bf16;
use super::weights::GROUP;

/// bf16 bits → f32, flushing denormals (and keeping the sign of zero).
#[inline]
pub fn bf16_to_f32_daz(b: u16) -> f32 {
    if b & 0x7F80 == 0 {
        f32::from_bits(((b & 0x8000) as u32) << 16)
    } else {
        f32::from_bits((b as u32) << 16)
    }
}

/// Activations `[m][k]` as flushed f32, plus Σa per (row, 128-group) when `k` is a
/// multiple of 128 (empty otherwise).
#[derive(Debug, Clone, Default)]
pub struct ActF32 {
    /// Rows.
    pub m: usize,
    /// Columns (reduction length).
    pub k: usize,
    /// `[m][k]` f32 values, denormals flushed.
    pub a: Vec<f32>,
    /// `[m][k / 128]` sums of `a` over each group (f32, sequential).
    pub sums: Vec<f32>,
}

impl ActF32 {
    /// Converts the rows of `x`.
    pub fn new(x: Bf16Rows<'_>) -> ActF32 {
        let mut out = ActF32::default();
        out.refill(x);
        out
    }

    /// Refills this holder from `x` (no allocation once it has held as many values).
    pub fn refill(&mut self, x: Bf16Rows<'_>) {
        self.m = x.m;
        self.k = x.k;
        self.a.clear();
        self.a
            .extend(x.data.iter().map(|&b: &Bf16| bf16_to_f32_daz(b.0)));
        self.sums.clear();
        if self.k.is_multiple_of(GROUP) && self.k > 0 {
            for row in self.a.chunks_exact(self.k) {
                self.sums
                    .extend(row.chunks_exact(GROUP).map(|g| g.iter().sum::<f32>()));
            }
        }
    }

    /// Number of 128-groups per row (0 when K is not a multiple of 128).
    pub fn groups(&self) -> usize {
        self.k / GROUP
    }
}

thread_local! {
    static CACHE: RefCell<ActF32> = RefCell::new(ActF32::default());
}

/// Runs `f` on the prepared form of `x`, reusing a per-thread holder so that a steady
/// decode loop does not allocate.
pub fn with_act<R>(x: Bf16Rows<'_>, f: impl FnOnce(&ActF32) -> R) -> R {
    CACHE.with(|cell| match cell.try_borrow_mut() {
        Ok(mut act) => {
            act.refill(x);
            f(&act)
        }
        Err(_) => f(&ActF32::new(x)),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flushes_denormals_keeps_normals() {
        assert_eq!(bf16_to_f32_daz(0x0001), 0.0);
        assert!(bf16_to_f32_daz(0x8001).is_sign_negative());
        assert_eq!(bf16_to_f32_daz(0x8001), 0.0);
        assert_eq!(bf16_to_f32_daz(0x3F80), 1.0);
        assert_eq!(bf16_to_f32_daz(0xC000), -2.0);
        assert_eq!(bf16_to_f32_daz(0x0080), f32::MIN_POSITIVE);
    }

    #[test]
    fn group_sums_per_row() {
        let k = 256;
        let a: Vec<Bf16> = (0..2 * k)
            .map(|i| Bf16(if i < k { 0x3F80 } else { 0x4000 }))
            .collect();
        let x = Bf16Rows::new(&a, 2, k).expect("shape matches");
        let act = ActF32::new(x);
        assert_eq!(act.sums, vec![128.0, 128.0, 256.0, 256.0]);
        assert_eq!(with_act(x, |a| a.sums.clone()), act.sums);
    }
}
