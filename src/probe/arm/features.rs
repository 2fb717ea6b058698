//! arm64 feature table: HWCAP/HWCAP2 bits and their cpuinfo names.
//!
//! HWCAP is the kernel's "this process may execute it" signal, so on a live host it
//! decides `os` and `usable`; the `Features` words are the same bits in text and decide
//! under a sysroot. Both are plain values here, so this compiles and is tested on x86.

use std::collections::BTreeMap;

use crate::arch::arm_hwcap::{FEATURES, Word};
use crate::profile::Feature;

/// Features from live HWCAP values; `cpu`, `os` and `usable` all follow the bit (the
/// kernel sets it only for what it enabled). Returns also the names, as `flags` fallback.
pub fn from_hwcaps(hwcap: u64, hwcap2: u64) -> BTreeMap<String, Feature> {
    FEATURES
        .iter()
        .map(|&(name, word, bit)| {
            let value = match word {
                Word::Hwcap => hwcap,
                Word::Hwcap2 => hwcap2,
            };
            let on = value >> bit & 1 == 1;
            (
                name.to_string(),
                Feature {
                    cpu: on,
                    os: Some(on),
                    usable: on,
                },
            )
        })
        .collect()
}

/// Features from `Features` words (under a sysroot): present means cpu and usable,
/// `os` unknown.
pub fn from_words(words: &[String]) -> BTreeMap<String, Feature> {
    FEATURES
        .iter()
        .map(|&(name, _, _)| {
            let on = words.iter().any(|w| w == name);
            (
                name.to_string(),
                Feature {
                    cpu: on,
                    os: None,
                    usable: on,
                },
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hwcap_bits_are_the_kernel_ones() {
        let hwcap = 1 << 20 | 1 << 22; // asimddp, sve
        let hwcap2 = 1 << 1 | 1 << 13 | 1 << 14 | 1 << 23; // sve2, i8mm, bf16, sme
        let f = from_hwcaps(hwcap, hwcap2);
        for name in ["asimddp", "sve", "sve2", "i8mm", "bf16", "sme"] {
            assert_eq!(
                f[name],
                Feature {
                    cpu: true,
                    os: Some(true),
                    usable: true
                },
                "{name}"
            );
        }
        assert!(!f["asimd"].usable);
        // One bit off: i8mm at 13 must not be read as bf16 at 14.
        let f = from_hwcaps(0, 1 << 13);
        assert!(f["i8mm"].usable && !f["bf16"].usable && !f["sve2"].usable);
    }

    #[test]
    fn words_give_unknown_os() {
        let words: Vec<String> = ["fp", "asimd", "asimddp"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let f = from_words(&words);
        assert_eq!(
            f["asimddp"],
            Feature {
                cpu: true,
                os: None,
                usable: true
            }
        );
        assert_eq!(
            f["i8mm"],
            Feature {
                cpu: false,
                os: None,
                usable: false
            }
        );
    }
}
