//! The arm64 HWCAP/HWCAP2 bit table: which auxv word and bit carries each extension, by
//! its `/proc/cpuinfo` name (Linux `arch/arm64/include/uapi/asm/hwcap.h`). One table for
//! the probe (which reports the features) and the kernels (which dispatch on them), so a
//! profile and the kernel list of one host cannot disagree. Plain data: it compiles and is
//! tested on every target.

/// Which auxv word a bit lives in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Word {
    Hwcap,
    Hwcap2,
}

/// `/proc/cpuinfo` name, auxv word, bit.
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

/// Whether the auxv words set the bit of the feature named `name`; `None` for a name
/// the table does not know.
#[cfg_attr(not(target_arch = "aarch64"), allow(dead_code))] // the kernels' dispatch is arm64-only
pub fn is_set(name: &str, hwcap: u64, hwcap2: u64) -> Option<bool> {
    FEATURES
        .iter()
        .find(|(n, _, _)| *n == name)
        .map(|&(_, word, bit)| {
            let value = match word {
                Word::Hwcap => hwcap,
                Word::Hwcap2 => hwcap2,
            };
            value >> bit & 1 == 1
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bits_follow_hwcap_h() {
        assert_eq!(is_set("asimd", 1 << 1, 0), Some(true));
        assert_eq!(is_set("asimddp", 1 << 20, 0), Some(true));
        assert_eq!(is_set("i8mm", 0, 1 << 13), Some(true));
        assert_eq!(
            is_set("bf16", 1 << 14, 0),
            Some(false),
            "bf16 is an HWCAP2 bit"
        );
        assert_eq!(is_set("no-such-feature", u64::MAX, u64::MAX), None);
    }
}
