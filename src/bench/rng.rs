//! A tiny seeded generator (SplitMix64) for weights and activations, so every run and
//! every failure reproduces from its seed. The bit stream is the kernels' generator; this
//! wrapper adds the bench's f32 uniform and bounded normal draws. Not for anything that needs real randomness.

/// SplitMix64 (the kernels' generator, [`crate::kernels::fidelity::Rng`], same seeding and
/// stream) with the f32 draws the bench's workloads use.
#[derive(Debug, Clone)]
pub struct Rng(crate::kernels::fidelity::Rng);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(crate::kernels::fidelity::Rng::new(seed))
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0.next_u64()
    }

    /// Uniform in [0, 1).
    pub fn uniform(&mut self) -> f32 {
        (self.next_u64() >> 40) as f32 / (1u64 << 24) as f32
    }

    /// Approximately standard normal (sum of four uniforms, rescaled): cheap, bounded.
    pub fn normal(&mut self) -> f32 {
        let s: f32 = (0..4).map(|_| self.uniform()).sum();
        (s - 2.0) * 3.0f32.sqrt()
    }

    /// `len` values of `scale · normal()`.
    pub fn normals(&mut self, len: usize, scale: f32) -> Vec<f32> {
        (0..len).map(|_| scale * self.normal()).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stream_is_splitmix64() {
        // Reference values of SplitMix64 seeded with 0 (state 0 after the seed mix).
        let mut r = Rng::new(0x9E37_79B9_7F4A_7C15);
        assert_eq!(r.next_u64(), 0xE220_A839_7B1D_CDAF);
    }

    #[test]
    fn same_seed_same_stream() {
        let (mut a, mut b) = (Rng::new(7), Rng::new(7));
        assert_eq!(a.next_u64(), b.next_u64());
        assert_ne!(Rng::new(7).next_u64(), Rng::new(8).next_u64());
    }

    #[test]
    fn normals_have_unit_variance_roughly() {
        let v = Rng::new(1).normals(100_000, 1.0);
        let mean = v.iter().sum::<f32>() / v.len() as f32;
        let var = v.iter().map(|x| (x - mean) * (x - mean)).sum::<f32>() / v.len() as f32;
        assert!(mean.abs() < 0.02, "{mean}");
        assert!((var - 1.0).abs() < 0.05, "{var}");
    }
}
