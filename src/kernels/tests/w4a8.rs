//! W4A8 through the harness: every registered W4A8 variant the host can run against the
//! exact integer identity ([`Expected::w4a8`]). Shapes cross the row block, panel and group
//! boundaries; data is seeded (seed in every message) plus extremes; registry and
//! override behaviour.

use super::{pool, runnable};
use crate::kernels::acts::{Bf16Rows, QuantActs};
use crate::kernels::bf16::Bf16;
use crate::kernels::fidelity::Rng;
use crate::kernels::pack::PackedW4;
use crate::kernels::panel_split::Grid;
use crate::kernels::registry::{self, KernelPath, Ready};
use crate::kernels::verify::Expected;
use crate::kernels::weights::{GROUP, QuantWeights};

/// How zeros are drawn for random weights.
#[derive(Clone, Copy, Debug)]
enum Zeros {
    Eight,
    Integer,
    Fractional,
}

fn random_weights(n: usize, k: usize, zeros: Zeros, rng: &mut Rng) -> QuantWeights {
    let groups = k / GROUP;
    let codes = (0..n * k).map(|_| rng.below(16) as u8).collect();
    let scales = (0..n * groups)
        .map(|_| Bf16::from_f32((0.001 + 0.05 * rng.uniform()) as f32))
        .collect();
    let zeros = (0..n * groups)
        .map(|_| {
            Bf16::from_f32(match zeros {
                Zeros::Eight => 8.0,
                Zeros::Integer => rng.below(16) as f32,
                Zeros::Fractional => (rng.uniform() * 15.0) as f32,
            })
        })
        .collect();
    QuantWeights::from_parts(n, k, codes, scales, zeros).expect("valid random weights")
}

fn random_acts(m: usize, k: usize, rng: &mut Rng) -> QuantActs {
    let x: Vec<Bf16> = (0..m * k)
        .map(|_| Bf16::from_f32((rng.normal() * 2.0) as f32))
        .collect();
    QuantActs::quantize(Bf16Rows::new(&x, m, k).expect("shape")).expect("finite")
}

fn check_w4a8(
    kern: &Ready,
    threads: usize,
    w: &QuantWeights,
    a: &QuantActs,
    what: &str,
) -> Vec<f32> {
    let packed = PackedW4::pack(w);
    let mut out = vec![f32::NAN; a.m() * w.n];
    kern.w4a8(pool(threads), &packed, a, &mut out)
        .expect("shapes agree");
    if let Err(e) = Expected::w4a8(w, a).check(&out) {
        panic!(
            "{} ({threads} threads) {what} M={} N={} K={}: {e}",
            kern.name(),
            a.m(),
            w.n,
            w.k
        );
    }
    out
}

const MS: [usize; 15] = [1, 2, 3, 4, 5, 15, 16, 17, 31, 32, 33, 64, 127, 128, 129];

#[test]
fn w4a8_every_m_against_exact_reference() {
    for kern in runnable(KernelPath::W4A8) {
        for (i, &m) in MS.iter().enumerate() {
            let seed = 1000 + i as u64;
            let mut rng = Rng::new(seed);
            for (n, zeros) in [(1, Zeros::Eight), (65, Zeros::Fractional)] {
                let w = random_weights(n, 256, zeros, &mut rng);
                let a = random_acts(m, 256, &mut rng);
                check_w4a8(&kern, 2, &w, &a, &format!("seed {seed} {zeros:?}"));
            }
        }
    }
}

#[test]
fn w4a8_panel_and_group_edges() {
    for kern in runnable(KernelPath::W4A8) {
        let mut seed = 2000;
        for m in [1, 4, 17] {
            for n in [63, 200] {
                for k in [128, 384, 2048] {
                    seed += 1;
                    let mut rng = Rng::new(seed);
                    let w = random_weights(n, k, Zeros::Integer, &mut rng);
                    let a = random_acts(m, k, &mut rng);
                    check_w4a8(&kern, 2, &w, &a, &format!("seed {seed}"));
                }
            }
        }
        for m in [1, 33] {
            let mut rng = Rng::new(3000 + m as u64);
            let w = random_weights(65, 6144, Zeros::Fractional, &mut rng);
            let a = random_acts(m, 6144, &mut rng);
            check_w4a8(&kern, 2, &w, &a, &format!("seed {}", 3000 + m));
        }
    }
}

#[test]
fn w4a8_extremes() {
    let (n, k) = (70, 256);
    let groups = k / GROUP;
    for kern in runnable(KernelPath::W4A8) {
        for code in [0u8, 15] {
            for act in [127i8, -127] {
                for z in [0.0f32, 8.0, 15.0, 7.5, 0.375] {
                    let w = QuantWeights::from_parts(
                        n,
                        k,
                        vec![code; n * k],
                        vec![Bf16::from_f32(0.0625); n * groups],
                        vec![Bf16::from_f32(z); n * groups],
                    )
                    .expect("valid");
                    let m = 5;
                    let mut codes = vec![act; m * k];
                    codes[2 * k..3 * k].fill(0); // an all-zero row
                    let a = QuantActs::from_codes(&codes, &vec![1.0 / 127.0; m * groups], m, k)
                        .expect("valid");
                    check_w4a8(&kern, 2, &w, &a, &format!("code {code} act {act} zero {z}"));
                }
            }
        }
        // Denormal, huge and all-zero activations through the quantizer.
        let mut rng = Rng::new(4242);
        let w = random_weights(n, k, Zeros::Fractional, &mut rng);
        for (label, v) in [("denormal", 1.0e-39f32), ("huge", 1.0e34), ("zero", 0.0)] {
            let m = 3;
            let x: Vec<Bf16> = (0..m * k)
                .map(|i| {
                    Bf16::from_f32(if i % 3 == 0 {
                        -v
                    } else {
                        v * ((i % 7) as f32 / 7.0)
                    })
                })
                .collect();
            let a = QuantActs::quantize(Bf16Rows::new(&x, m, k).unwrap()).unwrap();
            let out = check_w4a8(&kern, 2, &w, &a, label);
            assert!(
                out.iter().all(|o| o.is_finite()),
                "{} {label}: non-finite output",
                kern.name()
            );
        }
    }
}

#[test]
fn w4a8_threads_agree() {
    for kern in runnable(KernelPath::W4A8) {
        for (m, n, k) in [(1, 200, 384), (3, 65, 2048), (33, 64, 256), (1, 1, 1024)] {
            let seed = 5000 + (m * n + k) as u64;
            let mut rng = Rng::new(seed);
            let w = random_weights(n, k, Zeros::Fractional, &mut rng);
            let a = random_acts(m, k, &mut rng);
            let one = check_w4a8(&kern, 1, &w, &a, &format!("seed {seed}"));
            for t in [2, 3] {
                let many = check_w4a8(&kern, t, &w, &a, &format!("seed {seed}"));
                let panels = n.div_ceil(64);
                if Grid::new(panels, k / GROUP, t, 1).splits == 1 {
                    assert_eq!(
                        one,
                        many,
                        "{} {t} threads differ from 1 thread (seed {seed})",
                        kern.name()
                    );
                }
            }
        }
    }
}

#[test]
fn registry_names_are_unique_and_forceable() {
    let all = registry::all();
    for (i, v) in all.iter().enumerate() {
        assert!(
            all[i + 1..].iter().all(|o| o.name != v.name),
            "duplicate {}",
            v.name
        );
        assert_eq!(registry::by_name(v.name).unwrap().name, v.name);
        assert!(
            v.name.starts_with(v.path().name()),
            "{} must start with its path",
            v.name
        );
        match v.ready() {
            Ok(_) => assert!(v.missing().is_empty()),
            Err(e) => assert!(e.to_string().contains("missing"), "{e}"),
        }
    }
    assert!(registry::by_name("no-such-kernel").is_err());
    let best = registry::select(KernelPath::W4A8, 1).unwrap();
    assert!(best.variant().is_available());
    // A W4A8 variant refuses to run another path.
    let scalar = registry::by_name("w4a8-scalar").unwrap().ready().unwrap();
    let x = vec![Bf16::ONE; 128];
    let w = PackedW4::pack(
        &QuantWeights::from_parts(1, 128, vec![1; 128], vec![Bf16::ONE], vec![Bf16::ONE]).unwrap(),
    );
    let mut out = vec![0.0; 1];
    assert!(
        scalar
            .w4a16(pool(1), &w, Bf16Rows::new(&x, 1, 128).unwrap(), &mut out)
            .is_err()
    );
    // Shape mismatches are errors, not panics.
    let a = QuantActs::quantize(Bf16Rows::new(&x, 1, 128).unwrap()).unwrap();
    let mut wrong = vec![0.0; 2];
    assert!(scalar.w4a8(pool(1), &w, &a, &mut wrong).is_err());
}

#[test]
fn override_forces_or_explains() {
    let forced = registry::select_with(KernelPath::W4A8, 128, Some("w4a8-scalar")).unwrap();
    assert_eq!(forced.name(), "w4a8-scalar");
    assert!(matches!(
        registry::select_with(KernelPath::W4A8, 1, Some("w4a8-nope")),
        Err(crate::kernels::error::KernelError::UnknownKernel(_))
    ));
    // Every unavailable variant is refused with the features it lacks.
    for v in registry::for_path(KernelPath::W4A8).filter(|v| !v.is_available()) {
        match registry::select_with(KernelPath::W4A8, 1, Some(v.name)) {
            Err(crate::kernels::error::KernelError::Unavailable { missing, .. }) => {
                assert!(!missing.is_empty())
            }
            other => panic!("{}: expected Unavailable, got {other:?}", v.name),
        }
    }
    // Without an override the default serves the phase of M and is available.
    for m in [1, 4, 5, 512] {
        let r = registry::select_with(KernelPath::W4A8, m, None).unwrap();
        assert!(r.variant().is_available());
    }
}
