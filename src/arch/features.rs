//! The one x86 CPU feature table, and the `{cpu, os, usable}` decision on it: CPUID bit,
//! then OSXSAVE and the XCR0 state bits, and for AMX also a CPUID leaf 0x1D tile palette
//! and the Linux XTILEDATA permission. `probe` reports it, the kernels pick variants with
//! it, and bench's peak loops run only where it says so: one answer for all three.
//!
//! [`detect`] runs on plain register values from an [`X86Cpu`], so the masks are tested
//! with synthetic CPUs (a real tool once tested XCR0 bits 11/12, the CET state, instead of
//! 17/18 for AMX; probe's tests pin the right bits); [`live`] is this host, detected once.

/// The instructions and syscall feature detection needs, so tests can supply fake values.
pub trait X86Cpu {
    /// CPUID for `leaf`/`subleaf`: `[eax, ebx, ecx, edx]`.
    fn cpuid(&self, leaf: u32, subleaf: u32) -> [u32; 4];
    /// XCR0 through XGETBV. Called only after CPUID.1:ECX.OSXSAVE[27] is set.
    fn xcr0(&self) -> u64;
    /// Requests the AMX tile-data permission and returns the permitted xfeature mask
    /// read back with `ARCH_GET_XCOMP_PERM`, or `None` when the kernel refused (or is
    /// older than 5.16).
    fn request_amx(&self) -> Option<u64>;
}

pub const EAX: usize = 0;
pub const EBX: usize = 1;
pub const ECX: usize = 2;
pub const EDX: usize = 3;

/// The XCR0 state components a feature needs enabled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum State {
    /// SSE + AVX (YMM) state: bits 1 and 2.
    Avx,
    /// Also opmask, ZMM_Hi256 and Hi16_ZMM: bits 1, 2, 5, 6, 7.
    Avx512,
    /// XTILECFG (17) and XTILEDATA (18), plus the Linux permission.
    Amx,
}

impl State {
    pub const fn mask(self) -> u64 {
        match self {
            State::Avx => 0x6,
            State::Avx512 => 0xE6,
            State::Amx => 0x60000,
        }
    }
}

/// One row of the table: `/proc/cpuinfo` name, CPUID leaf, subleaf, register, bit.
pub struct Spec {
    pub name: &'static str,
    pub leaf: u32,
    pub subleaf: u32,
    pub reg: usize,
    pub bit: u32,
    pub state: State,
}

const fn spec(
    name: &'static str,
    leaf: u32,
    subleaf: u32,
    reg: usize,
    bit: u32,
    state: State,
) -> Spec {
    Spec {
        name,
        leaf,
        subleaf,
        reg,
        bit,
        state,
    }
}

/// Every feature reported in `cpu.features`, keyed by its Linux `/proc/cpuinfo` name.
pub const FEATURES: &[Spec] = &[
    spec("avx", 1, 0, ECX, 28, State::Avx),
    spec("fma", 1, 0, ECX, 12, State::Avx),
    spec("f16c", 1, 0, ECX, 29, State::Avx),
    spec("avx2", 7, 0, EBX, 5, State::Avx),
    spec("avx_vnni", 7, 1, EAX, 4, State::Avx),
    spec("avx512f", 7, 0, EBX, 16, State::Avx512),
    spec("avx512dq", 7, 0, EBX, 17, State::Avx512),
    spec("avx512cd", 7, 0, EBX, 28, State::Avx512),
    spec("avx512bw", 7, 0, EBX, 30, State::Avx512),
    spec("avx512vl", 7, 0, EBX, 31, State::Avx512),
    spec("avx512vbmi", 7, 0, ECX, 1, State::Avx512),
    spec("avx512_vnni", 7, 0, ECX, 11, State::Avx512),
    spec("avx512_bf16", 7, 1, EAX, 5, State::Avx512),
    spec("avx512_fp16", 7, 0, EDX, 23, State::Avx512),
    spec("amx_bf16", 7, 0, EDX, 22, State::Amx),
    spec("amx_tile", 7, 0, EDX, 24, State::Amx),
    spec("amx_int8", 7, 0, EDX, 25, State::Amx),
    spec("amx_fp16", 7, 1, EAX, 21, State::Amx),
];

/// XFEATURE_XTILECFG (17) and XFEATURE_XTILEDATA (18) in the XCOMP permission mask.
const AMX_PERMISSION_BITS: u64 = super::AMX_STATE_BITS;

/// One feature: reported by the CPU, enabled by the OS, and both (plus, for AMX, a palette).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Support {
    pub cpu: bool,
    pub os: bool,
    pub usable: bool,
}

/// What [`detect`] learned.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Detected {
    /// Per row of [`FEATURES`], in table order.
    pub features: Vec<(&'static str, Support)>,
    /// XCR0, when OSXSAVE allowed reading it.
    pub xcr0: Option<u64>,
    /// CPUID leaf 0x1D EAX: the highest AMX palette (0 = no usable palette).
    pub amx_palettes: u32,
    /// Whether the kernel granted XTILEDATA; `None` when it was not asked (no AMX).
    pub amx_permission: Option<bool>,
    /// Things a person should know (e.g. AMX advertised without a palette).
    pub notes: Vec<String>,
}

#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))] // the callers are x86-only
impl Detected {
    /// The support of the feature named `name` (its `/proc/cpuinfo` name).
    pub fn get(&self, name: &str) -> Support {
        self.features
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, s)| *s)
            .unwrap_or_default()
    }

    /// Whether `name` is usable (CPU, OS and, for AMX, palette and permission).
    pub fn usable(&self, name: &str) -> bool {
        self.get(name).usable
    }
}

fn bit(regs: [u32; 4], reg: usize, bit: u32) -> bool {
    regs[reg] >> bit & 1 == 1
}

/// Runs the whole decision on `cpu`. The AMX permission is requested only when the CPU
/// reports AMX and XCR0 enables its state.
pub fn detect(cpu: &impl X86Cpu) -> Detected {
    let mut facts = Detected::default();
    let max_leaf = cpu.cpuid(0, 0)[EAX];
    let leaf1 = if max_leaf >= 1 {
        cpu.cpuid(1, 0)
    } else {
        [0; 4]
    };
    let leaf7 = if max_leaf >= 7 {
        cpu.cpuid(7, 0)
    } else {
        [0; 4]
    };
    let leaf7_1 = if max_leaf >= 7 && leaf7[EAX] >= 1 {
        cpu.cpuid(7, 1)
    } else {
        [0; 4]
    };
    let regs_for = |leaf: u32, subleaf: u32| match (leaf, subleaf) {
        (1, _) => leaf1,
        (7, 0) => leaf7,
        (7, 1) => leaf7_1,
        _ => [0; 4],
    };
    let osxsave = bit(leaf1, ECX, 27);
    facts.xcr0 = osxsave.then(|| cpu.xcr0());
    let xcr0 = facts.xcr0.unwrap_or(0);
    let enabled = |state: State| xcr0 & state.mask() == state.mask();

    let cpu_has = |spec: &Spec| bit(regs_for(spec.leaf, spec.subleaf), spec.reg, spec.bit);
    let amx_tile_cpu = FEATURES.iter().any(|s| s.name == "amx_tile" && cpu_has(s));
    if amx_tile_cpu {
        facts.amx_palettes = if max_leaf >= 0x1D {
            cpu.cpuid(0x1D, 0)[EAX]
        } else {
            0
        };
        if enabled(State::Amx) {
            let granted = cpu
                .request_amx()
                .is_some_and(|mask| mask & AMX_PERMISSION_BITS == AMX_PERMISSION_BITS);
            facts.amx_permission = Some(granted);
            if !granted {
                facts.notes.push("AMX: the kernel did not grant XTILEDATA (arch_prctl ARCH_REQ_XCOMP_PERM; Linux >= 5.16 needed)".into());
            }
        } else {
            facts.notes.push(format!("AMX: CPUID reports it but XCR0 ({xcr0:#x}) does not enable tile state (bits 17, 18)"));
        }
        if facts.amx_palettes == 0 {
            facts.notes.push("AMX: CPUID leaf 0x1D reports no tile palette, so AMX is not usable (misconfigured hypervisor?)".into());
        }
    }

    for spec in FEATURES {
        let cpu_bit = cpu_has(spec);
        let os = match spec.state {
            _ if !osxsave => false,
            State::Amx => enabled(State::Amx) && facts.amx_permission == Some(true),
            state => enabled(state),
        };
        let usable = cpu_bit && os && (spec.state != State::Amx || facts.amx_palettes >= 1);
        facts.features.push((
            spec.name,
            Support {
                cpu: cpu_bit,
                os,
                usable,
            },
        ));
    }
    facts
}

/// This host's features, detected once per process (the AMX permission is requested on
/// the first call). Off x86_64 every feature is absent.
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))] // the callers are x86-only
pub fn live() -> &'static Detected {
    static LIVE: std::sync::OnceLock<Detected> = std::sync::OnceLock::new();
    LIVE.get_or_init(|| {
        #[cfg(target_arch = "x86_64")]
        {
            detect(&Native)
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            Detected::default()
        }
    })
}

/// This CPU: CPUID through `core::arch`, XCR0 and the AMX permission through the
/// crate's primitives.
#[cfg(target_arch = "x86_64")]
struct Native;

#[cfg(target_arch = "x86_64")]
impl X86Cpu for Native {
    fn cpuid(&self, leaf: u32, subleaf: u32) -> [u32; 4] {
        let r = core::arch::x86_64::__cpuid_count(leaf, subleaf);
        [r.eax, r.ebx, r.ecx, r.edx]
    }

    fn xcr0(&self) -> u64 {
        super::xcr0().unwrap_or(0)
    }

    fn request_amx(&self) -> Option<u64> {
        super::request_xtiledata()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The table agrees with std's own detection for every feature std can name, and
    /// every row of the table is answered.
    #[test]
    #[cfg(target_arch = "x86_64")]
    fn live_table_agrees_with_std_detection() {
        let live = live();
        assert_eq!(live.features.len(), FEATURES.len());
        let pairs = [
            ("avx2", is_x86_feature_detected!("avx2")),
            ("fma", is_x86_feature_detected!("fma")),
            ("avx512f", is_x86_feature_detected!("avx512f")),
            ("avx512bw", is_x86_feature_detected!("avx512bw")),
            ("avx512vl", is_x86_feature_detected!("avx512vl")),
            ("avx512_vnni", is_x86_feature_detected!("avx512vnni")),
            ("avx512_bf16", is_x86_feature_detected!("avx512bf16")),
            ("avx512vbmi", is_x86_feature_detected!("avx512vbmi")),
            ("avx_vnni", is_x86_feature_detected!("avxvnni")),
        ];
        for (name, std_says) in pairs {
            assert_eq!(live.usable(name), std_says, "{name}: {live:?}");
        }
        // AMX usable needs every step: CPU bit, OS state, permission and a palette.
        if live.usable("amx_int8") {
            assert!(live.get("amx_tile").usable);
            assert_eq!(live.amx_permission, Some(true));
            assert!(live.amx_palettes >= 1);
        }
    }

    #[test]
    fn an_unknown_name_is_not_usable() {
        let d = Detected::default();
        assert_eq!(d.get("nope"), Support::default());
        assert!(!d.usable("avx2"));
    }
}
