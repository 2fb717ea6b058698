//! A streaming read of a `u64` buffer with 32-byte AVX2 loads and four independent
//! accumulators, the way the GEMV kernels read packed weights. The bench's bandwidth probe
//! and the kernels' own timing harness both use it to measure read bandwidth.

use core::arch::x86_64::*;

/// Wrapping sum of `words` with AVX2 loads, or `None` when this CPU has no AVX2.
pub fn sum_avx2(words: &[u64]) -> Option<u64> {
    if !is_x86_feature_detected!("avx2") {
        return None;
    }
    // SAFETY: AVX2 was detected just above.
    Some(unsafe { sum_avx2_tf(words) })
}

#[target_feature(enable = "avx2")]
fn sum_avx2_tf(words: &[u64]) -> u64 {
    let mut acc = [_mm256_setzero_si256(); 4];
    let blocks = words.chunks_exact(16);
    let tail: u64 = blocks.remainder().iter().fold(0, |a, &w| a.wrapping_add(w));
    for b in blocks {
        for (i, a) in acc.iter_mut().enumerate() {
            // SAFETY: `b` holds 16 u64; lane group `i` covers words 4i..4i+4 inside it,
            // and `loadu` has no alignment requirement.
            let v = unsafe { _mm256_loadu_si256(b.as_ptr().add(4 * i).cast()) };
            *a = _mm256_add_epi64(*a, v);
        }
    }
    let mut lanes = [0u64; 16];
    for (i, a) in acc.iter().enumerate() {
        // SAFETY: `lanes[4i..4i+4]` is 32 writable bytes; `storeu` needs no alignment.
        unsafe { _mm256_storeu_si256(lanes.as_mut_ptr().add(4 * i).cast(), *a) };
    }
    lanes.iter().fold(tail, |s, &w| s.wrapping_add(w))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn avx2_sum_matches_the_plain_sum() {
        let v: Vec<u64> = (0..1000u64)
            .map(|i| i.wrapping_mul(0x9E37_79B9_7F4A_7C15))
            .collect();
        if let Some(s) = sum_avx2(&v) {
            assert_eq!(s, v.iter().fold(0u64, |a, &w| a.wrapping_add(w)));
        }
    }
}
