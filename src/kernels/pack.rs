//! The P64·G128 packed weight layout (kernels.md §1): packer, scalar unpacker and accessors.
//!
//! One layout serves every ISA. Columns are grouped into 64-wide **panels**; a panel is a
//! contiguous run of K/128 **records**, one per group, each [`RECORD_BYTES`] = 4352 bytes:
//!
//! | offset | bytes | content |
//! |---|---|---|
//! | 0    | 4096 | codes: 16 octets `o` (k = 8o..8o+7 of the group) × 4 sub-blocks `j` (16 columns each) × 64 B |
//! | 4096 | 128  | 64 × bf16 scale (column order), little-endian |
//! | 4224 | 128  | 64 × bf16 zero (column order), little-endian, always present |
//!
//! Inside chunk (o, j) at byte `256·o + 64·j`, byte `4c + t` (c = column within the sub-block,
//! t = 0..3) holds `q[k0+t]` in the low nibble and `q[k0+4+t]` in the high nibble
//! (k0 = 128g + 8o). `x & 15` is therefore a VNNI u8 operand for k0..k0+3 of 16 columns and
//! `x >> 4` the one for k0+4..k0+7. N is padded to a multiple of 64 with zero codes, zero
//! scales and zero zeros (padded outputs come out 0 and are never stored). Records start
//! 64-byte aligned (4352 = 68 × 64). docs/kernels.md has the byte-by-byte walk-through.

use super::bf16::Bf16;
use super::buf::AlignedBuf;
use super::weights::{GROUP, QuantWeights};

/// Output columns per panel.
pub const PANEL: usize = 64;
/// Bytes of one (panel, group) record.
pub const RECORD_BYTES: usize = 4352;
/// Bytes of codes at the start of a record.
pub const CODES_BYTES: usize = 4096;
/// Offset of the 64 bf16 scales in a record.
pub const SCALE_OFFSET: usize = 4096;
/// Offset of the 64 bf16 zeros in a record.
pub const ZERO_OFFSET: usize = 4224;
const _: () = assert!(RECORD_BYTES == PANEL * GROUP / 2 + 2 * PANEL * 2);
const _: () = assert!(RECORD_BYTES.is_multiple_of(64));

/// Where code `q[col][k]` lives in its record: (byte offset, high nibble?).
#[inline]
pub const fn code_pos(col_in_panel: usize, k_in_group: usize) -> (usize, bool) {
    let (o, r) = (k_in_group / 8, k_in_group % 8);
    let (j, c) = (col_in_panel / 16, col_in_panel % 16);
    (o * 256 + j * 64 + 4 * c + (r % 4), r >= 4)
}

/// Int4 weights in the P64·G128 layout, 64-byte aligned.
#[derive(Clone, Debug)]
pub struct PackedW4 {
    n: usize,
    k: usize,
    symmetric: bool,
    buf: AlignedBuf<u8>,
}

impl PackedW4 {
    /// Pack unpacked weights (shape already validated by `QuantWeights`).
    pub fn pack(q: &QuantWeights) -> Self {
        let (n, k) = (q.n, q.k);
        let groups = k / GROUP;
        let panels = n.div_ceil(PANEL);
        let mut buf = AlignedBuf::<u8>::zeroed(panels * groups * RECORD_BYTES);
        for col in 0..n {
            let (p, c) = (col / PANEL, col % PANEL);
            for g in 0..groups {
                let rec = &mut buf[(p * groups + g) * RECORD_BYTES..][..RECORD_BYTES];
                for kk in 0..GROUP {
                    let code = q.codes[col * k + g * GROUP + kk] & 0x0F;
                    let (byte, high) = code_pos(c, kk);
                    rec[byte] |= if high { code << 4 } else { code };
                }
                let s = q.scales[col * groups + g].to_bits().to_le_bytes();
                let z = q.zeros[col * groups + g].to_bits().to_le_bytes();
                rec[SCALE_OFFSET + 2 * c..][..2].copy_from_slice(&s);
                rec[ZERO_OFFSET + 2 * c..][..2].copy_from_slice(&z);
            }
        }
        Self {
            n,
            k,
            symmetric: q.is_symmetric(),
            buf,
        }
    }

    /// Scalar unpacker: the exact inverse of [`PackedW4::pack`] (padding dropped).
    pub fn unpack(&self) -> QuantWeights {
        let (n, k, groups) = (self.n, self.k, self.groups());
        let mut codes = vec![0u8; n * k];
        let mut scales = vec![Bf16::ZERO; n * groups];
        let mut zeros = vec![Bf16::ZERO; n * groups];
        for col in 0..n {
            let (p, c) = (col / PANEL, col % PANEL);
            for g in 0..groups {
                let rec = self.record(p, g);
                for kk in 0..GROUP {
                    let (byte, high) = code_pos(c, kk);
                    let b = rec[byte];
                    codes[col * k + g * GROUP + kk] = if high { b >> 4 } else { b & 0x0F };
                }
                scales[col * groups + g] = record_scale(rec, c);
                zeros[col * groups + g] = record_zero(rec, c);
            }
        }
        QuantWeights {
            n,
            k,
            codes,
            scales,
            zeros,
        }
    }

    /// Random valid weights, generated directly in packed form (fast for bench-sized
    /// matrices): uniform codes, scales in [0.001, 0.051), fractional zeros in [0, 15).
    pub fn random(n: usize, k: usize, seed: u64) -> Result<Self, super::error::KernelError> {
        super::weights::check_shape(n, k)?;
        let mut rng = super::fidelity::Rng::new(seed);
        let (groups, panels) = (k / GROUP, n.div_ceil(PANEL));
        let mut buf = AlignedBuf::<u8>::zeroed(panels * groups * RECORD_BYTES);
        for (i, rec) in buf.chunks_exact_mut(RECORD_BYTES).enumerate() {
            let live = PANEL.min(n - (i / groups) * PANEL);
            for chunk in rec[..CODES_BYTES].chunks_exact_mut(8) {
                chunk.copy_from_slice(&rng.next_u64().to_le_bytes());
            }
            for c in 0..PANEL {
                let (s, z) = if c < live {
                    (
                        Bf16::from_f32((0.001 + 0.05 * rng.uniform()) as f32),
                        Bf16::from_f32((15.0 * rng.uniform()) as f32),
                    )
                } else {
                    (Bf16::ZERO, Bf16::ZERO)
                };
                rec[SCALE_OFFSET + 2 * c..][..2].copy_from_slice(&s.to_bits().to_le_bytes());
                rec[ZERO_OFFSET + 2 * c..][..2].copy_from_slice(&z.to_bits().to_le_bytes());
                if c >= live {
                    for kk in 0..GROUP {
                        let (b, high) = code_pos(c, kk);
                        rec[b] &= if high { 0x0F } else { 0xF0 };
                    }
                }
            }
        }
        Ok(Self {
            n,
            k,
            symmetric: false,
            buf,
        })
    }

    /// The sub-matrix made of the first `panels` panels (columns `0..min(64·panels, N)`).
    pub fn first_panels(&self, panels: usize) -> Self {
        let panels = panels.clamp(1, self.panels());
        let len = panels * self.groups() * RECORD_BYTES;
        Self {
            n: self.n.min(panels * PANEL),
            k: self.k,
            symmetric: self.symmetric,
            buf: AlignedBuf::from_slice(&self.buf[..len]),
        }
    }

    /// Output columns (unpadded).
    pub fn n(&self) -> usize {
        self.n
    }
    /// Input features.
    pub fn k(&self) -> usize {
        self.k
    }
    /// Groups per column (K/128).
    pub fn groups(&self) -> usize {
        self.k / GROUP
    }
    /// 64-column panels (N rounded up).
    pub fn panels(&self) -> usize {
        self.n.div_ceil(PANEL)
    }
    /// True when every zero is 8: kernels may use the constant.
    pub fn is_symmetric(&self) -> bool {
        self.symmetric
    }
    /// The whole packed buffer (what a decode step streams).
    pub fn as_bytes(&self) -> &[u8] {
        &self.buf
    }
    /// Packed size in bytes (including N padding).
    pub fn bytes(&self) -> usize {
        self.buf.len()
    }
    /// Record of (panel, group).
    #[inline]
    pub fn record(&self, panel: usize, group: usize) -> &[u8] {
        &self.buf[(panel * self.groups() + group) * RECORD_BYTES..][..RECORD_BYTES]
    }
    /// All records of one panel, in K order.
    #[inline]
    pub fn panel(&self, panel: usize) -> &[u8] {
        let len = self.groups() * RECORD_BYTES;
        &self.buf[panel * len..][..len]
    }
}

/// Scale of column `c` (0..64) stored in a record.
#[inline]
pub fn record_scale(rec: &[u8], c: usize) -> Bf16 {
    Bf16(u16::from_le_bytes([
        rec[SCALE_OFFSET + 2 * c],
        rec[SCALE_OFFSET + 2 * c + 1],
    ]))
}

/// Zero of column `c` (0..64) stored in a record.
#[inline]
pub fn record_zero(rec: &[u8], c: usize) -> Bf16 {
    Bf16(u16::from_le_bytes([
        rec[ZERO_OFFSET + 2 * c],
        rec[ZERO_OFFSET + 2 * c + 1],
    ]))
}

/// Code of (column `c`, k within group) stored in a record.
#[inline]
pub fn record_code(rec: &[u8], c: usize, kk: usize) -> u8 {
    let (byte, high) = code_pos(c, kk);
    if high {
        rec[byte] >> 4
    } else {
        rec[byte] & 0x0F
    }
}

/// bf16 weights `[N][K]` packed for the bf16 baseline path: per 64-column panel, K/2 rows of
/// k-pairs, each row 64 columns × 2 bf16 (VNNI-2 order: `[k even, k odd]` per column), 256 B
/// per row. An AMX-BF16 B tile for 16 columns is 16 rows at a 256 B stride; `vdpbf16ps` reads
/// a row as pairs. N padded to 64 with zeros; K must be even (the path uses K % 128 == 0).
#[derive(Clone, Debug)]
pub struct PackedBf16 {
    n: usize,
    k: usize,
    buf: AlignedBuf<Bf16>,
}

impl PackedBf16 {
    /// Pack row-major bf16 weights `[N][K]` (shape validated by the caller).
    pub fn pack(w: &[Bf16], n: usize, k: usize) -> Self {
        let panels = n.div_ceil(PANEL);
        let mut buf = AlignedBuf::<Bf16>::zeroed(panels * PANEL * k);
        for col in 0..n {
            for kk in 0..k {
                buf[Self::index(k, col, kk)] = w[col * k + kk];
            }
        }
        Self { n, k, buf }
    }

    /// Random bf16 weights generated directly in packed form (fast for bench-sized
    /// matrices): |w| in [2⁻⁷, 2⁻⁶) with random sign and mantissa; padding columns zero.
    pub fn random(n: usize, k: usize, seed: u64) -> Result<Self, super::error::KernelError> {
        super::weights::check_shape(n, k)?;
        let mut rng = super::fidelity::Rng::new(seed);
        let mut buf = AlignedBuf::<Bf16>::zeroed(n.div_ceil(PANEL) * PANEL * k);
        for (row, pairs) in buf.chunks_exact_mut(2 * PANEL).enumerate() {
            let live = PANEL.min(n - (row * 2 / k) * PANEL);
            let mut bits = 0u64;
            for (i, w) in pairs[..2 * live].iter_mut().enumerate() {
                if i % 8 == 0 {
                    bits = rng.next_u64();
                }
                let r = bits >> (8 * (i % 8));
                *w = Bf16(0x3C00 | (r & 0x7F) as u16 | ((r & 0x80) as u16) << 8);
            }
        }
        Ok(Self { n, k, buf })
    }

    /// Position of W[col][kk] in the packed buffer.
    #[inline]
    pub fn index(k: usize, col: usize, kk: usize) -> usize {
        let (p, c) = (col / PANEL, col % PANEL);
        p * PANEL * k + (kk / 2) * 2 * PANEL + 2 * c + (kk % 2)
    }

    /// Row-major `[N][K]` copy (the inverse of `pack`).
    pub fn unpack(&self) -> Vec<Bf16> {
        let mut w = vec![Bf16::ZERO; self.n * self.k];
        for col in 0..self.n {
            for kk in 0..self.k {
                w[col * self.k + kk] = self.buf[Self::index(self.k, col, kk)];
            }
        }
        w
    }

    /// Output columns.
    pub fn n(&self) -> usize {
        self.n
    }
    /// Input features.
    pub fn k(&self) -> usize {
        self.k
    }
    /// 64-column panels.
    pub fn panels(&self) -> usize {
        self.n.div_ceil(PANEL)
    }
    /// Packed elements.
    pub fn as_slice(&self) -> &[Bf16] {
        &self.buf
    }
    /// Packed size in bytes.
    pub fn bytes(&self) -> usize {
        self.buf.len() * 2
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernels::weights::{Scheme, quantize};

    #[test]
    fn code_pos_matches_the_design_table() {
        assert_eq!(code_pos(0, 0), (0, false));
        assert_eq!(code_pos(0, 4), (0, true));
        assert_eq!(code_pos(1, 3), (7, false));
        assert_eq!(code_pos(16, 0), (64, false));
        assert_eq!(code_pos(63, 127), (15 * 256 + 3 * 64 + 60 + 3, true));
        // Every (column, k) maps to a distinct nibble.
        let mut seen = vec![0u8; CODES_BYTES];
        for c in 0..PANEL {
            for kk in 0..GROUP {
                let (b, h) = code_pos(c, kk);
                let bit = if h { 2 } else { 1 };
                assert_eq!(seen[b] & bit, 0);
                seen[b] |= bit;
            }
        }
        assert!(seen.iter().all(|&s| s == 3));
    }

    #[test]
    fn pack_unpack_round_trip() {
        for (n, k) in [(1, 128), (63, 256), (65, 128), (130, 384)] {
            let w: Vec<f32> = (0..n * k)
                .map(|i| ((i * 7919 % 211) as f32 - 105.0) * 0.01)
                .collect();
            let q = quantize(&w, n, k, Scheme::Asymmetric).unwrap();
            let p = PackedW4::pack(&q);
            assert_eq!(p.bytes(), n.div_ceil(64) * (k / 128) * RECORD_BYTES);
            assert_eq!(p.as_bytes().as_ptr() as usize % 64, 0);
            assert_eq!(p.unpack(), q);
        }
    }

    #[test]
    fn random_and_prefix_are_consistent() {
        let p = PackedW4::random(70, 256, 5).unwrap();
        let q = p.unpack();
        assert!(q.codes.iter().all(|&c| c < 16));
        assert_eq!(PackedW4::pack(&q).as_bytes(), p.as_bytes());
        let head = p.first_panels(1);
        assert_eq!(head.n(), 64);
        assert_eq!(head.unpack().codes[..64 * 256], q.codes[..64 * 256]);
    }

    #[test]
    fn padding_is_zero() {
        let q = quantize(&vec![1.0; 3 * 128], 3, 128, Scheme::Symmetric).unwrap();
        let p = PackedW4::pack(&q);
        let rec = p.record(0, 0);
        for c in 3..64 {
            assert_eq!(record_scale(rec, c), Bf16::ZERO);
            assert_eq!(record_zero(rec, c), Bf16::ZERO);
            assert!((0..128).all(|kk| record_code(rec, c, kk) == 0));
        }
    }

    #[test]
    fn bf16_pack_round_trip() {
        let (n, k) = (70, 256);
        let w: Vec<Bf16> = (0..n * k).map(|i| Bf16::from_f32(i as f32)).collect();
        let p = PackedBf16::pack(&w, n, k);
        assert_eq!(p.unpack(), w);
        assert_eq!(p.bytes(), 128 * k * 2);
        // Random weights: live columns in [2^-7, 2^-6), padding columns zero.
        let r = PackedBf16::random(n, k, 3).unwrap();
        assert_eq!(r.bytes(), p.bytes());
        let u = r.unpack();
        assert!(
            u.iter()
                .all(|w| (0.0078125..0.015625).contains(&w.to_f32().abs()))
        );
        let last_panel = &r.as_slice()[PANEL * k..];
        assert!(
            last_panel
                .chunks_exact(2 * PANEL)
                .all(|row| row[2 * (n - PANEL)..].iter().all(|w| w.0 == 0))
        );
    }
}
