//! A 16-lane f32 vocabulary shared by the W4A16 and bf16 kernels (gemm-style: one small
//! set of operations per ISA, one generic algorithm on top).
//!
//! A "lane group" is 16 output columns, the width of one sub-block of the P64·G128 record
//! and of one 64-byte VNNI-2 bf16 row. [`Avx512`] holds it in one zmm; [`Avx2`] in two ymm
//! (columns 0–7 and 8–15, the two 32-byte halves of every 64-byte chunk). Because the
//! kernels in `w4a16_fma.rs`, `bf16_fma.rs` and the AMX panel dequantizer are written once
//! against this trait, the AVX2 instantiation exercises the same index arithmetic that the
//! AVX-512 one runs; only the few lines per method below differ.
//!
//! Not here: the `vdpbf16ps` W4A16 kernel (`w4a16_dpbf16.rs`), which has no AVX2 analogue,
//! and the AMX tile code (`amx_bf16.rs`).
//!
//! Every method is an `#[inline(always)] unsafe fn` without `#[target_feature]`: it is only
//! called from code that is inlined into a `#[target_feature]` function enabling the
//! implementation's features, which is the trait's safety contract (memchr's `Vector` idiom).

use core::arch::x86_64::*;

/// 16 f32 lanes and the 64-byte integer chunk they are decoded from.
///
/// # Safety
///
/// Implementors' methods may only run on a CPU with the implementation's features
/// (`avx2,fma` for [`Avx2`]; `avx512f,avx512bw,avx512bf16` for [`Avx512`]) and must be
/// called from a function compiled with those features enabled; pointer arguments must be
/// valid for the stated number of bytes (no alignment is required).
pub(crate) unsafe trait Lanes16: Copy {
    /// 16 f32 values.
    type F: Copy;
    /// 64 bytes (16 dwords).
    type I: Copy;
    /// A 64-byte code chunk prepared for [`code`](Lanes16::code).
    type P: Copy;

    /// All lanes 0.0.
    unsafe fn zero(self) -> Self::F;
    /// All lanes `x`.
    unsafe fn splat(self, x: f32) -> Self::F;
    /// `a * b + c`, fused.
    unsafe fn fma(self, a: Self::F, b: Self::F, c: Self::F) -> Self::F;
    /// `a + b`.
    unsafe fn add(self, a: Self::F, b: Self::F) -> Self::F;
    /// `a - b`.
    unsafe fn sub(self, a: Self::F, b: Self::F) -> Self::F;
    /// `a * b`.
    unsafe fn mul(self, a: Self::F, b: Self::F) -> Self::F;
    /// Load 64 bytes.
    unsafe fn load_i(self, p: *const u8) -> Self::I;
    /// Store 16 f32.
    unsafe fn store_f(self, p: *mut f32, v: Self::F);
    /// Load 16 bf16 (raw `u16` bits) and widen them to f32 exactly.
    unsafe fn load_bf16(self, p: *const u16) -> Self::F;
    /// Prepares one P64·G128 code chunk (byte `4c + t` of dword `c` holds code k0+t in its
    /// low nibble and k0+4+t in its high nibble) for [`code`](Lanes16::code).
    unsafe fn prep(self, x: Self::I) -> Self::P;
    /// Code k0+t (t = 0..8) of the 16 columns as f32.
    unsafe fn code(self, p: Self::P, t: usize) -> Self::F;
    /// Per dword lane: the low bf16 of the dword as f32 (`x << 16`).
    unsafe fn bf16_lo(self, x: Self::I) -> Self::F;
    /// Per dword lane: the high bf16 of the dword as f32 (`x & 0xFFFF0000`).
    unsafe fn bf16_hi(self, x: Self::I) -> Self::F;
    /// Round both to bf16 (nearest-even, denormals flushed like `vcvtne2ps2bf16`) and store
    /// 64 bytes whose dword `c` is `bf16(lo[c]) | bf16(hi[c]) << 16` (one VNNI-2 row).
    unsafe fn store_bf16_pairs(self, p: *mut u8, lo: Self::F, hi: Self::F);
}

/// AVX2 + FMA: one lane group is two ymm registers.
#[derive(Clone, Copy)]
pub(crate) struct Avx2 {
    _private: (),
}

impl Avx2 {
    /// Proof of support: `Some` only when the CPU runs AVX2 and FMA.
    pub(crate) fn new() -> Option<Self> {
        (is_x86_feature_detected!("avx2") && is_x86_feature_detected!("fma"))
            .then_some(Avx2 { _private: () })
    }
}

/// Round one ymm of f32 to bf16 bits in the low 16 bits of each dword (RNE, FTZ).
///
/// # Safety
///
/// The CPU supports AVX2 and the caller is compiled with it enabled (the [`Lanes16`]
/// contract of [`Avx2`]).
#[inline(always)]
unsafe fn avx2_round_bf16(v: __m256) -> __m256i {
    // SAFETY: only register operations; the caller enabled avx2 (trait contract).
    unsafe {
        let bits = _mm256_castps_si256(v);
        let exp = _mm256_and_si256(bits, _mm256_set1_epi32(0x7F80_0000));
        let is_denormal = _mm256_cmpeq_epi32(exp, _mm256_setzero_si256());
        let sign = _mm256_and_si256(bits, _mm256_set1_epi32(i32::MIN));
        let bits = _mm256_blendv_epi8(bits, sign, is_denormal);
        let lsb = _mm256_and_si256(_mm256_srli_epi32::<16>(bits), _mm256_set1_epi32(1));
        let bias = _mm256_add_epi32(lsb, _mm256_set1_epi32(0x7FFF));
        _mm256_srli_epi32::<16>(_mm256_add_epi32(bits, bias))
    }
}

/// `vpshufb` controls: for t = 0..4, every dword takes byte t of itself, zero-extended.
static BYTE_PICK: [[u8; 32]; 4] = {
    let mut out = [[0x80u8; 32]; 4];
    let mut t = 0;
    while t < 4 {
        let mut c = 0;
        while c < 8 {
            out[t][4 * c] = ((4 * c) % 16 + t) as u8;
            c += 1;
        }
        t += 1;
    }
    out
};

// SAFETY: every method uses only avx2/fma intrinsics; pointer validity is the caller's.
unsafe impl Lanes16 for Avx2 {
    type F = [__m256; 2];
    type I = [__m256i; 2];
    type P = [[__m256i; 2]; 2];

    #[inline(always)]
    unsafe fn zero(self) -> Self::F {
        // SAFETY: register-only; avx2 enabled by the caller.
        unsafe { [_mm256_setzero_ps(); 2] }
    }
    #[inline(always)]
    unsafe fn splat(self, x: f32) -> Self::F {
        // SAFETY: register-only; avx2 enabled by the caller.
        unsafe { [_mm256_set1_ps(x); 2] }
    }
    #[inline(always)]
    unsafe fn fma(self, a: Self::F, b: Self::F, c: Self::F) -> Self::F {
        // SAFETY: register-only; fma enabled by the caller.
        unsafe {
            [
                _mm256_fmadd_ps(a[0], b[0], c[0]),
                _mm256_fmadd_ps(a[1], b[1], c[1]),
            ]
        }
    }
    #[inline(always)]
    unsafe fn add(self, a: Self::F, b: Self::F) -> Self::F {
        // SAFETY: register-only.
        unsafe { [_mm256_add_ps(a[0], b[0]), _mm256_add_ps(a[1], b[1])] }
    }
    #[inline(always)]
    unsafe fn sub(self, a: Self::F, b: Self::F) -> Self::F {
        // SAFETY: register-only.
        unsafe { [_mm256_sub_ps(a[0], b[0]), _mm256_sub_ps(a[1], b[1])] }
    }
    #[inline(always)]
    unsafe fn mul(self, a: Self::F, b: Self::F) -> Self::F {
        // SAFETY: register-only.
        unsafe { [_mm256_mul_ps(a[0], b[0]), _mm256_mul_ps(a[1], b[1])] }
    }
    #[inline(always)]
    unsafe fn load_i(self, p: *const u8) -> Self::I {
        // SAFETY: the caller guarantees 64 readable bytes at p.
        unsafe {
            [
                _mm256_loadu_si256(p.cast()),
                _mm256_loadu_si256(p.add(32).cast()),
            ]
        }
    }
    #[inline(always)]
    unsafe fn store_f(self, p: *mut f32, v: Self::F) {
        // SAFETY: the caller guarantees 16 writable f32 at p.
        unsafe {
            _mm256_storeu_ps(p, v[0]);
            _mm256_storeu_ps(p.add(8), v[1]);
        }
    }
    #[inline(always)]
    unsafe fn load_bf16(self, p: *const u16) -> Self::F {
        // SAFETY: the caller guarantees 32 readable bytes at p.
        unsafe {
            let lo = _mm256_cvtepu16_epi32(_mm_loadu_si128(p.cast()));
            let hi = _mm256_cvtepu16_epi32(_mm_loadu_si128(p.add(8).cast()));
            [
                _mm256_castsi256_ps(_mm256_slli_epi32::<16>(lo)),
                _mm256_castsi256_ps(_mm256_slli_epi32::<16>(hi)),
            ]
        }
    }
    #[inline(always)]
    unsafe fn prep(self, x: Self::I) -> Self::P {
        // SAFETY: register-only. Low nibbles, and high nibbles moved down (a 16-bit shift
        // is enough: the mask drops what crosses from the neighbouring byte).
        unsafe {
            let m = _mm256_set1_epi8(0x0F);
            [
                [_mm256_and_si256(x[0], m), _mm256_and_si256(x[1], m)],
                [
                    _mm256_and_si256(_mm256_srli_epi16::<4>(x[0]), m),
                    _mm256_and_si256(_mm256_srli_epi16::<4>(x[1]), m),
                ],
            ]
        }
    }
    #[inline(always)]
    unsafe fn code(self, p: Self::P, t: usize) -> Self::F {
        // SAFETY: register-only plus a read of the 32-byte constant BYTE_PICK[t % 4];
        // vpshufb zero-extends byte t of every dword (indices with bit 7 set give 0).
        unsafe {
            let src = p[t / 4];
            let pick = _mm256_loadu_si256(BYTE_PICK[t % 4].as_ptr().cast());
            [
                _mm256_cvtepi32_ps(_mm256_shuffle_epi8(src[0], pick)),
                _mm256_cvtepi32_ps(_mm256_shuffle_epi8(src[1], pick)),
            ]
        }
    }
    #[inline(always)]
    unsafe fn bf16_lo(self, x: Self::I) -> Self::F {
        // SAFETY: register-only.
        unsafe {
            [
                _mm256_castsi256_ps(_mm256_slli_epi32::<16>(x[0])),
                _mm256_castsi256_ps(_mm256_slli_epi32::<16>(x[1])),
            ]
        }
    }
    #[inline(always)]
    unsafe fn bf16_hi(self, x: Self::I) -> Self::F {
        // SAFETY: register-only.
        unsafe {
            let m = _mm256_set1_epi32(0xFFFF_0000u32 as i32);
            [
                _mm256_castsi256_ps(_mm256_and_si256(x[0], m)),
                _mm256_castsi256_ps(_mm256_and_si256(x[1], m)),
            ]
        }
    }
    #[inline(always)]
    unsafe fn store_bf16_pairs(self, p: *mut u8, lo: Self::F, hi: Self::F) {
        // SAFETY: the caller guarantees 64 writable bytes at p.
        unsafe {
            for h in 0..2 {
                let l = avx2_round_bf16(lo[h]);
                let u = _mm256_slli_epi32::<16>(avx2_round_bf16(hi[h]));
                _mm256_storeu_si256(p.add(32 * h).cast(), _mm256_or_si256(l, u));
            }
        }
    }
}

/// AVX-512 F/BW/BF16: one lane group is one zmm. Codes are decoded with `vpermps` on a
/// 16-float table (it reads only the low 4 bits of each index, so no `and` is needed).
#[derive(Clone, Copy)]
pub(crate) struct Avx512 {
    lut: __m512,
    interleave: __m512i,
}

impl Avx512 {
    /// Proof of support: `Some` only when the CPU runs AVX-512 F, BW and BF16.
    pub(crate) fn new() -> Option<Self> {
        let ok = is_x86_feature_detected!("avx512f")
            && is_x86_feature_detected!("avx512bw")
            && is_x86_feature_detected!("avx512bf16");
        if !ok {
            return None;
        }
        let lut: [f32; 16] = core::array::from_fn(|i| i as f32);
        // Word i of the result takes word idx[i] of `[bf16(lo) ×16, bf16(hi) ×16]`:
        // even words from lo, odd words from hi, column by column.
        let idx: [u16; 32] = core::array::from_fn(|i| ((i / 2) + 16 * (i % 2)) as u16);
        // SAFETY: avx512f was detected just above; the loads read the local arrays.
        let (lut, interleave) = unsafe { load_consts(&lut, &idx) };
        Some(Avx512 { lut, interleave })
    }
}

/// Loads the two constant vectors of [`Avx512`].
#[target_feature(enable = "avx512f")]
fn load_consts(lut: &[f32; 16], idx: &[u16; 32]) -> (__m512, __m512i) {
    // SAFETY: both arrays are exactly 64 bytes.
    unsafe {
        (
            _mm512_loadu_ps(lut.as_ptr()),
            _mm512_loadu_si512(idx.as_ptr().cast()),
        )
    }
}

// SAFETY: every method uses only avx512f/bw/bf16 intrinsics; pointer validity is the caller's.
unsafe impl Lanes16 for Avx512 {
    type F = __m512;
    type I = __m512i;
    type P = __m512i;

    #[inline(always)]
    unsafe fn zero(self) -> Self::F {
        // SAFETY: register-only; avx512f enabled by the caller.
        unsafe { _mm512_setzero_ps() }
    }
    #[inline(always)]
    unsafe fn splat(self, x: f32) -> Self::F {
        // SAFETY: register-only.
        unsafe { _mm512_set1_ps(x) }
    }
    #[inline(always)]
    unsafe fn fma(self, a: Self::F, b: Self::F, c: Self::F) -> Self::F {
        // SAFETY: register-only.
        unsafe { _mm512_fmadd_ps(a, b, c) }
    }
    #[inline(always)]
    unsafe fn add(self, a: Self::F, b: Self::F) -> Self::F {
        // SAFETY: register-only.
        unsafe { _mm512_add_ps(a, b) }
    }
    #[inline(always)]
    unsafe fn sub(self, a: Self::F, b: Self::F) -> Self::F {
        // SAFETY: register-only.
        unsafe { _mm512_sub_ps(a, b) }
    }
    #[inline(always)]
    unsafe fn mul(self, a: Self::F, b: Self::F) -> Self::F {
        // SAFETY: register-only.
        unsafe { _mm512_mul_ps(a, b) }
    }
    #[inline(always)]
    unsafe fn load_i(self, p: *const u8) -> Self::I {
        // SAFETY: the caller guarantees 64 readable bytes at p.
        unsafe { _mm512_loadu_si512(p.cast()) }
    }
    #[inline(always)]
    unsafe fn store_f(self, p: *mut f32, v: Self::F) {
        // SAFETY: the caller guarantees 16 writable f32 at p.
        unsafe { _mm512_storeu_ps(p, v) }
    }
    #[inline(always)]
    unsafe fn load_bf16(self, p: *const u16) -> Self::F {
        // SAFETY: the caller guarantees 32 readable bytes at p.
        unsafe {
            let w = _mm512_cvtepu16_epi32(_mm256_loadu_si256(p.cast()));
            _mm512_castsi512_ps(_mm512_slli_epi32::<16>(w))
        }
    }
    #[inline(always)]
    unsafe fn prep(self, x: Self::I) -> Self::P {
        x
    }
    #[inline(always)]
    unsafe fn code(self, x: Self::P, t: usize) -> Self::F {
        // SAFETY: register-only; vpermps reads only the low 4 bits of each shifted dword,
        // so no mask is needed. The shift count folds to an immediate after unrolling.
        unsafe {
            let shift = [0, 8, 16, 24, 4, 12, 20, 28][t];
            let idx = _mm512_srl_epi32(x, _mm_cvtsi32_si128(shift));
            _mm512_permutexvar_ps(idx, self.lut)
        }
    }
    #[inline(always)]
    unsafe fn bf16_lo(self, x: Self::I) -> Self::F {
        // SAFETY: register-only.
        unsafe { _mm512_castsi512_ps(_mm512_slli_epi32::<16>(x)) }
    }
    #[inline(always)]
    unsafe fn bf16_hi(self, x: Self::I) -> Self::F {
        // SAFETY: register-only.
        unsafe {
            _mm512_castsi512_ps(_mm512_and_si512(
                x,
                _mm512_set1_epi32(0xFFFF_0000u32 as i32),
            ))
        }
    }
    #[inline(always)]
    unsafe fn store_bf16_pairs(self, p: *mut u8, lo: Self::F, hi: Self::F) {
        // SAFETY: the caller guarantees 64 writable bytes at p; avx512bf16/bw enabled.
        unsafe {
            let packed: __m512i = core::mem::transmute(_mm512_cvtne2ps_pbh(hi, lo));
            let pairs = _mm512_permutexvar_epi16(self.interleave, packed);
            _mm512_storeu_si512(p.cast(), pairs);
        }
    }
}
