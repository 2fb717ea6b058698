//! `/proc/cpuinfo`, parsed the same way whatever the host architecture.
//!
//! The file is a list of blank-line-separated blocks of `key : value` lines, one per
//! logical CPU (x86: `vendor_id`, `model name`, `flags`; arm64: `CPU implementer`,
//! `CPU part`, `Features`, plus trailing machine-wide keys such as `Hardware` or
//! `Serial`). The parser keeps what it understands and skips anything else (garbage,
//! binary bytes, NULs), so a damaged file yields fewer facts, never an error.
//! Deciding the architecture from it is [`CpuInfo::arch`]'s job.

use std::collections::{BTreeMap, BTreeSet};

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
    /// Arm: one identity per `processor` block that carried one, in file order.
    pub cores: Vec<CoreIdentity>,
    /// The first value of every key (capped), for telling the dialect apart.
    pub keys: BTreeMap<String, String>,
    /// x86-32 kernels only: the `fdiv_bug`, `f00f_bug`, `hlt_bug` or `coma_bug` line seen.
    pub x86_32_bug_line: Option<String>,
    /// The highest `processor` number seen.
    pub max_processor: Option<u32>,
    /// x86: per `physical id`, the blocks that name it and the `siblings` (threads in the
    /// package) they declare.
    pub packages: BTreeMap<u32, PackageThreads>,
}

/// One x86 package as `/proc/cpuinfo` describes it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PackageThreads {
    /// `processor` blocks with this `physical id`.
    pub blocks: u32,
    /// The package's `siblings` value (its hardware threads), when stated.
    pub siblings: Option<u32>,
    /// The package's `cpu cores` value, when stated.
    pub cores: Option<u32>,
}

/// One Arm core's `CPU implementer`, `CPU variant` and `CPU part`, lower-case hex.
#[derive(Debug, Clone, Default, PartialEq, Eq, PartialOrd, Ord)]
pub struct CoreIdentity {
    pub implementer: Option<String>,
    pub variant: Option<String>,
    pub part: Option<String>,
}

/// The Linux architecture a cpuinfo text was written by, told apart by fields that only
/// that architecture's kernel writes (see [`CpuInfo::dialect`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dialect {
    X86_64,
    X86_32,
    Aarch64,
    Arm32,
    S390x,
    Ppc64,
    Riscv64,
    Riscv32,
    LoongArch64,
    Ia64,
    Mips,
    Sparc,
}

impl Dialect {
    /// The profile architecture, for the two edgeplan plans for.
    pub fn supported(self) -> Option<Arch> {
        match self {
            Dialect::X86_64 => Some(Arch::X86_64),
            Dialect::Aarch64 => Some(Arch::Aarch64),
            _ => None,
        }
    }

    /// How the architecture is named in messages.
    pub fn name(self) -> &'static str {
        match self {
            Dialect::X86_64 => "x86_64",
            Dialect::X86_32 => "32-bit x86",
            Dialect::Aarch64 => "aarch64",
            Dialect::Arm32 => "32-bit ARM",
            Dialect::S390x => "s390x",
            Dialect::Ppc64 => "ppc64/ppc64le (POWER)",
            Dialect::Riscv64 => "riscv64",
            Dialect::Riscv32 => "riscv32",
            Dialect::LoongArch64 => "loongarch64",
            Dialect::Ia64 => "ia64 (Itanium)",
            Dialect::Mips => "mips",
            Dialect::Sparc => "sparc64",
        }
    }
}

/// `Features` words only the 32-bit Arm kernel prints (arm64 says `fp`/`asimd`, and
/// prints these only in the compat view a 32-bit process gets).
pub const ARM32_WORDS: &[&str] = &[
    "swp", "half", "thumb", "26bit", "fastmult", "fpa", "vfp", "edsp", "java", "iwmmxt", "crunch",
    "thumbee", "neon", "vfpv3", "vfpv3d16", "tls", "vfpv4", "idiva", "idivt", "vfpd32", "lpae",
];

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
            if info.keys.len() < 256 && !info.keys.contains_key(key) {
                info.keys.insert(key.to_string(), value.to_string());
            }
            match key {
                "processor" if value.parse::<u32>().is_ok() => {
                    info.processors += 1;
                    info.cores.push(CoreIdentity::default());
                    let n: u32 = value.parse().unwrap_or(0);
                    info.max_processor = Some(info.max_processor.map_or(n, |m| m.max(n)));
                    package = None;
                }
                "fdiv_bug" | "f00f_bug" | "hlt_bug" | "coma_bug"
                    if info.x86_32_bug_line.is_none() =>
                {
                    info.x86_32_bug_line = Some(key.to_string());
                }
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
                "CPU implementer" => {
                    let implementer = value.to_lowercase();
                    if is_hex(&implementer) {
                        current(&mut info.cores).implementer = Some(implementer.clone());
                    }
                    set_once(&mut info.implementer, &implementer);
                }
                "CPU variant" => {
                    let variant = value.to_lowercase();
                    if is_hex(&variant) {
                        current(&mut info.cores).variant = Some(variant);
                    }
                }
                "CPU part" => {
                    let part = value.to_lowercase();
                    if is_hex(&part) {
                        current(&mut info.cores).part = Some(part.clone());
                        if !info.parts.contains(&part) {
                            info.parts.push(part);
                        }
                    }
                }
                "Hardware" | "Model" => set_once(&mut info.hardware, value),
                "physical id" => {
                    package = value.parse().ok();
                    if let Some(p) = package {
                        info.packages.entry(p).or_default().blocks += 1;
                    }
                }
                "siblings" => {
                    if let (Some(p), Ok(n)) = (package, value.parse()) {
                        info.packages.entry(p).or_default().siblings = Some(n);
                    }
                }
                "cpu cores" => {
                    if let (Some(p), Ok(n)) = (package, value.parse()) {
                        info.packages.entry(p).or_default().cores = Some(n);
                    }
                }
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
        info.cores
            .retain(|c| c.part.is_some() || c.implementer.is_some());
        info
    }

    /// x86: why the `processor` blocks look like fewer CPUs than the machine has (a
    /// partial copy of the file, CPUs offline, or a container's filtered view), or `None`
    /// when the numbering and every package's `siblings` agree with the blocks present.
    pub fn missing_blocks(&self) -> Option<String> {
        let mut evidence = Vec::new();
        if let Some(max) = self.max_processor
            && u64::from(max) + 1 > u64::from(self.processors)
        {
            evidence.push(format!("they are numbered up to processor {max}"));
        }
        for (p, pkg) in &self.packages {
            if let Some(s) = pkg.siblings
                && s > pkg.blocks
            {
                evidence.push(format!(
                    "package {p} declares {s} threads (siblings) and has {} of them",
                    pkg.blocks
                ));
            }
        }
        (!evidence.is_empty()).then(|| evidence.join("; "))
    }

    /// x86: a package whose `siblings` (threads) is neither its `cpu cores` nor twice
    /// that, so some cores run two threads and some one: the mark of a hybrid part
    /// (performance cores with Hyper-Threading beside efficiency cores). Hybrid parts
    /// without Hyper-Threading look uniform here and are not seen.
    pub fn uneven_threads(&self) -> Option<(u32, u32, u32)> {
        self.packages
            .iter()
            .find_map(|(p, pkg)| match (pkg.siblings, pkg.cores) {
                (Some(t), Some(c)) if c > 0 && t != c && t != 2 * c => Some((*p, t, c)),
                _ => None,
            })
    }

    /// True when every `processor` block carried its own identity (arm64 kernels, and
    /// arm32 since 3.8); old kernels print one identity after all the blocks.
    pub fn identity_per_cpu(&self) -> bool {
        !self.cores.is_empty() && self.cores.len() as u64 == u64::from(self.processors)
    }

    fn key(&self, key: &str) -> Option<&str> {
        self.keys.get(key).map(String::as_str)
    }

    /// Which architecture's kernel wrote this text, and the field that says so.
    /// Every test looks for what only that architecture writes; `None` when nothing
    /// matches (garbage, empty, or a dialect edgeplan does not know).
    pub fn dialect(&self) -> Option<(Dialect, String)> {
        let seen = |k: &str, v: &str| format!("`{k}: {v}`");
        if let Some(v) = self
            .vendor_id
            .as_deref()
            .filter(|v| v.starts_with("IBM/S390"))
        {
            return Some((Dialect::S390x, seen("vendor_id", v)));
        }
        if self.key("# processors").is_some() || self.key("bogomips per cpu").is_some() {
            return Some((
                Dialect::S390x,
                "`# processors` / `bogomips per cpu` lines".into(),
            ));
        }
        if let Some(v) = self.key("arch").filter(|v| v.contains("IA-64")) {
            return Some((Dialect::Ia64, seen("arch", v)));
        }
        if let Some(v) = self.key("family").filter(|v| v.contains("Itanium")) {
            return Some((Dialect::Ia64, seen("family", v)));
        }
        if let Some(v) = self.key("ISA").filter(|v| v.contains("loongarch")) {
            return Some((Dialect::LoongArch64, seen("ISA", v)));
        }
        if let Some(v) = self.key("CPU Family").filter(|v| v.contains("Loongson")) {
            return Some((Dialect::LoongArch64, seen("CPU Family", v)));
        }
        if self
            .features
            .as_ref()
            .is_some_and(|f| f.iter().any(|w| w == "cpucfg"))
        {
            return Some((Dialect::LoongArch64, "`cpucfg` in Features".into()));
        }
        if let Some(v) = self.key("isa") {
            let lower = v.to_ascii_lowercase();
            if lower.starts_with("rv64") {
                return Some((Dialect::Riscv64, seen("isa", v)));
            }
            if lower.starts_with("rv32") {
                return Some((Dialect::Riscv32, seen("isa", v)));
            }
            if lower.starts_with("mips") {
                return Some((Dialect::Mips, seen("isa", v)));
            }
        }
        if let Some(v) = self
            .key("cpu model")
            .filter(|v| v.contains("MIPS") || v.contains("Loongson"))
        {
            return Some((Dialect::Mips, seen("cpu model", v)));
        }
        if self.key("ASEs implemented").is_some() {
            return Some((Dialect::Mips, "`ASEs implemented` line".into()));
        }
        if let Some(v) = self.key("mmu").filter(|v| v.starts_with("sv")) {
            return Some((Dialect::Riscv64, seen("mmu", v)));
        }
        if self.key("timebase").is_some() {
            let cpu = self.key("cpu").unwrap_or("?");
            return Some((Dialect::Ppc64, format!("`timebase` line (cpu {cpu})")));
        }
        if let Some(v) = self
            .key("cpu")
            .filter(|v| v.starts_with("POWER") || v.starts_with("PPC"))
        {
            return Some((Dialect::Ppc64, seen("cpu", v)));
        }
        if let Some(v) = self.key("type").filter(|v| v.starts_with("sun4")) {
            return Some((Dialect::Sparc, seen("type", v)));
        }
        let x86 = self.vendor_id.is_some() || self.flags.as_ref().is_some_and(|f| !f.is_empty());
        let arm =
            self.features.as_ref().is_some_and(|f| !f.is_empty()) || self.implementer.is_some();
        if x86 && !arm {
            if let Some(line) = &self.x86_32_bug_line {
                return Some((
                    Dialect::X86_32,
                    format!("`{line}` line (only 32-bit x86 kernels print it)"),
                ));
            }
            if let Some(flags) = self.flags.as_ref().filter(|f| !f.is_empty())
                && !flags.iter().any(|f| f == "lm")
            {
                return Some((Dialect::X86_32, "no `lm` (long mode) flag".into()));
            }
            let vendor = self.vendor_id.as_deref().unwrap_or("?");
            return Some((Dialect::X86_64, seen("vendor_id", vendor)));
        }
        if x86 && arm {
            // Both kinds of line: not something a kernel writes.
            return None;
        }
        if !arm {
            // A 32-bit Arm kernel names the core "... (v7l)" even with no other lines.
            let named = self.key("model name").or(self.key("Processor"));
            if let Some(v) = named.filter(|v| arm32_suffix(v).is_some_and(|n| n < 8)) {
                return Some((Dialect::Arm32, seen("model name", v)));
            }
            return None;
        }
        // Arm: 32- or 64-bit kernel. A 32-bit kernel prints `CPU architecture` 7 at most
        // and a `(v7l)`-style platform even on an ARMv8 core; an arm64 kernel answering a
        // 32-bit reader (the compat view) prints 32-bit Features words but `(v8l)` and 8.
        let processor_line = self.key("Processor").unwrap_or("");
        if processor_line.contains("AArch64") || processor_line.contains("(aarch64)") {
            return Some((Dialect::Aarch64, seen("Processor", processor_line)));
        }
        for key in ["model name", "Processor"] {
            if let Some(v) = self.key(key)
                && let Some(version) = arm32_suffix(v)
            {
                return Some(if version >= 8 {
                    (
                        Dialect::Aarch64,
                        format!("{} (an arm64 kernel's 32-bit view)", seen(key, v)),
                    )
                } else {
                    (Dialect::Arm32, seen(key, v))
                });
            }
        }
        if let Some(v) = self.key("CPU architecture") {
            let digits: String = v.chars().take_while(char::is_ascii_digit).collect();
            match digits.parse::<u32>() {
                Ok(n) if n < 8 => return Some((Dialect::Arm32, seen("CPU architecture", v))),
                Ok(_) => return Some((Dialect::Aarch64, seen("CPU architecture", v))),
                Err(_) if v.contains("AArch64") => {
                    return Some((Dialect::Aarch64, seen("CPU architecture", v)));
                }
                Err(_) => {}
            }
        }
        if let Some(word) = self
            .features
            .as_ref()
            .and_then(|f| f.iter().find(|w| ARM32_WORDS.contains(&w.as_str())))
        {
            return Some((
                Dialect::Arm32,
                format!("`{word}` in Features (a 32-bit Arm word)"),
            ));
        }
        let why = "`CPU implementer` / `Features` lines".to_string();
        Some((Dialect::Aarch64, why))
    }

    /// The supported architecture the file describes; `None` for any other dialect
    /// or none. See [`CpuInfo::dialect`].
    #[cfg(test)]
    pub fn arch(&self) -> Option<Arch> {
        self.dialect().and_then(|(d, _)| d.supported())
    }

    /// The feature words for the architecture: `flags` on x86, `Features` on arm64.
    pub fn words_for(&self, arch: Arch) -> Option<&[String]> {
        match arch {
            Arch::X86_64 => self.flags.as_deref(),
            Arch::Aarch64 => self.features.as_deref(),
        }
    }
}

/// The block being read (a leading identity, before any `processor` line, gets one).
fn current(cores: &mut Vec<CoreIdentity>) -> &mut CoreIdentity {
    if cores.is_empty() {
        cores.push(CoreIdentity::default());
    }
    let last = cores.len() - 1;
    &mut cores[last]
}

/// `ARMv7 Processor rev 3 (v7l)`: the `(vNl)` / `(vNb)` ELF platform suffix of a 32-bit
/// view, and its N.
fn arm32_suffix(name: &str) -> Option<u32> {
    let (_, tag) = name.trim().strip_suffix(')')?.rsplit_once('(')?;
    let digits = tag.strip_prefix('v')?.strip_suffix(['l', 'b'])?;
    digits.parse().ok()
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

    const X86: &str = "processor\t: 0\nvendor_id\t: GenuineIntel\ncpu family\t: 6\nmodel\t\t: 143\nmodel name\t: Intel(R) Xeon(R) Gold 5416S\nstepping\t: 8\nflags\t\t: fpu lm avx2 avx512f amx_tile\n\nprocessor\t: 1\nvendor_id\t: GenuineIntel\nflags\t\t: fpu lm avx2 avx512f amx_tile\n\n";

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
            &["fpu", "lm", "avx2", "avx512f", "amx_tile"]
        );
        assert_eq!(info.arch(), Some(Arch::X86_64));
        assert_eq!(info.physical_cores, 0, "no physical id / core id lines");
        let smt = "processor : 0\nphysical id : 0\ncore id : 0\n\nprocessor : 1\nphysical id : 0\ncore id : 0\n\nprocessor : 2\nphysical id : 1\ncore id : 0\n";
        assert_eq!(CpuInfo::parse(smt).physical_cores, 2);
    }

    #[test]
    fn missing_blocks_are_told_from_the_numbering_and_siblings() {
        let block = |n: u32, pkg: u32, siblings: u32| {
            format!(
                "processor\t: {n}\nphysical id\t: {pkg}\nsiblings\t: {siblings}\ncore id\t\t: {n}\n\n"
            )
        };
        // Whole: two packages of two threads, numbered 0..3.
        let whole: String = (0..4).map(|n| block(n, n / 2, 2)).collect();
        let info = CpuInfo::parse(&whole);
        assert_eq!(info.max_processor, Some(3));
        assert_eq!(info.missing_blocks(), None);
        // The last block of a 224-thread box, as `tail` of the file gives it.
        let last = CpuInfo::parse(&block(223, 1, 112));
        let why = last.missing_blocks().unwrap();
        assert!(why.contains("numbered up to processor 223"), "{why}");
        assert!(
            why.contains("package 1 declares 112 threads (siblings) and has 1 of them"),
            "{why}"
        );
        // The first block only (`head`): the numbering is fine, siblings is not.
        let first = CpuInfo::parse(&block(0, 0, 12));
        assert_eq!(
            first.missing_blocks().as_deref(),
            Some("package 0 declares 12 threads (siblings) and has 1 of them")
        );
        // No siblings lines (old kernels, other architectures): nothing to compare.
        assert_eq!(
            CpuInfo::parse("processor : 0\n\nprocessor : 1\n").missing_blocks(),
            None
        );
    }

    #[test]
    fn uneven_threads_per_core_mark_a_hybrid_part() {
        let pkg = |siblings: u32, cores: u32| {
            format!(
                "processor\t: 0\nphysical id\t: 0\nsiblings\t: {siblings}\ncore id\t\t: 0\ncpu cores\t: {cores}\n\n"
            )
        };
        // Core i7-1355U: 2 P-cores with Hyper-Threading + 8 E-cores = 12 threads, 10 cores.
        assert_eq!(
            CpuInfo::parse(&pkg(12, 10)).uneven_threads(),
            Some((0, 12, 10))
        );
        // Core i7-12700K: 8 + 4 cores, 20 threads.
        assert_eq!(
            CpuInfo::parse(&pkg(20, 12)).uneven_threads(),
            Some((0, 20, 12))
        );
        // Uniform: SMT2 everywhere, or no SMT (which hides a hybrid part without it).
        assert_eq!(CpuInfo::parse(&pkg(12, 6)).uneven_threads(), None);
        assert_eq!(CpuInfo::parse(&pkg(8, 8)).uneven_threads(), None);
        assert_eq!(CpuInfo::parse("processor : 0\n").uneven_threads(), None);
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

    fn dialect(text: &str) -> Option<Dialect> {
        CpuInfo::parse(text).dialect().map(|(d, _)| d)
    }

    #[test]
    fn dialects_by_fields_only_one_architecture_writes() {
        use Dialect::*;
        let cases: &[(&str, Option<Dialect>)] = &[
            (
                "vendor_id : GenuineIntel\ncpu family : 6\nflags : fpu lm avx2\n",
                Some(X86_64),
            ),
            (
                "vendor_id : GenuineIntel\ncpu family : 6\nflags : fpu pae sse2\n",
                Some(X86_32),
            ),
            (
                "vendor_id : GenuineIntel\nfdiv_bug : no\nf00f_bug : no\nflags : fpu lm\n",
                Some(X86_32),
            ),
            (
                "vendor_id       : IBM/S390\n# processors    : 4\nfeatures : esan3 zarch\n",
                Some(S390x),
            ),
            (
                "processor : 0\ncpu : POWER9 (raw), altivec supported\ntimebase : 512000000\nplatform : PowerNV\n",
                Some(Ppc64),
            ),
            (
                "processor : 0\nhart : 0\nisa : rv64imafdc\nmmu : sv39\n",
                Some(Riscv64),
            ),
            (
                "system type : generic-loongson-machine\nCPU Family : Loongson-64bit\nFeatures : cpucfg lam ual fpu lsx lasx\n",
                Some(LoongArch64),
            ),
            (
                "vendor : GenuineIntel\narch : IA-64\nfamily : Itanium 2\n",
                Some(Ia64),
            ),
            (
                "system type : MT7621\ncpu model : MIPS 1004Kc V2.15\nisa : mips1 mips2 mips32r1 mips32r2\n",
                Some(Mips),
            ),
            (
                "processor : 0\nmodel name : ARMv7 Processor rev 3 (v7l)\nFeatures : half thumb fastmult vfp edsp neon vfpv3 tls vfpv4 idiva idivt\nCPU implementer : 0x41\nCPU architecture: 7\nCPU part : 0xd08\n",
                Some(Arm32),
            ),
            (
                "processor : 0\nmodel name : ARMv8 Processor rev 4 (v8l)\nFeatures : half thumb fastmult vfp edsp neon vfpv3 tls vfpv4 idiva idivt lpae evtstrm crc32\nCPU implementer : 0x41\nCPU architecture: 8\nCPU part : 0xd03\n",
                Some(Aarch64),
            ),
            (
                "processor : 0\nmodel name : ARMv7 Processor rev 4 (v7l)\nFeatures : half thumb fastmult vfp edsp neon vfpv3 tls vfpv4 idiva idivt vfpd32 lpae evtstrm crc32\nCPU implementer : 0x41\nCPU architecture: 7\nCPU part : 0xd03\n",
                Some(Arm32),
            ),
            (
                "processor : 0\nFeatures : fp asimd evtstrm crc32 cpuid\nCPU implementer : 0x41\nCPU architecture: 8\nCPU part : 0xd03\n",
                Some(Aarch64),
            ),
            (
                "Processor : AArch64 Processor rev 4 (aarch64)\nprocessor : 0\nFeatures : fp asimd\nCPU implementer : 0x51\n",
                Some(Aarch64),
            ),
            (
                "processor : 0\nmodel name : ARMv6-compatible processor rev 7 (v6l)\nBogoMIPS : 697.95\n",
                Some(Arm32),
            ),
            ("garbage\n", None),
        ];
        for (text, want) in cases {
            assert_eq!(dialect(text), *want, "{text}");
        }
        assert_eq!(Dialect::S390x.supported(), None);
        assert_eq!(Dialect::Aarch64.supported(), Some(Arch::Aarch64));
        assert_eq!(arm32_suffix("ARMv7 Processor rev 3 (v7l)"), Some(7));
        assert_eq!(arm32_suffix("ARMv8 Processor rev 1 (v8l)"), Some(8));
        assert_eq!(arm32_suffix("AArch64 Processor rev 4 (aarch64)"), None);
        assert_eq!(arm32_suffix("ARMv7 Processor rev 3 (v71)"), None);
    }

    #[test]
    fn per_processor_identity() {
        let big_little = "processor : 0\nCPU implementer : 0x41\nCPU variant : 0x0\nCPU part : 0xd03\n\nprocessor : 1\nCPU implementer : 0x41\nCPU variant : 0x0\nCPU part : 0xd09\n";
        let info = CpuInfo::parse(big_little);
        assert!(info.identity_per_cpu());
        assert_eq!(info.cores.len(), 2);
        assert_eq!(info.cores[1].part.as_deref(), Some("0xd09"));
        let old = "Processor : ARMv7 Processor rev 0 (v7l)\nprocessor : 0\nprocessor : 1\nFeatures : swp half thumb\nCPU implementer : 0x51\nCPU part : 0x04d\n";
        let info = CpuInfo::parse(old);
        assert!(!info.identity_per_cpu());
        assert_eq!(info.cores.len(), 1);
    }

    #[test]
    fn both_kinds_of_line_is_ambiguous() {
        let info = CpuInfo::parse("flags : avx2\nFeatures : asimd\n");
        assert_eq!(info.arch(), None);
    }
}
