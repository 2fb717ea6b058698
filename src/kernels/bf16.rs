//! `Bf16`: the bfloat16 storage type with round-to-nearest-even conversion from f32.
//!
//! bf16 is the top half of an f32. Widening is exact (shift left 16). Narrowing rounds to
//! nearest, ties to even, like `vcvtneps2bf16`; NaN stays a (quiet) NaN instead of rounding
//! into infinity, and values past bf16's range round to ±infinity. No arithmetic is defined
//! on `Bf16`: convert to f32, compute, convert back.

/// A bfloat16 value, stored as its 16 raw bits.
#[repr(transparent)]
#[derive(Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct Bf16(pub u16);

impl Bf16 {
    /// 0.0
    pub const ZERO: Bf16 = Bf16(0);
    /// 1.0
    pub const ONE: Bf16 = Bf16(0x3F80);

    /// Round an f32 to the nearest bf16 (ties to even); NaN maps to a quiet NaN.
    #[inline]
    pub fn from_f32(x: f32) -> Bf16 {
        let bits = x.to_bits();
        if x.is_nan() {
            // Keep the sign and top mantissa bits, force the quiet bit so it stays NaN.
            return Bf16(((bits >> 16) as u16) | 0x0040);
        }
        let round = 0x7FFF + ((bits >> 16) & 1);
        Bf16((bits.wrapping_add(round) >> 16) as u16)
    }

    /// Widen to f32 (exact).
    #[inline]
    pub fn to_f32(self) -> f32 {
        f32::from_bits((self.0 as u32) << 16)
    }

    /// Raw bits.
    #[inline]
    pub fn to_bits(self) -> u16 {
        self.0
    }
}

impl From<Bf16> for f32 {
    fn from(x: Bf16) -> f32 {
        x.to_f32()
    }
}

impl std::fmt::Debug for Bf16 {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}bf16", self.to_f32())
    }
}

/// Convert a slice of f32 to bf16 (RNE).
pub fn to_bf16_vec(x: &[f32]) -> Vec<Bf16> {
    x.iter().map(|&v| Bf16::from_f32(v)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_exact_values() {
        for v in [
            0.0f32,
            -0.0,
            1.0,
            -2.5,
            0.15625,
            3.0e38,
            f32::INFINITY,
            f32::NEG_INFINITY,
        ] {
            let b = Bf16::from_f32(v);
            assert_eq!(Bf16::from_f32(b.to_f32()), b, "{v}");
        }
        assert_eq!(Bf16::from_f32(1.0), Bf16::ONE);
    }

    #[test]
    fn ties_to_even() {
        // 1 + 2^-8 is exactly halfway between 1.0 and 1 + 2^-7: rounds to even (1.0).
        assert_eq!(Bf16::from_f32(1.0 + 1.0 / 256.0).to_f32(), 1.0);
        // 1 + 3·2^-8 is halfway between 1+2^-7 (odd) and 1+2^-6 (even): rounds up.
        assert_eq!(Bf16::from_f32(1.0 + 3.0 / 256.0).to_f32(), 1.0 + 1.0 / 64.0);
        // Just above the halfway point rounds up.
        assert_eq!(
            Bf16::from_f32(f32::from_bits(0x3F80_8001)).to_f32(),
            1.0 + 1.0 / 128.0
        );
    }

    #[test]
    fn nan_and_overflow() {
        assert!(Bf16::from_f32(f32::NAN).to_f32().is_nan());
        // A NaN whose payload sits only in the low 16 bits must not become infinity.
        assert!(
            Bf16::from_f32(f32::from_bits(0x7F80_0001))
                .to_f32()
                .is_nan()
        );
        assert!(
            Bf16::from_f32(f32::from_bits(0xFF80_0001))
                .to_f32()
                .is_nan()
        );
        assert_eq!(Bf16::from_f32(f32::MAX).to_f32(), f32::INFINITY);
        // Denormals survive (bf16 has f32's exponent range).
        let d = f32::from_bits(0x0001_0000);
        assert_eq!(Bf16::from_f32(d).to_f32(), d);
    }
}
