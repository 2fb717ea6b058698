//! arm64 feature table (HWCAP/HWCAP2 bits and cpuinfo names) and MIDR names.
//!
//! HWCAP is the kernel's "this process may execute it" signal, so on a live host it
//! decides `os` and `usable`; the `Features` words are the same bits in text and decide
//! under a sysroot. Both are plain values here, so this compiles and is tested on x86.

use std::collections::BTreeMap;

use crate::profile::Feature;

/// Which auxv word a bit lives in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Word {
    Hwcap,
    Hwcap2,
}

/// `/proc/cpuinfo` name, auxv word, bit (Linux `arch/arm64/include/uapi/asm/hwcap.h`).
pub const FEATURES: &[(&str, Word, u32)] = &[
    ("asimd", Word::Hwcap, 1),
    ("asimdhp", Word::Hwcap, 10),
    ("asimddp", Word::Hwcap, 20),
    ("sve", Word::Hwcap, 22),
    ("asimdfhm", Word::Hwcap, 23),
    ("sve2", Word::Hwcap2, 1),
    ("svei8mm", Word::Hwcap2, 9),
    ("svebf16", Word::Hwcap2, 12),
    ("i8mm", Word::Hwcap2, 13),
    ("bf16", Word::Hwcap2, 14),
    ("sme", Word::Hwcap2, 23),
];

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

/// The company behind a MIDR implementer code.
pub fn vendor_name(implementer: &str) -> Option<&'static str> {
    Some(match implementer {
        "0x41" => "ARM",
        "0x42" => "Broadcom",
        "0x43" => "Cavium",
        "0x48" => "HiSilicon",
        "0x4e" => "NVIDIA",
        "0x51" => "Qualcomm",
        "0x61" => "Apple",
        "0x6d" => "Microsoft",
        "0xc0" => "Ampere",
        _ => return None,
    })
}

/// The core behind an implementer/part pair (a short list: the cores edgeplan meets).
pub fn core_name(implementer: &str, part: &str) -> Option<&'static str> {
    Some(match (implementer, part) {
        ("0x41", "0xd03") => "Cortex-A53",
        ("0x41", "0xd05") => "Cortex-A55",
        ("0x41", "0xd08") => "Cortex-A72",
        ("0x41", "0xd0b") => "Cortex-A76",
        ("0x41", "0xd0c") => "Neoverse-N1",
        ("0x41", "0xd0d") => "Cortex-A77",
        ("0x41", "0xd40") => "Neoverse-V1",
        ("0x41", "0xd41") => "Cortex-A78",
        ("0x41", "0xd42") => "Cortex-A78AE",
        ("0x41", "0xd44") => "Cortex-X1",
        ("0x41", "0xd46") => "Cortex-A510",
        ("0x41", "0xd47") => "Cortex-A710",
        ("0x41", "0xd48") => "Cortex-X2",
        ("0x41", "0xd49") => "Neoverse-N2",
        ("0x41", "0xd4d") => "Cortex-A715",
        ("0x41", "0xd4e") => "Cortex-X3",
        ("0x41", "0xd4f") => "Neoverse-V2",
        ("0x41", "0xd80") => "Cortex-A520",
        ("0x41", "0xd81") => "Cortex-A720",
        ("0x41", "0xd82") => "Cortex-X4",
        ("0x41", "0xd84") => "Neoverse-V3",
        ("0x41", "0xd85") => "Cortex-X925",
        ("0x41", "0xd87") => "Cortex-A725",
        ("0x51", "0x001") => "Oryon",
        ("0xc0", "0xac3") => "Ampere-1",
        ("0xc0", "0xac4") => "Ampere-1a",
        _ => return None,
    })
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

    #[test]
    fn names() {
        assert_eq!(vendor_name("0x41"), Some("ARM"));
        assert_eq!(core_name("0x41", "0xd40"), Some("Neoverse-V1"));
        assert_eq!(core_name("0x41", "0xfff"), None);
    }
}
