//! `/proc/cpuinfo`, parsed the same way whatever the host architecture.
//!
//! The file is a list of blank-line-separated blocks of `key : value` lines, one per
//! logical CPU (x86: `vendor_id`, `model name`, `flags`; arm64: `CPU implementer`,
//! `CPU part`, `Features`, plus trailing machine-wide keys such as `Hardware` or
//! `Serial`). The parser keeps what it understands and skips anything else (garbage,
//! binary bytes, NULs), so a damaged file yields fewer facts, never an error.
//! Deciding the architecture from it is [`CpuInfo::arch`]'s job.

use std::collections::BTreeSet;

use crate::profile::Arch;

/// The facts edgeplan takes from `/proc/cpuinfo`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CpuInfo {
    /// Number of `processor` entries.
    pub processors: u32,
    pub vendor_id: Option<String>,
    pub model_name: Option<String>,
    pub family: Option<u32>,
    pub model: Option<u32>,
    pub stepping: Option<u32>,
    /// x86 `flags`, first CPU's list (they agree on every real machine).
    pub flags: Option<Vec<String>>,
    /// arm64 `Features`, the intersection over CPUs (big.LITTLE cores may differ).
    pub features: Option<Vec<String>>,
    pub implementer: Option<String>,
    /// Distinct `CPU part` values in order of appearance.
    pub parts: Vec<String>,
    /// arm `Hardware` (old Android kernels) or `Model` (Raspberry Pi).
    pub hardware: Option<String>,
    /// Distinct (`physical id`, `core id`) pairs (x86); 0 when the file has none.
    pub physical_cores: u32,
}

impl CpuInfo {
    pub fn parse(text: &str) -> CpuInfo {
        let mut info = CpuInfo::default();
        let mut features: Option<BTreeSet<String>> = None;
        let mut feature_order: Vec<String> = Vec::new();
        let mut cores: BTreeSet<(u32, u32)> = BTreeSet::new();
        let mut package: Option<u32> = None;
        for line in text.lines() {
            let Some((key, value)) = line.split_once(':') else {
                continue;
            };
            let key = key.trim().trim_matches('\0');
            let value = value.trim().trim_matches('\0').trim();
            if key.is_empty() || key.len() > 40 || key.chars().any(|c| c.is_control()) {
                continue;
            }
            match key {
                "processor" if value.parse::<u32>().is_ok() => info.processors += 1,
                "vendor_id" => set_once(&mut info.vendor_id, value),
                "model name" => set_once(&mut info.model_name, value),
                "cpu family" => set_num(&mut info.family, value),
                "model" => set_num(&mut info.model, value),
                "stepping" => set_num(&mut info.stepping, value),
                "flags" if info.flags.is_none() => info.flags = Some(words(value)),
                "Features" => {
                    let words = words(value);
                    if feature_order.is_empty() {
                        feature_order = words.clone();
                    }
                    let set: BTreeSet<String> = words.into_iter().collect();
                    features = Some(match features {
                        None => set,
                        Some(prev) => prev.intersection(&set).cloned().collect(),
                    });
                }
                "CPU implementer" => set_once(&mut info.implementer, &value.to_lowercase()),
                "CPU part" => {
                    let part = value.to_lowercase();
                    if is_hex(&part) && !info.parts.contains(&part) {
                        info.parts.push(part);
                    }
                }
                "Hardware" | "Model" => set_once(&mut info.hardware, value),
                "physical id" => package = value.parse().ok(),
                "core id" => {
                    if let (Some(p), Ok(c)) = (package, value.parse()) {
                        cores.insert((p, c));
                    }
                }
                _ => {}
            }
        }
        info.physical_cores = u32::try_from(cores.len()).unwrap_or(u32::MAX);
        if let Some(set) = features {
            info.features = Some(
                feature_order
                    .into_iter()
                    .filter(|f| set.contains(f))
                    .collect(),
            );
        }
        if info.implementer.as_deref().is_some_and(|i| !is_hex(i)) {
            info.implementer = None;
        }
        info
    }

    /// The architecture the file describes: `flags` or `vendor_id` mean x86_64,
    /// `Features` or `CPU implementer` mean aarch64. `None` when it says neither.
    pub fn arch(&self) -> Option<Arch> {
        let x86 = self.flags.as_ref().is_some_and(|f| !f.is_empty()) || self.vendor_id.is_some();
        let arm =
            self.features.as_ref().is_some_and(|f| !f.is_empty()) || self.implementer.is_some();
        match (x86, arm) {
            (true, false) => Some(Arch::X86_64),
            (false, true) => Some(Arch::Aarch64),
            _ => None,
        }
    }

    /// The feature words for the architecture: `flags` on x86, `Features` on arm64.
    pub fn words_for(&self, arch: Arch) -> Option<&[String]> {
        match arch {
            Arch::X86_64 => self.flags.as_deref(),
            Arch::Aarch64 => self.features.as_deref(),
        }
    }
}

fn set_once(slot: &mut Option<String>, value: &str) {
    if slot.is_none() && !value.is_empty() && !value.chars().any(|c| c.is_control()) {
        *slot = Some(value.to_string());
    }
}

fn set_num(slot: &mut Option<u32>, value: &str) {
    if slot.is_none() {
        *slot = value.parse().ok();
    }
}

fn is_hex(text: &str) -> bool {
    text.strip_prefix("0x")
        .is_some_and(|digits| !digits.is_empty() && digits.chars().all(|c| c.is_ascii_hexdigit()))
}

/// Flag words: lower-case ASCII identifiers only, so binary junk never becomes a flag.
fn words(value: &str) -> Vec<String> {
    let mut seen = BTreeSet::new();
    value
        .split_ascii_whitespace()
        .filter(|w| w.len() <= 40 && w.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_'))
        .filter(|w| seen.insert(w.to_string()))
        .map(str::to_string)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const X86: &str = "processor\t: 0\nvendor_id\t: GenuineIntel\ncpu family\t: 6\nmodel\t\t: 143\nmodel name\t: Intel(R) Xeon(R) Gold 5416S\nstepping\t: 8\nflags\t\t: fpu avx2 avx512f amx_tile\n\nprocessor\t: 1\nvendor_id\t: GenuineIntel\nflags\t\t: fpu avx2 avx512f amx_tile\n\n";

    const ARM: &str = "processor\t: 0\nBogoMIPS\t: 2000.00\nFeatures\t: fp asimd asimddp i8mm bf16 sve\nCPU implementer\t: 0x41\nCPU architecture: 8\nCPU variant\t: 0x1\nCPU part\t: 0xd40\n\nprocessor\t: 1\nFeatures\t: fp asimd asimddp i8mm bf16\nCPU implementer\t: 0x41\nCPU part\t: 0xd81\n\nHardware\t: Qualcomm Technologies, Inc SM8650\n";

    #[test]
    fn parses_x86() {
        let info = CpuInfo::parse(X86);
        assert_eq!(info.processors, 2);
        assert_eq!(info.vendor_id.as_deref(), Some("GenuineIntel"));
        assert_eq!(
            info.model_name.as_deref(),
            Some("Intel(R) Xeon(R) Gold 5416S")
        );
        assert_eq!(
            (info.family, info.model, info.stepping),
            (Some(6), Some(143), Some(8))
        );
        assert_eq!(
            info.flags.as_ref().unwrap(),
            &["fpu", "avx2", "avx512f", "amx_tile"]
        );
        assert_eq!(info.arch(), Some(Arch::X86_64));
        assert_eq!(info.physical_cores, 0, "no physical id / core id lines");
        let smt = "processor : 0\nphysical id : 0\ncore id : 0\n\nprocessor : 1\nphysical id : 0\ncore id : 0\n\nprocessor : 2\nphysical id : 1\ncore id : 0\n";
        assert_eq!(CpuInfo::parse(smt).physical_cores, 2);
    }

    #[test]
    fn parses_arm_and_intersects_features() {
        let info = CpuInfo::parse(ARM);
        assert_eq!(info.processors, 2);
        assert_eq!(
            info.features.as_ref().unwrap(),
            &["fp", "asimd", "asimddp", "i8mm", "bf16"]
        );
        assert_eq!(info.implementer.as_deref(), Some("0x41"));
        assert_eq!(info.parts, vec!["0xd40", "0xd81"]);
        assert_eq!(
            info.hardware.as_deref(),
            Some("Qualcomm Technologies, Inc SM8650")
        );
        assert_eq!(info.arch(), Some(Arch::Aarch64));
    }

    #[test]
    fn garbage_gives_nothing() {
        let junk =
            "\0\0\u{1}\u{fffd}flags\u{0}: \u{fffd}\u{fffd}\nrandom: words\n:::\n\nprocessor: x\n";
        let info = CpuInfo::parse(junk);
        assert_eq!(info.arch(), None);
        assert_eq!(info.processors, 0);
        assert_eq!(CpuInfo::parse("").arch(), None);
        let bytes: Vec<u8> = (0..=255u8).cycle().take(5000).collect();
        let info = CpuInfo::parse(&String::from_utf8_lossy(&bytes));
        assert_eq!(info.arch(), None);
    }

    #[test]
    fn both_kinds_of_line_is_ambiguous() {
        let info = CpuInfo::parse("flags : avx2\nFeatures : asimd\n");
        assert_eq!(info.arch(), None);
    }
}
