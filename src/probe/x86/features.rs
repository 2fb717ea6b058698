//! The x86 CPU identity (vendor, brand, family/model/stepping, hypervisor) and its
//! features, on plain register values. The feature table and the `{cpu, os, usable}`
//! decision are the crate's one table ([`crate::arch::features`]); this file adds the
//! identity and maps the result into the profile's [`Feature`]s.
//!
//! Nothing here executes CPUID or XGETBV: an [`X86Cpu`] supplies the registers, so the
//! masks are tested with synthetic values (a real tool once tested XCR0 bits 11/12, the
//! CET state, instead of 17/18 for AMX; the tests below pin the right bits).

use std::collections::BTreeMap;

use raw_cpuid::{CpuId, CpuIdReader, CpuIdResult};

use crate::profile::Feature;

use crate::arch::features::detect;
pub use crate::arch::features::{EAX, EBX, ECX, EDX, FEATURES, X86Cpu};

/// A CPU that does not exist: what [`super::native`] returns off x86_64 Linux.
#[cfg(not(all(target_arch = "x86_64", target_os = "linux")))]
#[derive(Debug, Clone, Copy)]
pub struct NoCpu;

#[cfg(not(all(target_arch = "x86_64", target_os = "linux")))]
impl X86Cpu for NoCpu {
    fn cpuid(&self, _: u32, _: u32) -> [u32; 4] {
        [0; 4]
    }
    fn xcr0(&self) -> u64 {
        0
    }
    fn request_amx(&self) -> Option<u64> {
        None
    }
}

/// What the live x86 probe learned.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct X86Facts {
    pub vendor: Option<String>,
    pub brand: Option<String>,
    pub family: u32,
    pub model: u32,
    pub stepping: u32,
    pub features: BTreeMap<String, Feature>,
    /// XCR0, when OSXSAVE allowed reading it.
    pub xcr0: Option<u64>,
    /// CPUID.1:ECX[31].
    pub hypervisor: bool,
    /// The leaf 0x40000000 signature mapped to a name (`kvm`, `hyperv`, ...).
    pub hypervisor_name: Option<String>,
    /// CPUID leaf 0x1D EAX: the highest AMX palette (0 = no usable palette).
    pub amx_palettes: u32,
    /// Whether the kernel granted XTILEDATA; `None` when it was not asked (no AMX).
    pub amx_permission: Option<bool>,
    /// Things a person should know (e.g. AMX advertised without a palette).
    pub notes: Vec<String>,
}

/// Runs the whole probe on `cpu`: identity here, features from the one table in
/// [`crate::arch::features`] (the AMX permission is requested only when the CPU reports
/// AMX and XCR0 enables its state).
pub fn probe(cpu: &impl X86Cpu) -> X86Facts {
    let mut facts = X86Facts::default();
    let max_leaf = cpu.cpuid(0, 0)[EAX];
    let leaf1 = if max_leaf >= 1 {
        cpu.cpuid(1, 0)
    } else {
        [0; 4]
    };

    let reader = CpuId::with_cpuid_reader(Reader(cpu));
    facts.vendor = reader.get_vendor_info().map(|v| v.as_str().to_string());
    facts.brand = reader
        .get_processor_brand_string()
        .map(|b| b.as_str().trim().to_string())
        .filter(|b| !b.is_empty());
    let (base_family, base_model) = (leaf1[EAX] >> 8 & 0xF, leaf1[EAX] >> 4 & 0xF);
    facts.family = if base_family == 0xF {
        base_family + (leaf1[EAX] >> 20 & 0xFF)
    } else {
        base_family
    };
    facts.model = if base_family == 0x6 || base_family == 0xF {
        base_model | (leaf1[EAX] >> 16 & 0xF) << 4
    } else {
        base_model
    };
    facts.stepping = leaf1[EAX] & 0xF;

    facts.hypervisor = leaf1[ECX] >> 31 & 1 == 1;
    if facts.hypervisor {
        let sig = cpu.cpuid(0x4000_0000, 0);
        let bytes: Vec<u8> = [sig[EBX], sig[ECX], sig[EDX]]
            .iter()
            .flat_map(|r| r.to_le_bytes())
            .collect();
        let text = String::from_utf8_lossy(&bytes).into_owned();
        facts.hypervisor_name = Some(hypervisor_name(&text).unwrap_or("unknown").to_string());
    }

    let detected = detect(cpu);
    facts.xcr0 = detected.xcr0;
    facts.amx_palettes = detected.amx_palettes;
    facts.amx_permission = detected.amx_permission;
    facts.notes = detected.notes;
    for (name, s) in detected.features {
        facts.features.insert(
            name.to_string(),
            Feature {
                cpu: s.cpu,
                os: Some(s.os),
                usable: s.usable,
            },
        );
    }
    facts
}

/// Maps a CPUID 0x40000000 signature to a hypervisor name.
pub fn hypervisor_name(signature: &str) -> Option<&'static str> {
    let sig = signature.trim_end_matches('\0');
    Some(match sig {
        s if s.starts_with("KVMKVMKVM") || s == "Linux KVM Hv" => "kvm",
        "Microsoft Hv" => "hyperv",
        "VMwareVMware" => "vmware",
        "XenVMMXenVMM" => "xen",
        "TCGTCGTCGTCG" => "qemu",
        "ACRNACRNACRN" => "acrn",
        "bhyve bhyve " => "bhyve",
        " lrpepyh  vr" => "parallels",
        "VBoxVBoxVBox" => "virtualbox",
        _ => return None,
    })
}

/// Adapts an [`X86Cpu`] to raw-cpuid's reader, for the vendor and brand strings.
struct Reader<'a, C>(&'a C);

impl<C> Clone for Reader<'_, C> {
    fn clone(&self) -> Self {
        Reader(self.0)
    }
}

impl<C: X86Cpu> CpuIdReader for Reader<'_, C> {
    fn cpuid2(&self, eax: u32, ecx: u32) -> CpuIdResult {
        let [eax, ebx, ecx, edx] = self.0.cpuid(eax, ecx);
        CpuIdResult { eax, ebx, ecx, edx }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::arch::features::State;
    use std::cell::Cell;

    /// A Sapphire Rapids as CPUID describes it, with knobs for each failure.
    struct Fake {
        leaf1_ecx: u32,
        leaf7_ebx: u32,
        leaf7_ecx: u32,
        leaf7_edx: u32,
        leaf7_1_eax: u32,
        xcr0: u64,
        palettes: u32,
        perm: Option<u64>,
        asked: Cell<bool>,
    }

    const OSXSAVE: u32 = 1 << 27;

    fn spr() -> Fake {
        Fake {
            leaf1_ecx: OSXSAVE | 1 << 28 | 1 << 12 | 1 << 29,
            leaf7_ebx: 1 << 5 | 1 << 16 | 1 << 17 | 1 << 28 | 1 << 30 | 1 << 31,
            leaf7_ecx: 1 << 1 | 1 << 11,
            leaf7_edx: 1 << 22 | 1 << 23 | 1 << 24 | 1 << 25,
            leaf7_1_eax: 1 << 4 | 1 << 5,
            xcr0: 0x602E7,
            palettes: 1,
            perm: Some(0x602E7),
            asked: Cell::new(false),
        }
    }

    impl X86Cpu for Fake {
        fn cpuid(&self, leaf: u32, subleaf: u32) -> [u32; 4] {
            let text = |s: &[u8; 12]| {
                let w = |i: usize| u32::from_le_bytes([s[i], s[i + 1], s[i + 2], s[i + 3]]);
                (w(0), w(4), w(8))
            };
            match (leaf, subleaf) {
                (0, _) => {
                    let (b, d, c) = text(b"GenuineIntel");
                    [0x20, b, c, d]
                }
                (1, _) => [0x000806F8, 0, self.leaf1_ecx, 0],
                (7, 0) => [1, self.leaf7_ebx, self.leaf7_ecx, self.leaf7_edx],
                (7, 1) => [self.leaf7_1_eax, 0, 0, 0],
                (0x1D, 0) => [self.palettes, 0, 0, 0],
                (0x4000_0000, _) => {
                    let (b, c, d) = text(b"KVMKVMKVM\0\0\0");
                    [0x4000_0001, b, c, d]
                }
                _ => [0; 4],
            }
        }
        fn xcr0(&self) -> u64 {
            assert!(
                self.leaf1_ecx & OSXSAVE != 0,
                "xgetbv without OSXSAVE would fault"
            );
            self.xcr0
        }
        fn request_amx(&self) -> Option<u64> {
            self.asked.set(true);
            self.perm
        }
    }

    fn feat(facts: &X86Facts, name: &str) -> (bool, Option<bool>, bool) {
        let f = facts.features[name];
        (f.cpu, f.os, f.usable)
    }

    #[test]
    fn sapphire_rapids_everything_usable() {
        let cpu = spr();
        let facts = probe(&cpu);
        assert!(cpu.asked.get());
        for name in [
            "avx",
            "avx2",
            "fma",
            "avx512f",
            "avx512bw",
            "avx512vl",
            "avx512_vnni",
            "avx512_bf16",
            "avx512_fp16",
            "avx_vnni",
            "amx_tile",
            "amx_int8",
            "amx_bf16",
        ] {
            assert_eq!(feat(&facts, name), (true, Some(true), true), "{name}");
        }
        assert_eq!(feat(&facts, "amx_fp16"), (false, Some(true), false));
        assert_eq!(facts.vendor.as_deref(), Some("GenuineIntel"));
        assert_eq!((facts.family, facts.model, facts.stepping), (6, 0x8F, 8));
        assert!(!facts.hypervisor);
        assert!(facts.notes.is_empty(), "{:?}", facts.notes);
    }

    #[test]
    fn the_mask_values_are_the_architectural_ones() {
        assert_eq!(State::Avx.mask(), 0b110);
        assert_eq!(State::Avx512.mask(), 0b1110_0110);
        assert_eq!(State::Amx.mask(), 1 << 17 | 1 << 18);
        // CET state (bits 11, 12) is not tile state.
        assert_eq!(State::Amx.mask() & (1 << 11 | 1 << 12), 0);
    }

    #[test]
    fn cet_bits_instead_of_tile_bits_do_not_enable_amx() {
        let mut cpu = spr();
        cpu.xcr0 = 0xE7 | 1 << 11 | 1 << 12;
        let facts = probe(&cpu);
        assert!(
            !cpu.asked.get(),
            "permission must not be requested without XCR0 tile state"
        );
        assert_eq!(feat(&facts, "amx_int8"), (true, Some(false), false));
        assert_eq!(feat(&facts, "avx512_bf16"), (true, Some(true), true));
        assert!(facts.notes[0].contains("XCR0"));
    }

    #[test]
    fn only_one_tile_bit_is_not_enough() {
        for xcr0 in [0xE7 | 1 << 17, 0xE7 | 1 << 18] {
            let mut cpu = spr();
            cpu.xcr0 = xcr0;
            assert_eq!(
                feat(&probe(&cpu), "amx_tile"),
                (true, Some(false), false),
                "{xcr0:#x}"
            );
        }
    }

    #[test]
    fn refused_permission_makes_amx_unusable() {
        let mut cpu = spr();
        cpu.perm = None;
        let facts = probe(&cpu);
        assert_eq!(facts.amx_permission, Some(false));
        assert_eq!(feat(&facts, "amx_bf16"), (true, Some(false), false));
        // Permission readback without bit 18 is also a refusal.
        let mut cpu = spr();
        cpu.perm = Some(0x2E7 | 1 << 17);
        assert_eq!(feat(&probe(&cpu), "amx_int8"), (true, Some(false), false));
    }

    #[test]
    fn zero_palettes_make_amx_unusable_though_the_os_enabled_it() {
        let mut cpu = spr();
        cpu.palettes = 0;
        let facts = probe(&cpu);
        assert_eq!(feat(&facts, "amx_tile"), (true, Some(true), false));
        assert!(facts.notes.iter().any(|n| n.contains("0x1D")));
    }

    #[test]
    fn avx512_needs_all_of_0xe6() {
        // opmask/ZMM state off (a VM or kernel with AVX-512 disabled): AVX2 stays usable.
        let mut cpu = spr();
        cpu.xcr0 = 0x7;
        let facts = probe(&cpu);
        assert_eq!(feat(&facts, "avx2"), (true, Some(true), true));
        assert_eq!(feat(&facts, "avx_vnni"), (true, Some(true), true));
        assert_eq!(feat(&facts, "avx512f"), (true, Some(false), false));
        assert_eq!(feat(&facts, "avx512_vnni"), (true, Some(false), false));
        cpu.xcr0 = 0x7 | 0x60; // bit 5 (opmask) missing
        assert_eq!(feat(&probe(&cpu), "avx512bw"), (true, Some(false), false));
    }

    #[test]
    fn without_osxsave_xgetbv_is_never_executed() {
        let mut cpu = spr();
        cpu.leaf1_ecx &= !OSXSAVE;
        let facts = probe(&cpu);
        assert_eq!(facts.xcr0, None);
        assert_eq!(feat(&facts, "avx"), (true, Some(false), false));
        assert_eq!(feat(&facts, "amx_int8"), (true, Some(false), false));
    }

    #[test]
    fn hypervisor_bit_and_signature() {
        let mut cpu = spr();
        cpu.leaf1_ecx |= 1 << 31;
        let facts = probe(&cpu);
        assert!(facts.hypervisor);
        assert_eq!(facts.hypervisor_name.as_deref(), Some("kvm"));
        assert_eq!(hypervisor_name("Microsoft Hv"), Some("hyperv"));
        assert_eq!(hypervisor_name("nonsense"), None);
    }

    #[test]
    fn a_cpu_without_leaf_7_reports_nothing_above_avx() {
        struct Old;
        impl X86Cpu for Old {
            fn cpuid(&self, leaf: u32, _: u32) -> [u32; 4] {
                match leaf {
                    0 => [1, 0, 0, 0],
                    1 => [0, 0, OSXSAVE | 1 << 28, 0],
                    // Garbage that a real CPU returns for leaves above the maximum.
                    _ => [u32::MAX; 4],
                }
            }
            fn xcr0(&self) -> u64 {
                0x7
            }
            fn request_amx(&self) -> Option<u64> {
                panic!("no AMX to ask for")
            }
        }
        let facts = probe(&Old);
        assert_eq!(feat(&facts, "avx"), (true, Some(true), true));
        assert_eq!(feat(&facts, "avx2"), (false, Some(true), false));
        assert!(!feat(&facts, "amx_tile").0);
    }
}
