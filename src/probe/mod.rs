//! `edgeplan probe`: the live host or a captured tree, into one [`Profile`].
//!
//! Order of work, each step reading only through a [`SysRoot`]:
//! 1. `/proc/cpuinfo` -> architecture (live: the build's own; sysroot: `flags` means
//!    x86_64, `Features` aarch64, else other signals in the tree, else exit 65);
//! 2. CPU features: live x86 via CPUID + XGETBV + `arch_prctl` (`x86/`), live arm64 via
//!    HWCAP (`arm/`), under a sysroot from the cpuinfo words with `os: null`;
//! 3. cgroup limits -> usable threads and memory (`cgroup.rs`, `cpus.rs`, `memory.rs`);
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
use crate::profile::{Arch, Cpu, CpuId, Feature, Gpu, Profile, SCHEMA_VERSION, Tool};
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
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => Err(no_input(format!(
            "{}: sysroot does not exist (capture one with `edgeplan probe --dump DIR`)",
            dir.display()
        ))),
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
    let info = match info.arch() {
        Some(described) if described != arch => {
            // A live binary under emulation (qemu-user, Rosetta) reads the host's cpuinfo.
            sys.warn(format!(
                "{} describes a {} CPU but this process runs as {}: emulated? CPU identity from it ignored",
                sys.shown("/proc/cpuinfo"),
                described.as_str(),
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
    cpu.logical_cpus = counts.logical;
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
    if let Some(j) = &jetson {
        let mut sources = BTreeMap::new();
        sources.insert(
            "compute_capability".to_string(),
            "Tegra SoC table".to_string(),
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
    let android = android::read(sys);
    if sys.is_live() {
        live.wsl_env = ["WSL_INTEROP", "WSL_DISTRO_NAME"]
            .iter()
            .find(|v| std::env::var_os(v).is_some_and(|x| !x.is_empty()))
            .map(|v| v.to_string());
    }
    let environment = environment::read(sys, &cpu.flags, &live);

    let discrete: Vec<Gpu> = gpus
        .iter()
        .filter(|g| g.pci_bdf.is_some())
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

/// Live: the architecture this binary was built for. Sysroot: what the tree's cpuinfo
/// says, else other arch-specific files in the tree, else exit 65.
fn decide_arch(sys: &SysRoot, info: &CpuInfo) -> anyhow::Result<Arch> {
    if sys.is_live() {
        return match std::env::consts::ARCH {
            "x86_64" => Ok(Arch::X86_64),
            "aarch64" => Ok(Arch::Aarch64),
            other => Err(data_error(format!(
                "this host's architecture {other} is not one edgeplan profiles (x86_64, aarch64)"
            ))),
        };
    }
    if let Some(arch) = info.arch() {
        return Ok(arch);
    }
    let abi = ["/vendor/build.prop", "/system/build.prop"]
        .iter()
        .find_map(|f| {
            let mut props = BTreeMap::new();
            android::parse_props(&sys.read(f)?, &mut props);
            props.get("ro.product.cpu.abi").cloned()
        });
    let inferred = match abi.as_deref() {
        Some("arm64-v8a") => Some((Arch::Aarch64, "ro.product.cpu.abi")),
        Some("x86_64") => Some((Arch::X86_64, "ro.product.cpu.abi")),
        _ if sys.exists("/sys/devices/system/cpu/cpu0/regs/identification/midr_el1") => Some((
            Arch::Aarch64,
            "/sys/devices/system/cpu/cpu0/regs/identification/midr_el1",
        )),
        _ if sys.exists("/proc/device-tree/compatible") => Some((
            Arch::Aarch64,
            "/proc/device-tree (x86 does not use a device tree)",
        )),
        _ => None,
    };
    match inferred {
        Some((arch, how)) => {
            sys.warn(format!(
                "{}: no usable `flags` or `Features` line; architecture {} inferred from {how}; CPU features unknown",
                sys.shown("/proc/cpuinfo"),
                arch.as_str()
            ));
            Ok(arch)
        }
        None => Err(data_error(format!(
            "{}: cannot tell the architecture: no `flags` (x86_64) or `Features` (aarch64) line, and nothing else in the tree names one; capture /proc/cpuinfo again",
            sys.shown("/proc/cpuinfo")
        ))),
    }
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
            cpu.vendor = info
                .implementer
                .as_deref()
                .map(|i| arm::vendor_name(i).unwrap_or(i).to_string());
            let cores: Vec<&str> = info
                .parts
                .iter()
                .filter_map(|p| {
                    info.implementer
                        .as_deref()
                        .and_then(|i| arm::core_name(i, p))
                })
                .collect();
            cpu.model_name = (!cores.is_empty())
                .then(|| cores.join(" + "))
                .or_else(|| info.model_name.clone());
            cpu.id = info.implementer.as_ref().map(|i| CpuId {
                implementer: Some(i.clone()),
                parts: info.parts.clone(),
                ..CpuId::default()
            });
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
            Arch::Aarch64 => arm::from_words(words),
        };
        if arch == Arch::X86_64 {
            let release = sys.read_line("/proc/sys/kernel/osrelease");
            if let Some(note) = old_kernel_amx(&mut cpu.features, release.as_deref()) {
                notes.push(note);
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

/// Linux before 5.16 could list the `amx_*` flags (names known since 5.9) without
/// enabling the tile state in XCR0, so under a sysroot those flags do not mean usable.
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
        if name.starts_with("amx_") && feature.usable {
            feature.usable = false;
            hit = true;
        }
    }
    hit.then(|| {
        format!("kernel {release} predates Linux 5.16, which first enables AMX tile state: amx flags are listed but not usable")
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
