//! The real backend: `crate::kernels` (registry, packers, quantizers, thread pool and
//! scalar references) seen through bench's [`Backend`] trait.
//!
//! W4A8 and W4A16 share the P64·G128 packed int4 layout; bf16 uses the VNNI-2 panel
//! layout. The correctness gate is the kernels' own ([`crate::kernels::verify::gate`]):
//! small shapes (N off the 64-column panel, several groups, M above the decode range for
//! prefill variants) against the scalar reference, with the per-path tolerances every
//! kernel test uses.

use super::backend::{Backend, KernelInfo, KernelPath, Parallel, Phase, Scheme};
use super::rng::Rng;
use crate::kernels::bf16::to_bf16_vec;
use crate::kernels::registry::{self, Ready};
use crate::kernels::{Bf16, Bf16Rows, PackedBf16, PackedW4, QuantActs, ThreadPool, cpu};
use crate::kernels::{verify, weights};

/// Packed weights of either layout.
pub enum Packed {
    W4(PackedW4),
    Bf16(PackedBf16),
}

/// Activations: quantized for W4A8, bf16 rows for the others.
pub enum Acts {
    Quant(QuantActs),
    Bf16 { data: Vec<Bf16>, m: usize, k: usize },
}

pub struct KernelsBackend {
    pool: ThreadPool,
}

impl KernelsBackend {
    pub fn new(threads: usize) -> anyhow::Result<KernelsBackend> {
        // The pool requests the AMX permission before spawning its workers.
        let pool = ThreadPool::new(threads)
            .map_err(|e| anyhow::anyhow!("cannot start {threads} worker threads: {e}"))?;
        Ok(KernelsBackend { pool })
    }
}

fn ready(kernel: &KernelInfo) -> anyhow::Result<Ready> {
    Ok(registry::by_name(&kernel.name)?.ready()?)
}

impl Parallel for KernelsBackend {
    fn workers(&self) -> usize {
        self.pool.threads()
    }

    fn run(&self, f: &(dyn Fn(usize, usize) + Sync)) {
        self.pool.run(|w| f(w.index, w.threads));
    }
}

impl Backend for KernelsBackend {
    type Weights = Packed;
    type Input = Acts;

    fn kernels(&self) -> Vec<KernelInfo> {
        registry::all()
            .iter()
            .map(|v| {
                let path = v.path();
                let missing = v.missing();
                KernelInfo {
                    name: v.name.to_string(),
                    path,
                    phases: [Phase::Decode, Phase::Prefill]
                        .into_iter()
                        .filter(|&p| v.serves(p))
                        .collect(),
                    unit: v.unit,
                    unavailable: (!missing.is_empty())
                        .then(|| format!("missing {}", missing.join(", "))),
                    rank: v.rank,
                }
            })
            .collect()
    }

    fn verify(&self, kernel: &KernelInfo) -> Result<(), String> {
        let r = ready(kernel).map_err(|e| e.to_string())?;
        verify::gate(&r, &self.pool).map_err(|e| e.to_string())
    }

    fn pack(
        &self,
        path: KernelPath,
        w: &[f32],
        n: usize,
        k: usize,
        scheme: Scheme,
    ) -> anyhow::Result<Packed> {
        Ok(match path {
            KernelPath::W4A8 | KernelPath::W4A16 => {
                Packed::W4(PackedW4::pack(&weights::quantize(w, n, k, scheme)?))
            }
            KernelPath::Bf16 => {
                anyhow::ensure!(
                    w.len() == n * k,
                    "bf16 weights hold {} values, {n}x{k} needs {}",
                    w.len(),
                    n * k
                );
                Packed::Bf16(PackedBf16::pack(&to_bf16_vec(w), n, k))
            }
        })
    }

    fn synthetic(&self, path: KernelPath, n: usize, k: usize, seed: u64) -> anyhow::Result<Packed> {
        weights::check_shape(n, k)?;
        let mut rng = Rng::new(seed);
        Ok(match path {
            // Generated directly in packed form: no unpacked staging.
            KernelPath::W4A8 | KernelPath::W4A16 => Packed::W4(PackedW4::random(n, k, seed)?),
            KernelPath::Bf16 => {
                let mut w = Vec::with_capacity(n * k);
                while w.len() < n * k {
                    let mut r = rng.next_u64();
                    for _ in 0..(n * k - w.len()).min(8) {
                        // |w| in [2^-7, 2^-6) with a random sign and mantissa.
                        w.push(Bf16(0x3C00 | (r & 0x7F) as u16 | ((r & 0x80) as u16) << 8));
                        r >>= 8;
                    }
                }
                Packed::Bf16(PackedBf16::pack(&w, n, k))
            }
        })
    }

    fn duplicate(&self, w: &Packed) -> Packed {
        match w {
            Packed::W4(p) => Packed::W4(p.clone()),
            Packed::Bf16(p) => Packed::Bf16(p.clone()),
        }
    }

    fn weight_bytes(&self, w: &Packed) -> usize {
        match w {
            Packed::W4(p) => p.bytes(),
            Packed::Bf16(p) => p.bytes(),
        }
    }

    fn input(&self, path: KernelPath, x: &[f32], m: usize, k: usize) -> anyhow::Result<Acts> {
        let data = to_bf16_vec(x);
        Ok(match path {
            KernelPath::W4A8 => Acts::Quant(QuantActs::quantize(Bf16Rows::new(&data, m, k)?)?),
            _ => {
                Bf16Rows::new(&data, m, k)?;
                Acts::Bf16 { data, m, k }
            }
        })
    }

    fn gemm(
        &self,
        kernel: &KernelInfo,
        w: &Packed,
        x: &Acts,
        out: &mut [f32],
    ) -> anyhow::Result<()> {
        let r = ready(kernel)?;
        match (kernel.path, w, x) {
            (KernelPath::W4A8, Packed::W4(w), Acts::Quant(a)) => r.w4a8(&self.pool, w, a, out)?,
            (KernelPath::W4A16, Packed::W4(w), Acts::Bf16 { data, m, k }) => {
                r.w4a16(&self.pool, w, Bf16Rows::new(data, *m, *k)?, out)?
            }
            (KernelPath::Bf16, Packed::Bf16(w), Acts::Bf16 { data, m, k }) => {
                r.bf16(&self.pool, w, Bf16Rows::new(data, *m, *k)?, out)?
            }
            (path, _, _) => anyhow::bail!(
                "kernel {} ({path}) was given operands of another path",
                kernel.name
            ),
        }
        Ok(())
    }

    fn amx_ready(&self) -> Result<(), String> {
        cpu::amx_permission().map_err(|missing| format!("missing {missing}"))
    }

    fn executor(&self) -> &'static str {
        "real"
    }

    fn bandwidth_bytes(&self, l3_bytes: u64) -> u64 {
        super::bandwidth::buffer_bytes(l3_bytes)
    }

    fn peaks_skipped(&self) -> Option<&'static str> {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_available_variant_passes_the_gate_and_synthetic_weights_run() {
        let b = KernelsBackend::new(2).unwrap();
        for k in b.kernels().iter().filter(|k| k.unavailable.is_none()) {
            b.verify(k).unwrap_or_else(|e| panic!("{}: {e}", k.name));
            let w = b.synthetic(k.path, 100, 256, 1).unwrap();
            let x = b.input(k.path, &vec![0.5; 256], 1, 256).unwrap();
            let mut out = vec![0.0; 100];
            if k.serves(Phase::Decode) {
                b.gemm(k, &w, &x, &mut out).unwrap();
                assert!(out.iter().all(|v| v.is_finite()));
            }
        }
    }
}
