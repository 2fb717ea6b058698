//! Arm core identity: the MIDR implementer and part codes, named.
//!
//! A core is named by the pair (implementer, part), never by the part alone: HiSilicon
//! ships part `0xd40` as its Cortex-A76 while Arm's `0xd40` is Neoverse-V1. The codes
//! were collected from Linux `arch/arm64/include/asm/cputype.h` (the `*_CPU_IMP_*` and
//! `*_CPU_PART_*` defines) and util-linux `sys-utils/lscpu-arm.c` (the `hw_implementer`
//! and per-vendor part tables), whose names this table follows so `lscpu` and edgeplan
//! agree. A pair not listed here is reported as `implementer 0xNN part 0xNNN`, never
//! guessed.

/// The fields of a `midr_el1` register value (sysfs `regs/identification/midr_el1`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Midr {
    pub implementer: u32,
    pub variant: u32,
    pub part: u32,
}

/// `0x00000000410fd0b0` -> implementer 0x41, variant 0, part 0xd0b. `None` when the text
/// is not a hex number or the implementer field is zero.
pub fn parse_midr(text: &str) -> Option<Midr> {
    let digits = text.trim().strip_prefix("0x").unwrap_or(text.trim());
    let value = u64::from_str_radix(digits, 16).ok()?;
    let midr = Midr {
        implementer: ((value >> 24) & 0xff) as u32,
        variant: ((value >> 20) & 0xf) as u32,
        part: ((value >> 4) & 0xfff) as u32,
    };
    (midr.implementer != 0).then_some(midr)
}

/// The company behind a MIDR implementer code (`0x41`), lower-case hex as cpuinfo prints.
pub fn vendor_name(implementer: &str) -> Option<&'static str> {
    Some(match number(implementer)? {
        0x41 => "ARM",
        0x42 => "Broadcom",
        0x43 => "Cavium",
        0x44 => "DEC",
        0x46 => "Fujitsu",
        0x48 => "HiSilicon",
        0x49 => "Infineon",
        0x4d => "Motorola/Freescale",
        0x4e => "NVIDIA",
        0x50 => "APM",
        0x51 => "Qualcomm",
        0x53 => "Samsung",
        0x56 => "Marvell",
        0x61 => "Apple",
        0x66 => "Faraday",
        0x69 => "Intel",
        0x6d => "Microsoft",
        0x70 => "Phytium",
        0xc0 => "Ampere",
        _ => return None,
    })
}

fn number(hex: &str) -> Option<u32> {
    u32::from_str_radix(hex.trim().strip_prefix("0x")?, 16).ok()
}

/// The core behind an implementer/part pair; `None` when the pair is not known.
pub fn core_name(implementer: &str, part: &str) -> Option<&'static str> {
    let (imp, part) = (number(implementer)?, number(part)?);
    Some(match (imp, part) {
        (0x41, p) => match p {
            0x810 => "ARM810",
            0x920 => "ARM920",
            0x922 => "ARM922",
            0x926 => "ARM926",
            0x940 => "ARM940",
            0x946 => "ARM946",
            0x966 => "ARM966",
            0xa20 => "ARM1020",
            0xa22 => "ARM1022",
            0xa26 => "ARM1026",
            0xb02 => "ARM11 MPCore",
            0xb36 => "ARM1136",
            0xb56 => "ARM1156",
            0xb76 => "ARM1176",
            0xc05 => "Cortex-A5",
            0xc07 => "Cortex-A7",
            0xc08 => "Cortex-A8",
            0xc09 => "Cortex-A9",
            0xc0d | 0xc0e => "Cortex-A17",
            0xc0f => "Cortex-A15",
            0xc14 => "Cortex-R4",
            0xc15 => "Cortex-R5",
            0xc17 => "Cortex-R7",
            0xc18 => "Cortex-R8",
            0xc20 => "Cortex-M0",
            0xc21 => "Cortex-M1",
            0xc23 => "Cortex-M3",
            0xc24 => "Cortex-M4",
            0xc27 => "Cortex-M7",
            0xc60 => "Cortex-M0+",
            0xd01 => "Cortex-A32",
            0xd02 => "Cortex-A34",
            0xd03 => "Cortex-A53",
            0xd04 => "Cortex-A35",
            0xd05 => "Cortex-A55",
            0xd06 => "Cortex-A65",
            0xd07 => "Cortex-A57",
            0xd08 => "Cortex-A72",
            0xd09 => "Cortex-A73",
            0xd0a => "Cortex-A75",
            0xd0b => "Cortex-A76",
            0xd0c => "Neoverse-N1",
            0xd0d => "Cortex-A77",
            0xd0e => "Cortex-A76AE",
            0xd13 => "Cortex-R52",
            0xd15 => "Cortex-R82",
            0xd20 => "Cortex-M23",
            0xd21 => "Cortex-M33",
            0xd40 => "Neoverse-V1",
            0xd41 => "Cortex-A78",
            0xd42 => "Cortex-A78AE",
            0xd43 => "Cortex-A65AE",
            0xd44 => "Cortex-X1",
            0xd46 => "Cortex-A510",
            0xd47 => "Cortex-A710",
            0xd48 => "Cortex-X2",
            0xd49 => "Neoverse-N2",
            0xd4a => "Neoverse-E1",
            0xd4b => "Cortex-A78C",
            0xd4c => "Cortex-X1C",
            0xd4d => "Cortex-A715",
            0xd4e => "Cortex-X3",
            0xd4f => "Neoverse-V2",
            0xd80 => "Cortex-A520",
            0xd81 => "Cortex-A720",
            0xd82 => "Cortex-X4",
            0xd83 => "Neoverse-V3AE",
            0xd84 => "Neoverse-V3",
            0xd85 => "Cortex-X925",
            0xd87 => "Cortex-A725",
            0xd89 => "Cortex-A720AE",
            0xd8b => "C1-Pro",
            0xd8c => "C1-Ultra",
            0xd8e => "Neoverse-N3",
            _ => return None,
        },
        (0x42, 0x00f) => "Brahma-B15",
        (0x42, 0x100) => "Brahma-B53",
        (0x42, 0x516) => "ThunderX2",
        (0x43, p) => match p {
            0x0a0 => "ThunderX",
            0x0a1 => "ThunderX-88XX",
            0x0a2 => "ThunderX-81XX",
            0x0a3 => "ThunderX-83XX",
            0x0af => "ThunderX2-99xx",
            0x0b0 => "OcteonTX2",
            0x0b1 => "OcteonTX2-98XX",
            0x0b2 => "OcteonTX2-96XX",
            0x0b3 => "OcteonTX2-95XX",
            0x0b4 => "OcteonTX2-95XXN",
            0x0b5 => "OcteonTX2-95XXMM",
            0x0b6 => "OcteonTX2-95XXO",
            0x0b8 => "ThunderX3-T110",
            _ => return None,
        },
        (0x44, 0xa10) => "SA110",
        (0x44, 0xa11) => "SA1100",
        (0x46, 0x001) => "A64FX",
        (0x48, 0xd01) => "Kunpeng-920",
        (0x48, 0xd40) => "Cortex-A76",
        (0x4e, 0x000) => "Denver",
        (0x4e, 0x003) => "Denver 2",
        (0x4e, 0x004) => "Carmel",
        (0x50, 0x000) => "X-Gene",
        (0x51, p) => match p {
            0x001 => "Oryon",
            0x00f | 0x02d => "Scorpion",
            0x04d | 0x06f => "Krait",
            0x201 | 0x205 | 0x211 => "Kryo",
            // cputype.h's KRYO_2XX_GOLD / _SILVER (Snapdragon 835); Centriq's Falkor V1
            // also reports 0x800, which lscpu hedges as "Falkor-V1/Kryo".
            0x800 => "Kryo-2XX-Gold",
            0x801 => "Kryo-2XX-Silver",
            0x802 => "Kryo-3XX-Gold",
            0x803 => "Kryo-3XX-Silver",
            0x804 => "Kryo-4XX-Gold",
            0x805 => "Kryo-4XX-Silver",
            0xc00 => "Falkor",
            0xc01 => "Saphira",
            _ => return None,
        },
        (0x53, 0x001) => "Exynos-M1",
        (0x53, 0x002) => "Exynos-M3",
        (0x53, 0x003) => "Exynos-M4",
        (0x53, 0x004) => "Exynos-M5",
        (0x56, 0x131) => "Feroceon-88FR131",
        (0x56, 0x581) => "PJ4/PJ4b",
        (0x56, 0x584) => "PJ4B-MP",
        (0x61, p) => match p {
            0x020 => "Icestorm-A14",
            0x021 => "Firestorm-A14",
            0x022 => "Icestorm-M1",
            0x023 => "Firestorm-M1",
            0x024 => "Icestorm-M1-Pro",
            0x025 => "Firestorm-M1-Pro",
            0x028 => "Icestorm-M1-Max",
            0x029 => "Firestorm-M1-Max",
            0x030 => "Blizzard-A15",
            0x031 => "Avalanche-A15",
            0x032 => "Blizzard-M2",
            0x033 => "Avalanche-M2",
            0x034 => "Blizzard-M2-Pro",
            0x035 => "Avalanche-M2-Pro",
            0x038 => "Blizzard-M2-Max",
            0x039 => "Avalanche-M2-Max",
            _ => return None,
        },
        (0x66, 0x526) => "FA526",
        (0x66, 0x626) => "FA626",
        (0x6d, 0xd49) => "Azure-Cobalt-100",
        (0x70, p) => match p {
            0x660 => "FTC660",
            0x661 => "FTC661",
            0x662 => "FTC662",
            0x663 => "FTC663",
            _ => return None,
        },
        (0xc0, 0xac3) => "Ampere-1",
        (0xc0, 0xac4) => "Ampere-1a",
        _ => return None,
    })
}

/// The name edgeplan shows for a core: the table's, or the raw codes when unknown.
/// Samsung's first two Mongoose generations share part 0x001 and differ in variant
/// (M1 in the Exynos 8890 is variant 0x1, M2 in the 8895 variant 0x4).
pub fn display_name(
    implementer: Option<&str>,
    part: Option<&str>,
    variant: Option<&str>,
) -> String {
    if let (Some(i), Some(p), Some(v)) = (implementer, part, variant)
        && number(i) == Some(0x53)
        && number(p) == Some(0x001)
        && number(v).is_some_and(|v| v >= 0x4)
    {
        return "Exynos-M2".into();
    }
    match (implementer, part) {
        (Some(i), Some(p)) => core_name(i, p)
            .map(str::to_string)
            .unwrap_or_else(|| format!("implementer {i} part {p}")),
        (Some(i), None) => format!("implementer {i} part unknown"),
        (None, Some(p)) => format!("implementer unknown part {p}"),
        (None, None) => "unknown core".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_implementer_decides_what_a_part_means() {
        assert_eq!(core_name("0x41", "0xd40"), Some("Neoverse-V1"));
        assert_eq!(core_name("0x48", "0xd40"), Some("Cortex-A76"));
        assert_eq!(core_name("0x51", "0x803"), Some("Kryo-3XX-Silver"));
        assert_eq!(core_name("0x41", "0xd09"), Some("Cortex-A73"));
        assert_eq!(core_name("0x41", "0xd04"), Some("Cortex-A35"));
        assert_eq!(core_name("0x53", "0x001"), Some("Exynos-M1"));
        assert_eq!(core_name("0x41", "0xfff"), None);
        assert_eq!(core_name("0x99", "0xd03"), None);
        assert_eq!(core_name("garbage", "0xd03"), None);
        assert_eq!(
            display_name(Some("0x51"), Some("0x123"), None),
            "implementer 0x51 part 0x123"
        );
        assert_eq!(
            display_name(Some("0x53"), Some("0x001"), Some("0x4")),
            "Exynos-M2"
        );
        assert_eq!(
            display_name(Some("0x53"), Some("0x001"), Some("0x1")),
            "Exynos-M1"
        );
        assert_eq!(vendor_name("0x41"), Some("ARM"));
        assert_eq!(vendor_name("0x70"), Some("Phytium"));
        assert_eq!(vendor_name("0x05"), None);
    }

    #[test]
    fn midr_fields() {
        let m = parse_midr("0x00000000410fd0b0\n").unwrap();
        assert_eq!((m.implementer, m.variant, m.part), (0x41, 0, 0xd0b));
        let m = parse_midr("0x00000000517f803c").unwrap();
        assert_eq!((m.implementer, m.variant, m.part), (0x51, 7, 0x803));
        assert_eq!(parse_midr("zz"), None);
        assert_eq!(parse_midr("0x0"), None);
    }
}
