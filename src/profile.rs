//! The device profile: the one seam between `probe` and everything that consumes it.
//!
//! `probe` produces a [`Profile`]; `plan`, `bench` and `check` read one, never their own
//! detection. The JSON shape is the contract's (`schema_version` 1); readers ignore
//! unknown fields, and a profile whose `schema_version` major is not 1 is rejected with
//! exit 65. Facts that could not be established are `null`, never guessed.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::error::data_error;

/// Major version of the profile JSON. Additive changes keep it; breaking ones bump it.
pub const SCHEMA_VERSION: u32 = 1;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Profile {
    pub schema_version: u32,
    pub tool: Tool,
    /// Where the facts came from: `live`, `sysroot`, `captured` or `hand-written`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    /// A name for the device in fleet views; file name when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    pub arch: Arch,
    pub hardware_class: HardwareClass,
    pub supports_bf16: bool,
    pub cpu: Cpu,
    pub memory: Memory,
    #[serde(default)]
    pub gpus: Vec<Gpu>,
    #[serde(default)]
    pub jetson: Option<Jetson>,
    #[serde(default)]
    pub android: Option<Android>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub environment: Option<Environment>,
    /// What the probe could not establish, one line each.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
    /// Figures written by `bench --save`; absent in a plain probe.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub measurements: Option<serde_json::Value>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Tool {
    pub name: String,
    pub version: String,
}

impl Tool {
    pub fn this() -> Tool {
        Tool {
            name: "edgeplan".into(),
            version: env!("CARGO_PKG_VERSION").into(),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Arch {
    #[serde(rename = "x86_64")]
    X86_64,
    #[serde(rename = "aarch64")]
    Aarch64,
}

impl Arch {
    pub fn as_str(self) -> &'static str {
        match self {
            Arch::X86_64 => "x86_64",
            Arch::Aarch64 => "aarch64",
        }
    }
}

/// The contract's hardware classes, in precedence order (first match wins).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum HardwareClass {
    NpuPhone,
    Jetson,
    CudaDiscrete,
    Arm64Cpu,
    X86Cpu,
}

impl HardwareClass {
    pub const ALL: [HardwareClass; 5] = [
        HardwareClass::NpuPhone,
        HardwareClass::Jetson,
        HardwareClass::CudaDiscrete,
        HardwareClass::Arm64Cpu,
        HardwareClass::X86Cpu,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            HardwareClass::NpuPhone => "npu_phone",
            HardwareClass::Jetson => "jetson",
            HardwareClass::CudaDiscrete => "cuda_discrete",
            HardwareClass::Arm64Cpu => "arm64_cpu",
            HardwareClass::X86Cpu => "x86_cpu",
        }
    }
}

impl std::fmt::Display for HardwareClass {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Cpu {
    pub vendor: Option<String>,
    pub model_name: Option<String>,
    pub logical_cpus: Option<u32>,
    pub usable_threads: Option<u32>,
    /// Linux `/proc/cpuinfo` flag names (`flags` on x86, `Features` on arm64).
    #[serde(default)]
    pub flags: Vec<String>,
    /// Per feature: does the CPU report it, did the OS enable it, may we rely on it.
    #[serde(default)]
    pub features: BTreeMap<String, Feature>,
    /// Extension: x86 family/model/stepping, or arm64 implementer/part (`0x41`, `0xd40`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<CpuId>,
    /// Extension: physical cores (distinct `physical id`/`core id` pairs of x86 cpuinfo).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cores_physical: Option<u32>,
    /// Extension: NUMA nodes online (`/sys/devices/system/node/online`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub numa_nodes: Option<u32>,
    /// Extension: where each CPU fact came from (`logical_cpus`, `usable_threads`, `features`, ...).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub sources: BTreeMap<String, String>,
    /// Extension: Arm core clusters (same implementer, part and variant), in CPU order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub clusters: Vec<Cluster>,
    /// Extension: CPUs the kernel could bring online (`/sys/devices/system/cpu/possible`);
    /// more than `logical_cpus` when cores were offline (hotplugged) at probe time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub possible_cpus: Option<u32>,
    /// Extension: the possible, online and usable CPU sets as kernel cpulists (`0-3,6`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpulists: Option<CpuLists>,
    /// Extension: facts about this CPU that limit what can run on it, one line each
    /// (e.g. an x86 CPU without AVX).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub caveats: Vec<String>,
}

/// Extension: Arm cores sharing one MIDR identity.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Cluster {
    /// The core's name (`Cortex-A76`), or `implementer 0xNN part 0xNNN` when unknown.
    pub name: String,
    pub implementer: Option<String>,
    pub part: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub variant: Option<String>,
    /// How many CPUs; `null` when the kernel printed one identity for all of them.
    pub count: Option<u32>,
}

/// Extension: CPU sets as kernel cpulists; `null` when unknown.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CpuLists {
    pub possible: Option<String>,
    pub online: Option<String>,
    pub usable: Option<String>,
}

/// Extension: the CPU's identity numbers, as the kernel or CPUID reports them.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CpuId {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub family: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stepping: Option<u32>,
    /// arm64 `CPU implementer`, e.g. `0x41` (Arm).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub implementer: Option<String>,
    /// arm64 `CPU part` of every distinct core type, e.g. `["0xd40"]`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub parts: Vec<String>,
}

impl Cpu {
    pub fn has_flag(&self, flag: &str) -> bool {
        self.flags.iter().any(|f| f == flag)
    }
}

/// One CPU feature, with the CPU's word, the OS's word and the verdict kept apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Feature {
    /// The CPU reports it (CPUID, HWCAP, or the cpuinfo flag under a sysroot).
    pub cpu: bool,
    /// The OS enabled it (XCR0, and for AMX the `arch_prctl` permission); `null` when
    /// unknown, as under a sysroot or in a hand-written profile.
    pub os: Option<bool>,
    /// What the planner and the kernels may rely on.
    pub usable: bool,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Memory {
    pub total_bytes: Option<u64>,
    pub available_bytes: Option<u64>,
    /// The cgroup memory limit; `null` when there is none (`max`) or it is unknown.
    pub limit_bytes: Option<u64>,
    /// Extension: what this process may use without being killed or evicting its own
    /// page cache: `min(MemAvailable, limit - (usage - inactive_file))` (probe.md §4).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub budget_bytes: Option<u64>,
    /// Extension: the cgroup's current usage (`memory.current` / `memory.usage_in_bytes`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cgroup_usage_bytes: Option<u64>,
    /// Extension: reclaimable page cache in the cgroup (`inactive_file` of `memory.stat`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cgroup_inactive_file_bytes: Option<u64>,
    /// Extension: where each memory fact came from.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub sources: BTreeMap<String, String>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Gpu {
    /// `nvidia`, `amd`, `intel` or the PCI vendor id when unknown.
    pub vendor: String,
    pub name: Option<String>,
    pub memory_bytes: Option<u64>,
    /// `"8.0"`, `"9.0"`, ...; `null` when unknown or not a CUDA device.
    pub compute_capability: Option<String>,
    /// Extension: PCI address (`0000:41:00.0`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pci_bdf: Option<String>,
    /// Extension: PCI device id (`0x2331`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device_id: Option<String>,
    /// Extension: PCI class (`0x030200`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pci_class: Option<String>,
    /// Extension: the kernel driver bound to the device (`nvidia`, `nouveau`, `ast`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub driver: Option<String>,
    /// Extension: where the name, compute capability and memory came from.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub sources: BTreeMap<String, String>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Jetson {
    pub model: Option<String>,
    pub soc: Option<String>,
    pub l4t: Option<String>,
    pub jetpack: Option<String>,
    pub compute_capability: Option<String>,
    /// Extension: SoC family (`Xavier`, `Orin`, `Thor`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub family: Option<String>,
    /// Extension: module identity from `/proc/device-tree/nvidia,dtsfilename`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub module: Option<String>,
    /// Extension: the signals that decided it is a Tegra device.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub detected_by: Vec<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Android {
    pub soc_model: Option<String>,
    pub manufacturer: Option<String>,
    pub board_platform: Option<String>,
    pub npu: Option<Npu>,
    /// Extension: where `soc_model` came from (`ro.soc.model`, `/sys/devices/soc0/machine`, ...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub soc_model_source: Option<String>,
    /// Extension: `ro.hardware`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hardware: Option<String>,
    /// Extension: when the evidence names more than one SoC, every candidate (and
    /// `soc_model` is `null`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub soc_candidates: Vec<String>,
    /// Extension: QNN / FastRPC libraries found on the image (not proof the NPU is reachable).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub qnn_libraries: Vec<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Npu {
    /// e.g. `qualcomm-htp`.
    pub kind: String,
    /// HTP architecture, e.g. `v75`.
    pub htp_arch: Option<String>,
    pub vtcm_mb: Option<u32>,
    /// The SoC is in the HTP table (plus any QNN libraries found).
    pub present: bool,
    /// Only true after a real QNN session; a probe never sets it.
    pub verified: bool,
}

/// Where the process runs, each fact with how it was detected.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Environment {
    pub container: Option<Detection>,
    pub hypervisor: Option<Detection>,
    pub wsl: Option<Detection>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Detection {
    pub detected: bool,
    /// e.g. `kvm`, `docker`; `null` when not known.
    pub name: Option<String>,
    /// The signal that decided it, e.g. `cpuid 1.ecx[31]` or `/.dockerenv`.
    pub how: Option<String>,
}

impl Profile {
    /// Parses one profile from JSON text. `origin` names the input in errors.
    /// Checks `schema_version` before the shape so a version-2 profile says so.
    pub fn from_json(text: &str, origin: &str) -> anyhow::Result<Profile> {
        let value: serde_json::Value = serde_json::from_str(text)
            .map_err(|e| data_error(format!("{origin}: not valid JSON: {e}")))?;
        Profile::from_value(value, origin)
    }

    /// As [`Profile::from_json`], from an already-parsed value.
    pub fn from_value(value: serde_json::Value, origin: &str) -> anyhow::Result<Profile> {
        let Some(object) = value.as_object() else {
            return Err(data_error(format!(
                "{origin}: a profile must be a JSON object"
            )));
        };
        match object.get("schema_version").and_then(|v| v.as_u64()) {
            None => {
                return Err(data_error(format!(
                    "{origin}: missing or non-integer \"schema_version\" (this edgeplan reads version {SCHEMA_VERSION})"
                )));
            }
            Some(v) if v != u64::from(SCHEMA_VERSION) => {
                return Err(data_error(format!(
                    "{origin}: profile schema_version {v} is not supported (this edgeplan reads version {SCHEMA_VERSION}); re-run `edgeplan probe` with a matching edgeplan"
                )));
            }
            Some(_) => {}
        }
        serde_json::from_value(value)
            .map_err(|e| data_error(format!("{origin}: not an edgeplan profile: {e}")))
    }

    /// Whether a feature may be relied on. Falls back to the `/proc/cpuinfo` flag when
    /// the profile has no `features` entry for it (hand-written profiles).
    pub fn feature_usable(&self, name: &str) -> bool {
        match self.cpu.features.get(name) {
            Some(f) => f.usable,
            None => self.cpu.has_flag(name),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::{Exit, exit_for};

    const MINIMAL: &str = r#"{
        "schema_version": 1, "tool": {"name": "edgeplan", "version": "0.1.0"},
        "arch": "x86_64", "hardware_class": "x86_cpu", "supports_bf16": true,
        "cpu": {"vendor": "GenuineIntel", "model_name": null, "logical_cpus": 2,
                "usable_threads": 2, "flags": ["avx2", "amx_int8"], "features": {}},
        "memory": {"total_bytes": 1024, "available_bytes": 512, "limit_bytes": null},
        "gpus": [], "jetson": null, "android": null,
        "some_future_field": {"ignored": true}
    }"#;

    #[test]
    fn reads_a_minimal_profile_and_ignores_unknown_fields() {
        let p = Profile::from_json(MINIMAL, "t.json").unwrap();
        assert_eq!(p.hardware_class, HardwareClass::X86Cpu);
        assert!(p.feature_usable("amx_int8"));
        assert!(!p.feature_usable("avx512_vnni"));
    }

    #[test]
    fn rejects_schema_version_2_with_65() {
        let text = MINIMAL.replace("\"schema_version\": 1", "\"schema_version\": 2");
        let err = Profile::from_json(&text, "t.json").unwrap_err();
        assert_eq!(exit_for(&err), Exit::DataErr);
        assert!(err.to_string().contains("schema_version 2"), "{err}");
    }

    #[test]
    fn rejects_unknown_class_and_negative_memory() {
        let bad_class = MINIMAL.replace("\"x86_cpu\"", "\"quantum\"");
        assert_eq!(
            exit_for(&Profile::from_json(&bad_class, "t").unwrap_err()),
            Exit::DataErr
        );
        let negative = MINIMAL.replace("\"total_bytes\": 1024", "\"total_bytes\": -1");
        assert_eq!(
            exit_for(&Profile::from_json(&negative, "t").unwrap_err()),
            Exit::DataErr
        );
    }

    #[test]
    fn round_trips() {
        let p = Profile::from_json(MINIMAL, "t").unwrap();
        let again = Profile::from_json(&serde_json::to_string(&p).unwrap(), "t").unwrap();
        assert_eq!(p, again);
    }
}
