//! `edgeplan probe`: the live host or a captured tree, into one [`Profile`].
//!
//! Order of work, each step reading only through a [`SysRoot`]:
//! 1. `/proc/cpuinfo` -> architecture (live: the build's own; sysroot: the cpuinfo
//!    dialect, told by fields only one architecture's kernel writes, else other signals
//!    in the tree; an architecture edgeplan does not plan for, or none, is exit 65);
//!    Arm cores grouped into clusters by implementer, part and variant;
//! 2. CPU features: live x86 via CPUID + XGETBV + `arch_prctl` (`x86/`), live arm64 via
//!    HWCAP (`arm/`), under a sysroot from the cpuinfo words with `os: null`;
//! 3. possible / online / usable CPU sets and cgroup limits -> usable threads and memory
//!    (`cgroup.rs`, `cpus.rs`, `memory.rs`);
//! 4. Jetson first (`jetson.rs`), then PCI GPUs (`gpu.rs`), then Android (`android.rs`);
//! 5. hardware class and `supports_bf16` (`class.rs`); environment (`environment.rs`).
//!
//! Missing facts are `null` with a line in `warnings`; only a sysroot that does not
//! exist (66) or a tree whose architecture cannot be told (65) fails the probe.
//! `dump.rs` copies what was read; `render.rs` draws the table.

pub mod android;
pub mod arm;
pub mod cgroup;
pub mod class;
pub mod cpuinfo;
pub mod cpus;
pub mod dump;
pub mod environment;
pub mod gpu;
pub mod jetson;
pub mod memory;
pub mod render;
pub mod sysroot;
pub mod x86;

use std::collections::BTreeMap;
use std::path::Path;

use crate::error::{data_error, io_error, no_input};
use crate::profile::{
    Arch, Cluster, Cpu, CpuId, Feature, Gpu, Jetson, Profile, SCHEMA_VERSION, Tool,
};
use cpuinfo::CpuInfo;
use environment::LiveSignals;
use sysroot::SysRoot;

/// Probes the live host (CPUID, XGETBV, arch_prctl, /proc, /sys).
pub fn live() -> anyhow::Result<Profile> {
    probe(&SysRoot::live())
}

/// Probes a captured tree; nothing live is read. Exit 66 when `dir` does not exist.
pub fn from_sysroot(dir: &Path) -> anyhow::Result<Profile> {
    check_sysroot(dir)?;
    probe(&SysRoot::at(dir))
}

/// Exit 66 when `dir` does not exist, 74 when it cannot be opened.
pub fn check_sysroot(dir: &Path) -> anyhow::Result<()> {
    match std::fs::metadata(dir) {
        Ok(meta) if meta.is_dir() => Ok(()),
        Ok(_) => Err(no_input(format!(
            "{}: --sysroot must be a directory (a captured / tree)",
            dir.display()
        ))),
        // A link loop names no directory either: the sysroot does not exist (66).
        Err(err)
            if err.kind() == std::io::ErrorKind::NotFound
                || err.raw_os_error() == Some(libc::ELOOP) =>
        {
            Err(no_input(format!(
                "{}: sysroot does not exist{} (capture one with `edgeplan probe --dump DIR`)",
                dir.display(),
                if err.kind() == std::io::ErrorKind::NotFound {
                    ""
                } else {
                    ": a symbolic link loop"
                }
            )))
        }
        Err(err) => Err(io_error(format!(
            "{}: cannot open sysroot: {err}",
            dir.display()
        ))),
    }
}

/// The whole probe over one root.
pub fn probe(sys: &SysRoot) -> anyhow::Result<Profile> {
    let info = match sys.read("/proc/cpuinfo") {
        Some(text) => CpuInfo::parse(&text),
        None => {
            sys.warn(format!(
                "{}: missing or unreadable; CPU facts unknown",
                sys.shown("/proc/cpuinfo")
            ));
            CpuInfo::default()
        }
    };
    let arch = decide_arch(sys, &info)?;
    let info = match info.dialect() {
        Some((described, _)) if described.supported() != Some(arch) => {
            // A live binary under emulation (qemu-user, Rosetta) reads the host's cpuinfo.
            sys.warn(format!(
                "{} describes a {} CPU but this process runs as {}: emulated? CPU identity from it ignored",
                sys.shown("/proc/cpuinfo"),
                described.name(),
                arch.as_str()
            ));
            CpuInfo {
                processors: info.processors,
                ..CpuInfo::default()
            }
        }
        _ => info,
    };
    let mut notes = Vec::new();
    let mut live = LiveSignals::default();
    let mut cpu = cpu_facts(sys, arch, &info, &mut notes, &mut live);

    let cgroup = cgroup::read(sys);
    let affinity = if sys.is_live() {
        cpus::live_affinity()
    } else {
        None
    };
    let counts = cpus::read(sys, info.processors, affinity, &cgroup);
    if arch == Arch::X86_64
        && counts.sources.get("logical_cpus").map(String::as_str)
            == Some("/proc/cpuinfo processor entries")
        && let Some(evidence) = info.missing_blocks()
    {
        sys.warn(format!(
            "{} holds {} `processor` block(s), but {evidence}: a partial copy of the file, CPUs offline, or a container's filtered view (lxcfs); logical_cpus and usable_threads count the blocks present",
            sys.shown("/proc/cpuinfo"),
            info.processors
        ));
    }
    if arch == Arch::X86_64
        && let Some(note) = hybrid_note(sys, &info)
    {
        sys.warn(note);
    }
    cpu.logical_cpus = counts.logical;
    cpu.possible_cpus = counts.possible;
    cpu.cpulists = counts.lists;
    if info.physical_cores > 0 {
        cpu.cores_physical = Some(info.physical_cores);
        cpu.sources.insert(
            "cores_physical".into(),
            "/proc/cpuinfo physical id + core id".into(),
        );
    }
    if let Some(nodes) = sys
        .read_line("/sys/devices/system/node/online")
        .and_then(|t| cgroup::cpulist_count(&t))
    {
        cpu.numa_nodes = Some(nodes);
        cpu.sources.insert(
            "numa_nodes".into(),
            "/sys/devices/system/node/online".into(),
        );
    }
    cpu.usable_threads = counts.usable;
    cpu.sources.extend(counts.sources);
    let memory = memory::read(sys, &cgroup);

    // Tegra before any GPU search: its GPU is a platform device, never a dGPU.
    let jetson = jetson::read(sys);
    let mut gpus = gpu::read(sys);
    add_integrated_gpu(sys, jetson.as_ref(), &mut gpus);
    let android = android::read(sys, info.hardware.as_deref());
    if sys.is_live() {
        live.wsl_env = ["WSL_INTEROP", "WSL_DISTRO_NAME"]
            .iter()
            .find(|v| std::env::var_os(v).is_some_and(|x| !x.is_empty()))
            .map(|v| v.to_string());
    }
    let environment = environment::read(sys, &cpu.flags, &live);

    let discrete: Vec<Gpu> = gpus
        .iter()
        .filter(|g| g.pci_bdf.is_some() && !gpu::reserved_for_vms(g))
        .cloned()
        .collect();
    let hardware_class = class::hardware_class(arch, android.as_ref(), jetson.as_ref(), &discrete);
    let supports_bf16 =
        class::supports_bf16(hardware_class, arch, &cpu, jetson.as_ref(), &discrete);

    let mut warnings = sys.take_warnings();
    warnings.extend(notes);
    Ok(Profile {
        schema_version: SCHEMA_VERSION,
        tool: Tool::this(),
        source: Some(if sys.is_live() { "live" } else { "sysroot" }.to_string()),
        label: (!sys.is_live())
            .then(|| {
                sys.root()
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
            })
            .flatten(),
        arch,
        hardware_class,
        supports_bf16,
        cpu,
        memory,
        gpus,
        jetson,
        android,
        environment: Some(environment),
        warnings,
        measurements: None,
    })
}

/// Puts a Jetson's integrated GPU first in `gpus`; without a Jetson, warns when the NVIDIA
/// driver is loaded but no NVIDIA GPU was found (a capture that left out sysfs).
fn add_integrated_gpu(sys: &SysRoot, jetson: Option<&Jetson>, gpus: &mut Vec<Gpu>) {
    if jetson.is_none()
        && !gpus.iter().any(|g| g.vendor == "nvidia")
        && let Some(version) = sys
            .read(gpu::NVIDIA_VERSION)
            .as_deref()
            .and_then(gpu::driver_version)
    {
        sys.warn(format!(
            "{} says NVIDIA driver {version} is loaded, but no NVIDIA GPU is listed in /sys/bus/pci/devices or /proc/driver/nvidia/gpus: the capture lacks them, so the class rests on the CPU alone; capture those directories too",
            sys.shown(gpu::NVIDIA_VERSION)
        ));
    }
    if let Some(j) = jetson {
        // The driver's own entries describe the integrated GPU added below, not a dGPU.
        gpus.retain(|g| !g.sources.contains_key("listed"));
        let mut sources = BTreeMap::new();
        sources.insert(
            "compute_capability".to_string(),
            match &j.soc_source {
                Some(how) if j.compute_capability.is_some() => {
                    format!("Tegra SoC table ({how})")
                }
                _ => "unknown: the Tegra SoC is unknown".to_string(),
            },
        );
        sources.insert(
            "memory_bytes".to_string(),
            "unified with system memory (see memory)".to_string(),
        );
        gpus.insert(
            0,
            Gpu {
                vendor: "nvidia".into(),
                name: Some(format!(
                    "{} (integrated)",
                    j.family.as_deref().unwrap_or("Tegra")
                )),
                memory_bytes: None,
                compute_capability: j.compute_capability.clone(),
                driver: Some("nvgpu".into()),
                sources,
                ..Gpu::default()
            },
        );
    }
}

/// The message for a tree or host whose architecture edgeplan does not plan for.
fn unsupported(what: &str, seen: &str) -> anyhow::Error {
    data_error(format!(
        "{what} is not a supported target: vLLM edge paths cover x86_64 and aarch64 (seen: {seen})"
    ))
}

/// Live: the architecture this binary was built for (a 32-bit build on a 64-bit kernel
/// names both). Sysroot: the cpuinfo dialect (fields only one architecture's kernel
/// writes), else other arch-specific files in the tree, else exit 65. A recognised
/// architecture edgeplan does not plan for is exit 65 too, naming it.
fn decide_arch(sys: &SysRoot, info: &CpuInfo) -> anyhow::Result<Arch> {
    if sys.is_live() {
        return match std::env::consts::ARCH {
            "x86_64" => Ok(Arch::X86_64),
            "aarch64" => Ok(Arch::Aarch64),
            other => {
                let machine = uname_machine().unwrap_or_else(|| "unknown".into());
                let what = match other {
                    "arm" => "32-bit ARM".to_string(),
                    "x86" => "32-bit x86".to_string(),
                    o => o.to_string(),
                };
                Err(unsupported(
                    &format!("this edgeplan build ({what})"),
                    &format!(
                        "compile target {other}, uname machine {machine}; on a 64-bit kernel install the x86_64 or aarch64 build"
                    ),
                ))
            }
        };
    }
    let shown = sys.shown("/proc/cpuinfo");
    if let Some((dialect, evidence)) = info.dialect() {
        return match dialect.supported() {
            Some(arch) => Ok(arch),
            None => Err(unsupported(
                &format!("{shown}: {}", dialect.name()),
                &evidence,
            )),
        };
    }
    let abi = primary_abi(sys);
    let inferred: Option<(Result<Arch, String>, String)> =
        match abi.as_ref().map(|(abi, key)| (abi.as_str(), key.as_str())) {
            Some(("arm64-v8a", key)) => Some((Ok(Arch::Aarch64), key.to_string())),
            Some(("x86_64", key)) => Some((Ok(Arch::X86_64), key.to_string())),
            Some((abi @ ("armeabi-v7a" | "armeabi"), key)) => {
                return Err(unsupported(
                    &format!("{shown}: 32-bit ARM"),
                    &format!("{key}={abi}"),
                ));
            }
            Some(("x86", key)) => {
                return Err(unsupported(
                    &format!("{shown}: 32-bit x86"),
                    &format!("{key}=x86"),
                ));
            }
            _ if sys.exists("/sys/devices/system/cpu/cpu0/regs/identification/midr_el1") => Some((
                Ok(Arch::Aarch64),
                "/sys/devices/system/cpu/cpu0/regs/identification/midr_el1".to_string(),
            )),
            _ if sys.exists("/proc/device-tree/compatible") => Some((
                Ok(Arch::Aarch64),
                "/proc/device-tree (x86 does not use a device tree)".to_string(),
            )),
            _ => nvrm_or_l4t_arch(sys),
        };
    let inferred = match inferred {
        Some((Err(named), how)) => {
            return Err(unsupported(&format!("{shown}: missing; {how}"), &named));
        }
        Some((Ok(arch), how)) => Some((arch, how)),
        None => None,
    };
    match inferred {
        Some((arch, how)) => {
            sys.warn(format!(
                "{shown}: no line that names an architecture; {} inferred from {how}; CPU features unknown",
                arch.as_str()
            ));
            Ok(arch)
        }
        // A cpuinfo that is there but cannot be read is an I/O failure (74) naming its
        // cause, not bad data: reading it as another user would tell the architecture.
        None if sys.failure("/proc/cpuinfo").is_some() => Err(io_error(format!(
            "{shown}: cannot read: {}; nothing else in the tree names the architecture (run as a user that can read it)",
            sys.failure("/proc/cpuinfo").unwrap_or_default()
        ))),
        None if !sys.exists("/proc/cpuinfo") => Err(data_error(format!(
            "{shown}: missing, and nothing else in the tree names the architecture: is this the root of a captured tree (it holds proc/cpuinfo)?"
        ))),
        None => Err(data_error(format!(
            "{shown}: cannot tell the architecture: no line that only one architecture's kernel writes (x86 `vendor_id`/`flags`, Arm `CPU implementer`/`Features`, ...), and nothing else in the tree names one; capture /proc/cpuinfo again"
        ))),
    }
}

/// The architecture a tree without a usable cpuinfo names elsewhere: the NVIDIA kernel
/// module's `NVRM version:` line (`... Kernel Module for aarch64 ...`), else the L4T
/// release file's `EABI: aarch64`. `Err` holds an architecture edgeplan does not plan for.
fn nvrm_or_l4t_arch(sys: &SysRoot) -> Option<(Result<Arch, String>, String)> {
    let from_nvrm = sys
        .read(gpu::NVIDIA_VERSION)
        .as_deref()
        .and_then(gpu::nvrm_line)
        .map(|(arch, _)| {
            (
                arch,
                format!("{} (NVRM kernel module build)", gpu::NVIDIA_VERSION),
            )
        });
    let from_l4t = || {
        let text = sys.read("/etc/nv_tegra_release")?;
        let eabi = text
            .split("EABI:")
            .nth(1)?
            .split(',')
            .next()?
            .trim()
            .to_string();
        (!eabi.is_empty()).then(|| (eabi, "/etc/nv_tegra_release EABI".to_string()))
    };
    let (arch, how) = from_nvrm.or_else(from_l4t)?;
    Some(match arch.as_str() {
        "x86_64" => (Ok(Arch::X86_64), how),
        "aarch64" => (Ok(Arch::Aarch64), how),
        other => (Err(format!("{how} says {other}")), how),
    })
}

/// The image's primary ABI from its build properties: `ro.product.cpu.abi`, else the
/// first entry of an `*.cpu.abilist` (`ro.vendor.product.cpu.abilist` on firmware images
/// that no longer write the old key). Returns the ABI and the key it came from.
fn primary_abi(sys: &SysRoot) -> Option<(String, String)> {
    let mut props = BTreeMap::new();
    for f in ["/system/build.prop", "/vendor/build.prop"] {
        if let Some(text) = sys.read(f) {
            android::parse_props(&text, &mut props);
        }
    }
    if let Some(abi) = props.get("ro.product.cpu.abi").filter(|v| !v.is_empty()) {
        return Some((abi.clone(), "ro.product.cpu.abi".into()));
    }
    props
        .iter()
        .filter(|(k, _)| k.ends_with("cpu.abilist"))
        .find_map(|(k, v)| {
            let first = v.split(',').next()?.trim();
            (!first.is_empty()).then(|| (first.to_string(), k.clone()))
        })
}

/// `uname -m` of the running kernel.
#[cfg(unix)]
fn uname_machine() -> Option<String> {
    // SAFETY: utsname is plain data; all-zero is valid and uname fills it in.
    let mut uts: libc::utsname = unsafe { std::mem::zeroed() };
    // SAFETY: the pointer is to a live, writable utsname.
    if unsafe { libc::uname(&mut uts) } != 0 {
        return None;
    }
    let bytes: Vec<u8> = uts
        .machine
        .iter()
        .take_while(|&&c| c != 0)
        // c_char is i8 on x86_64 and u8 on aarch64: the cast is a no-op on one of them.
        .map(|&c| {
            #[allow(clippy::unnecessary_cast)]
            let byte = c as u8;
            byte
        })
        .collect();
    String::from_utf8(bytes).ok()
}

#[cfg(not(unix))]
fn uname_machine() -> Option<String> {
    None
}

/// Arm clusters: CPUs grouped by (implementer, part, variant) in CPU order, from the
/// per-processor cpuinfo identity, else from sysfs `midr_el1` of each online CPU.
fn arm_clusters(sys: &SysRoot, info: &CpuInfo) -> (Vec<Cluster>, &'static str) {
    let mut cores: Vec<cpuinfo::CoreIdentity> = Vec::new();
    let mut per_cpu = info.identity_per_cpu();
    let mut source = "/proc/cpuinfo CPU implementer/variant/part per processor";
    if per_cpu {
        cores = info.cores.clone();
    } else {
        let online = sys
            .read_line("/sys/devices/system/cpu/online")
            .and_then(|t| cpus::parse_cpulist(&t))
            .unwrap_or_default();
        for cpu in online.iter().take(1024) {
            let file = format!("/sys/devices/system/cpu/cpu{cpu}/regs/identification/midr_el1");
            if let Some(m) = sys.read_line(&file).and_then(|t| arm::parse_midr(&t)) {
                cores.push(cpuinfo::CoreIdentity {
                    implementer: Some(format!("0x{:02x}", m.implementer)),
                    variant: Some(format!("0x{:x}", m.variant)),
                    part: Some(format!("0x{:03x}", m.part)),
                });
            }
        }
        if !cores.is_empty() && cores.len() == online.len() {
            per_cpu = true;
            source = "sysfs regs/identification/midr_el1 per CPU";
        } else {
            cores = info.cores.clone();
            source = "/proc/cpuinfo (one identity for all CPUs: counts unknown)";
        }
    }
    let mut clusters: Vec<Cluster> = Vec::new();
    for core in &cores {
        match clusters.iter_mut().find(|c| {
            c.implementer == core.implementer && c.part == core.part && c.variant == core.variant
        }) {
            Some(c) => c.count = c.count.map(|n| n + 1),
            None => clusters.push(Cluster {
                name: arm::display_name(
                    core.implementer.as_deref(),
                    core.part.as_deref(),
                    core.variant.as_deref(),
                ),
                implementer: core.implementer.clone(),
                part: core.part.clone(),
                variant: core.variant.clone(),
                count: per_cpu.then_some(1),
            }),
        }
    }
    // Two clusters with one name (MSM8996's Kryo parts 0x205 and 0x211, or one part in
    // two variants) are told apart by the code that differs.
    let snapshot: Vec<(String, Option<String>)> = clusters
        .iter()
        .map(|c| (c.name.clone(), c.part.clone()))
        .collect();
    for (i, c) in clusters.iter_mut().enumerate() {
        let twins: Vec<&(String, Option<String>)> = snapshot
            .iter()
            .enumerate()
            .filter(|&(j, (name, _))| j != i && *name == snapshot[i].0)
            .map(|(_, t)| t)
            .collect();
        if twins.is_empty() {
            continue;
        }
        let part_differs = twins.iter().all(|(_, part)| *part != c.part);
        c.name = match (&c.part, &c.variant) {
            (Some(p), _) if part_differs => format!("{} (part {p})", snapshot[i].0),
            (_, Some(v)) => format!("{} (variant {v})", snapshot[i].0),
            _ => snapshot[i].0.clone(),
        };
    }
    (clusters, source)
}

/// `4x Cortex-A55 + 4x Cortex-A76`; names alone when the counts are unknown.
pub fn clusters_model_name(clusters: &[Cluster]) -> Option<String> {
    (!clusters.is_empty()).then(|| {
        clusters
            .iter()
            .map(|c| match c.count {
                Some(n) => format!("{n}x {}", c.name),
                None => c.name.clone(),
            })
            .collect::<Vec<_>>()
            .join(" + ")
    })
}

/// Facts that limit what can run on this CPU, one line each.
fn x86_caveats(cpu: &Cpu) -> Vec<String> {
    let known = |n: &str| cpu.features.get(n).map(|f| f.usable);
    let mut caveats = Vec::new();
    match (known("avx"), known("avx2")) {
        (Some(false), _) => caveats.push(
            "no AVX: vLLM's x86 CPU backend is built for AVX2/AVX-512 and will not run here; edgeplan's own kernels fall back to scalar code".to_string(),
        ),
        (Some(true), Some(false)) => caveats.push(
            "AVX but no AVX2: vLLM's x86 CPU backend needs AVX2 at least; edgeplan's own kernels fall back to scalar code".to_string(),
        ),
        _ => {}
    }
    caveats
}

fn cpu_facts(
    sys: &SysRoot,
    arch: Arch,
    info: &CpuInfo,
    notes: &mut Vec<String>,
    live: &mut LiveSignals,
) -> Cpu {
    let mut cpu = Cpu {
        flags: info
            .words_for(arch)
            .map(<[String]>::to_vec)
            .unwrap_or_default(),
        ..Cpu::default()
    };
    let words_source = match arch {
        Arch::X86_64 => "/proc/cpuinfo flags",
        Arch::Aarch64 => "/proc/cpuinfo Features",
    };
    if info.words_for(arch).is_some() {
        cpu.sources.insert("flags".into(), words_source.into());
    }
    match arch {
        Arch::X86_64 => {
            cpu.vendor = info.vendor_id.clone();
            cpu.model_name = info.model_name.clone();
            cpu.id = (info.family.is_some() || info.model.is_some()).then(|| CpuId {
                family: info.family,
                model: info.model,
                stepping: info.stepping,
                ..CpuId::default()
            });
        }
        Arch::Aarch64 => {
            if info
                .features
                .iter()
                .flatten()
                .any(|w| cpuinfo::ARM32_WORDS.contains(&w.as_str()))
            {
                notes.push(format!(
                    "{} is an arm64 kernel's 32-bit view (a 32-bit process read it): its Features are AArch32 names, so arm64 features are unknown",
                    sys.shown("/proc/cpuinfo")
                ));
            }
            let (clusters, source) = arm_clusters(sys, info);
            let mut vendors: Vec<String> = Vec::new();
            for c in &clusters {
                if let Some(i) = c.implementer.as_deref() {
                    let name = arm::vendor_name(i).unwrap_or(i).to_string();
                    if !vendors.contains(&name) {
                        vendors.push(name);
                    }
                }
            }
            cpu.vendor = (!vendors.is_empty())
                .then(|| vendors.join(" + "))
                .or_else(|| {
                    info.implementer
                        .as_deref()
                        .map(|i| arm::vendor_name(i).unwrap_or(i).to_string())
                });
            cpu.model_name = clusters_model_name(&clusters).or_else(|| info.model_name.clone());
            if !clusters.is_empty() {
                cpu.sources.insert("model_name".into(), source.into());
            }
            let mut parts: Vec<String> = Vec::new();
            for c in &clusters {
                if let Some(p) = &c.part
                    && !parts.contains(p)
                {
                    parts.push(p.clone());
                }
            }
            if parts.is_empty() {
                parts = info.parts.clone();
            }
            cpu.id = clusters
                .first()
                .and_then(|c| c.implementer.clone())
                .or_else(|| info.implementer.clone())
                .map(|i| CpuId {
                    implementer: Some(i),
                    parts,
                    ..CpuId::default()
                });
            cpu.clusters = clusters;
        }
    }

    let live_x86 = if sys.is_live() && arch == Arch::X86_64 {
        x86::native()
    } else {
        None
    };
    let live_arm = if sys.is_live() && arch == Arch::Aarch64 {
        arm::live_hwcaps()
    } else {
        None
    };
    if let Some(native) = live_x86 {
        let facts = x86::probe(&native);
        cpu.vendor = facts.vendor.clone().or(cpu.vendor);
        cpu.model_name = facts.brand.clone().or(cpu.model_name);
        cpu.id = Some(CpuId {
            family: Some(facts.family),
            model: Some(facts.model),
            stepping: Some(facts.stepping),
            ..CpuId::default()
        });
        cpu.features = facts.features.clone();
        cpu.sources.insert(
            "features".into(),
            "cpuid + xgetbv (XCR0) + arch_prctl(ARCH_REQ_XCOMP_PERM) + cpuid 0x1D".into(),
        );
        live.cpuid_hypervisor = Some((facts.hypervisor, facts.hypervisor_name.clone()));
        notes.extend(facts.notes.iter().cloned());
        cross_check(&cpu, notes);
    } else if let Some((hwcap, hwcap2)) = live_arm {
        cpu.features = arm::from_hwcaps(hwcap, hwcap2);
        cpu.sources
            .insert("features".into(), "getauxval(AT_HWCAP, AT_HWCAP2)".into());
        cross_check(&cpu, notes);
    } else if let Some(words) = info.words_for(arch) {
        cpu.features = match arch {
            Arch::X86_64 => x86::FEATURES
                .iter()
                .map(|spec| {
                    let on = words.iter().any(|w| w == spec.name);
                    (
                        spec.name.to_string(),
                        Feature {
                            cpu: on,
                            os: None,
                            usable: on,
                        },
                    )
                })
                .collect(),
            Arch::Aarch64
                if words
                    .iter()
                    .any(|w| cpuinfo::ARM32_WORDS.contains(&w.as_str())) =>
            {
                BTreeMap::new()
            }
            Arch::Aarch64 => arm::from_words(words),
        };
        if arch == Arch::X86_64 {
            let release = sys.read_line("/proc/sys/kernel/osrelease");
            if let Some(note) = old_kernel_amx(&mut cpu.features, release.as_deref()) {
                notes.push(note);
            } else if release.is_none()
                && cpu
                    .features
                    .iter()
                    .any(|(n, f)| n.starts_with("amx_") && f.cpu)
            {
                notes.push(format!(
                    "{} is missing: the kernel version is unknown, so the amx flags are taken as enabled tile state (a kernel before 5.16 lists them without enabling it); probe the live host to settle it",
                    sys.shown("/proc/sys/kernel/osrelease")
                ));
            }
            if let Some(name) = amx_model_without_amx_flags(&cpu) {
                notes.push(format!(
                    "{name} has AMX, but {} lists no amx flags: a hypervisor that hides it or a kernel that did not enable it; AMX is taken as unavailable here",
                    sys.shown("/proc/cpuinfo")
                ));
            }
        }
        cpu.sources.insert(
            "features".into(),
            format!("{words_source} (the kernel lists only what it enabled; os unknown)"),
        );
    }
    if cpu.flags.is_empty() {
        cpu.flags = cpu
            .features
            .iter()
            .filter(|(_, f)| f.cpu)
            .map(|(n, _)| n.clone())
            .collect();
    }
    if arch == Arch::X86_64 {
        cpu.caveats = x86_caveats(&cpu);
    }
    cpu
}

/// Live only: a feature the kernel lists in cpuinfo but the instructions say is unusable
/// (or the reverse) is worth a line.
fn cross_check(cpu: &Cpu, notes: &mut Vec<String>) {
    if cpu.flags.is_empty() {
        return;
    }
    for (name, feature) in &cpu.features {
        let listed = cpu.has_flag(name);
        if listed && !feature.usable {
            notes.push(format!(
                "{name}: listed in /proc/cpuinfo but not usable by this process (cpu {}, os {:?})",
                feature.cpu, feature.os
            ));
        } else if !listed && feature.usable {
            notes.push(format!(
                "{name}: usable per CPUID/HWCAP but not listed in /proc/cpuinfo (older kernel?)"
            ));
        }
    }
}

/// A hybrid x86 part (performance + efficiency cores) told by the kernel's per-type PMU
/// devices, `/sys/devices/cpu_core/cpus` and `/sys/devices/cpu_atom/cpus` (Linux's
/// `tools/perf/Documentation/intel-hybrid.txt`), or else by `/proc/cpuinfo` packages
/// whose thread count is uneven across their cores. A note, not a field: the thread
/// counts stay what they are, and the note says what an even split across both kinds
/// costs.
fn hybrid_note(sys: &SysRoot, info: &CpuInfo) -> Option<String> {
    const COST: &str = "a GEMM split evenly across both kinds waits on the efficiency cores";
    let core = sys.read_line("/sys/devices/cpu_core/cpus");
    let atom = sys.read_line("/sys/devices/cpu_atom/cpus");
    if let (Some(p), Some(e)) = (&core, &atom)
        && !p.is_empty()
        && !e.is_empty()
    {
        return Some(format!(
            "hybrid CPU: performance cores on CPUs {p} ({}), efficiency cores on CPUs {e} ({}); {COST}",
            sys.shown("/sys/devices/cpu_core/cpus"),
            sys.shown("/sys/devices/cpu_atom/cpus")
        ));
    }
    let (package, threads, cores) = info.uneven_threads()?;
    Some(format!(
        "hybrid CPU: package {package} declares {threads} threads on {cores} cores in {} (some cores run two threads, some one: performance cores beside efficiency cores), and no /sys/devices/cpu_core/cpus says which CPUs are which; {COST}",
        sys.shown("/proc/cpuinfo")
    ))
}

/// Intel server parts that have AMX, by family 6 model number (the Linux kernel's
/// `arch/x86/include/asm/intel-family.h`: SAPPHIRERAPIDS_X 0x8F, EMERALDRAPIDS_X 0xCF,
/// GRANITERAPIDS_X 0xAD, GRANITERAPIDS_D 0xAE).
const AMX_MODELS: &[(u32, &str)] = &[
    (0x8F, "Sapphire Rapids"),
    (0xCF, "Emerald Rapids"),
    (0xAD, "Granite Rapids"),
    (0xAE, "Granite Rapids-D"),
];

/// Under a sysroot: the name of an AMX-capable Intel model whose flags list no AMX (a
/// guest whose hypervisor hides it, or a kernel that disabled it), so the absence is
/// explained rather than read as "this CPU has no tiles".
fn amx_model_without_amx_flags(cpu: &Cpu) -> Option<String> {
    if cpu.vendor.as_deref() != Some("GenuineIntel") || cpu.has_flag("amx_tile") {
        return None;
    }
    let id = cpu.id.as_ref()?;
    if id.family != Some(6) {
        return None;
    }
    let model = id.model?;
    AMX_MODELS
        .iter()
        .find(|(m, _)| *m == model)
        .map(|(_, name)| format!("family 6 model {model} ({name})"))
}

/// Linux before 5.16 could list the `amx_*` flags (names known since 5.9) without
/// enabling the tile state in XCR0, so under a sysroot those flags do not mean usable:
/// the release says the OS did not enable them (`os: false`), which the planner reads as
/// an OS fact rather than falling back to the flags.
fn old_kernel_amx(
    features: &mut BTreeMap<String, Feature>,
    osrelease: Option<&str>,
) -> Option<String> {
    let release = osrelease?;
    let mut parts = release
        .split(|c: char| !c.is_ascii_digit())
        .filter(|p| !p.is_empty());
    let major: u32 = parts.next()?.parse().ok()?;
    let minor: u32 = parts.next()?.parse().ok()?;
    if (major, minor) >= (5, 16) {
        return None;
    }
    let mut hit = false;
    for (name, feature) in features.iter_mut() {
        if name.starts_with("amx_") && feature.cpu {
            // The release is the evidence: such a kernel never sets XCR0's tile bits.
            feature.os = Some(false);
            feature.usable = false;
            hit = true;
        }
    }
    hit.then(|| {
        format!("kernel {release} predates Linux 5.16, which first enables AMX tile state upstream: the amx flags are listed but taken as not enabled (os false); a distribution kernel with AMX backported shows it only to a live probe")
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn amx_flags_on_a_kernel_before_5_16_are_not_usable() {
        let on = Feature {
            cpu: true,
            os: None,
            usable: true,
        };
        let fresh = || -> BTreeMap<String, Feature> {
            [("amx_tile", on), ("amx_int8", on), ("avx512f", on)]
                .iter()
                .map(|(n, f)| (n.to_string(), *f))
                .collect()
        };
        let mut f = fresh();
        let note = old_kernel_amx(&mut f, Some("5.15.0-126-generic")).unwrap();
        assert!(note.contains("5.16"));
        assert!(!f["amx_tile"].usable && f["amx_tile"].cpu && !f["amx_int8"].usable);
        assert_eq!(f["amx_int8"].os, Some(false), "the release is an OS fact");
        assert_eq!(f["avx512f"].os, None);
        assert!(f["avx512f"].usable);
        for newer in ["5.16.0", "6.8.0-49-generic", "10.0"] {
            let mut f = fresh();
            assert_eq!(old_kernel_amx(&mut f, Some(newer)), None, "{newer}");
            assert!(f["amx_int8"].usable);
        }
        let mut f = fresh();
        assert_eq!(old_kernel_amx(&mut f, Some("garbage")), None);
        assert_eq!(old_kernel_amx(&mut f, None), None);
    }
}
