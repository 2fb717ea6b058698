//! The device profile: the one seam between `probe` and everything that consumes it.
//!
//! `probe` produces a [`Profile`]; `plan`, `bench` and `check` read one, never their own
//! detection. The JSON shape is the contract's (`schema_version` 1); readers ignore
//! unknown fields, and a profile whose `schema_version` major is not 1 is rejected with
//! exit 65. Facts that could not be established are `null`, never guessed.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use crate::error::data_error;

/// Major version of the profile JSON. Additive changes keep it; breaking ones bump it.
pub const SCHEMA_VERSION: u32 = 1;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
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
    /// Figures written by `bench --save`; absent in a plain probe. Measurements that do
    /// not read as [`Measurements`] are ignored (`None`), never fatal.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "lenient_measurements"
    )]
    pub measurements: Option<Measurements>,
}

/// The host RAM a run may use, and where the figure came from: the one budget of
/// `plan --model` (CPU classes) and `bench`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RamBudget {
    /// The probe's own budget: min(MemAvailable, cgroup limit - (usage - inactive_file)).
    Probe(u64),
    /// A cgroup limit lower than the RAM figure `ram` (named by `what`).
    CgroupLimit {
        limit: u64,
        ram: u64,
        what: &'static str,
    },
    /// The RAM figure named by `what`, with no lower cgroup limit.
    Ram { bytes: u64, what: &'static str },
    /// Only a cgroup limit is known (MemAvailable unknown).
    LimitOnly(u64),
}

impl RamBudget {
    pub fn bytes(self) -> u64 {
        match self {
            RamBudget::Probe(b) | RamBudget::LimitOnly(b) => b,
            RamBudget::CgroupLimit { limit, .. } => limit,
            RamBudget::Ram { bytes, .. } => bytes,
        }
    }
}

impl Memory {
    /// The RAM budget: the probe's when it computed one (it discounts reclaimable page
    /// cache), else MemAvailable (or MemTotal) capped by the cgroup limit. `None` when the
    /// profile has no memory figures.
    pub fn ram_budget(&self) -> Option<RamBudget> {
        if let Some(b) = self.budget_bytes {
            return Some(RamBudget::Probe(b));
        }
        let (ram, what) = match (self.available_bytes, self.total_bytes) {
            (Some(a), _) => (Some(a), "MemAvailable"),
            (None, Some(t)) => (Some(t), "MemTotal (MemAvailable unknown)"),
            (None, None) => (None, ""),
        };
        match (ram, self.limit_bytes) {
            (Some(ram), Some(limit)) if limit < ram => {
                Some(RamBudget::CgroupLimit { limit, ram, what })
            }
            (Some(bytes), _) => Some(RamBudget::Ram { bytes, what }),
            (None, Some(limit)) => Some(RamBudget::LimitOnly(limit)),
            (None, None) => None,
        }
    }
}

/// What a plan optimises for: the one priority of `plan`, `check` and `bench`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Priority {
    Speed,
    Fidelity,
}

impl Priority {
    pub const ALL: [Priority; 2] = [Priority::Speed, Priority::Fidelity];

    pub fn as_str(self) -> &'static str {
        match self {
            Priority::Speed => "speed",
            Priority::Fidelity => "fidelity",
        }
    }
}

impl std::fmt::Display for Priority {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The `measurements` object of a profile: `{"bench": {...}}`, written by `bench --save`
/// and read by `plan`. It is the seam between the two: neither imports the other.
///
/// The `bench` object is a subset of `bench --format json`'s report (same keys), so a
/// profile saved with the whole report (older `--save`) reads unchanged; unknown keys
/// are ignored. The JSON shape is documented in docs/measurements.md.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Measurements {
    pub bench: BenchRun,
    /// `bench --engine` runs, one per engine (a newer run of the same engine replaces
    /// the older one): the engine's own kernels on this host and the build it says to
    /// deploy, which `plan` follows.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub engines: Vec<EngineRun>,
}

/// One saved `bench --engine` run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct EngineRun {
    /// `vllm` or `llama.cpp`.
    pub engine: String,
    /// The engine's version as it reported it.
    pub version: String,
    /// `real`, or `fake` for the simulated test engine (not measurements).
    #[serde(default)]
    pub executor: Option<String>,
    #[serde(default)]
    pub measured_at: Option<String>,
    /// The host the figures came from.
    #[serde(default)]
    pub host: Option<BenchHost>,
    #[serde(default)]
    pub model: Option<BenchModel>,
    #[serde(default)]
    pub threads: Option<u64>,
    /// One row per build and phase; `path` is the catalog path that deploys the build.
    #[serde(default)]
    pub results: Vec<BenchRow>,
    pub verdict: EngineRunVerdict,
}

/// What a saved engine run says to deploy.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct EngineRunVerdict {
    /// The catalog path the plan had when the run was made.
    #[serde(default)]
    pub planned: Option<String>,
    /// `speed` or `fidelity`: the priority the recommendation is for.
    #[serde(default)]
    pub priority: Option<String>,
    #[serde(default)]
    pub status: Option<String>,
    /// The catalog path to deploy with this engine on this host.
    #[serde(default)]
    pub recommended_path: Option<String>,
    #[serde(default)]
    pub reason: Option<String>,
}

/// One saved bench run: the figures a plan shows beside the catalog's.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct BenchRun {
    /// `real`, or `fake` for the simulated test executor (not measurements).
    #[serde(default)]
    pub executor: Option<String>,
    /// When the run started, RFC 3339 UTC (`2026-12-01T03:20:00Z`); absent in profiles
    /// saved before edgeplan recorded it.
    #[serde(default)]
    pub measured_at: Option<String>,
    /// The edgeplan that measured (name and version).
    #[serde(default)]
    pub tool: Option<Tool>,
    /// The host the figures came from (always the host bench ran on, whatever device
    /// the rest of the profile describes).
    #[serde(default)]
    pub host: Option<BenchHost>,
    #[serde(default)]
    pub model: Option<BenchModel>,
    #[serde(default)]
    pub threads: Option<u64>,
    /// The host's measured read bandwidth (GB/s).
    #[serde(default)]
    pub memory_bandwidth_gbps: Option<f64>,
    /// One row per bench path and phase (the fastest kernel's).
    pub results: Vec<BenchRow>,
    #[serde(default)]
    pub fidelity: Vec<BenchFidelity>,
    #[serde(default)]
    pub verdict: Option<BenchVerdict>,
}

/// The host a bench run measured.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct BenchHost {
    /// The CPU model name (`/proc/cpuinfo` `model name`, or CPUID's brand string).
    #[serde(default)]
    pub cpu_model: Option<String>,
}

/// The model a bench run used.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct BenchModel {
    pub name: Option<String>,
}

/// One timed row: bench path (`w4a8`, `w4a16`, `bf16`), phase (`decode`, `prefill`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct BenchRow {
    pub path: String,
    pub phase: String,
    #[serde(default)]
    pub kernel: Option<String>,
    #[serde(default)]
    pub step_ms: Option<f64>,
    #[serde(default)]
    pub tokens_per_s: Option<f64>,
    /// Weight bytes streamed per second (GB/s).
    #[serde(default)]
    pub weight_gbps: Option<f64>,
}

/// One fidelity row: bench path and scheme (`symmetric`, `asymmetric`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct BenchFidelity {
    pub path: String,
    pub scheme: String,
    #[serde(default)]
    pub rel_error: Option<f64>,
    #[serde(default)]
    pub top1_agreement: Option<f64>,
}

/// The saved verdict: which plan the run checked, and what it concluded.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct BenchVerdict {
    #[serde(default)]
    pub planned: Option<String>,
    #[serde(default)]
    pub priority: Option<String>,
    /// `confirmed`, `contradicted`, `inconclusive` or `not_applicable`.
    #[serde(default)]
    pub status: Option<String>,
    #[serde(default)]
    pub reason: Option<String>,
    #[serde(default)]
    pub fastest: Option<BenchFastest>,
}

/// The fastest bench path per phase.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct BenchFastest {
    #[serde(default)]
    pub decode: Option<String>,
}

/// Measured figures for one bench path, as a plan shows them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct MeasuredPath {
    pub path: String,
    pub decode_kernel: Option<String>,
    pub decode_step_ms: Option<f64>,
    pub decode_tokens_per_s: Option<f64>,
    pub prefill_tokens_per_s: Option<f64>,
    /// Weight bytes streamed per second in decode (GB/s).
    #[serde(default)]
    pub decode_weight_gbps: Option<f64>,
    /// Symmetric int4 (or bf16) layer relative error.
    pub rel_error: Option<f64>,
    pub top1_agreement: Option<f64>,
}

impl BenchRun {
    /// Per bench path (sorted by name): the decode and prefill rows and the symmetric
    /// fidelity row folded into one record.
    pub fn paths(&self) -> Vec<MeasuredPath> {
        let mut names: Vec<&str> = self.results.iter().map(|r| r.path.as_str()).collect();
        names.sort_unstable();
        names.dedup();
        let find = |path: &str, phase: &str| {
            self.results
                .iter()
                .find(|r| r.path == path && r.phase == phase)
        };
        names
            .into_iter()
            .map(|name| {
                let d = find(name, "decode");
                let p = find(name, "prefill");
                let fid = self
                    .fidelity
                    .iter()
                    .find(|r| r.path == name && matches!(r.scheme.as_str(), "symmetric" | "bf16"));
                MeasuredPath {
                    path: name.to_string(),
                    decode_kernel: d.and_then(|d| d.kernel.clone()),
                    decode_step_ms: d.and_then(|d| d.step_ms),
                    decode_tokens_per_s: d.and_then(|d| d.tokens_per_s),
                    prefill_tokens_per_s: p.and_then(|p| p.tokens_per_s),
                    decode_weight_gbps: d.and_then(|d| d.weight_gbps),
                    rel_error: fid.and_then(|r| r.rel_error),
                    top1_agreement: fid.and_then(|r| r.top1_agreement),
                }
            })
            .collect()
    }

    /// The model's name, when saved.
    pub fn model_name(&self) -> Option<&str> {
        self.model.as_ref().and_then(|m| m.name.as_deref())
    }

    /// The measuring host's CPU model, when saved.
    pub fn host_cpu(&self) -> Option<&str> {
        self.host.as_ref().and_then(|h| h.cpu_model.as_deref())
    }

    /// The measuring edgeplan's version, when saved.
    pub fn version(&self) -> Option<&str> {
        self.tool.as_ref().map(|t| t.version.as_str())
    }
}

/// Reads `measurements` when it has the typed shape; anything else is `None`.
fn lenient_measurements<'de, D>(deserializer: D) -> Result<Option<Measurements>, D::Error>
where
    D: serde::Deserializer<'de>,
{
    let value = Option::<serde_json::Value>::deserialize(deserializer)?;
    Ok(value.and_then(|v| serde_json::from_value(v).ok()))
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
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

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
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
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    Serialize,
    Deserialize,
    schemars::JsonSchema,
)]
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

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
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
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
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
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct CpuLists {
    pub possible: Option<String>,
    pub online: Option<String>,
    pub usable: Option<String>,
}

/// Extension: the CPU's identity numbers, as the kernel or CPUID reports them.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
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
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Feature {
    /// The CPU reports it (CPUID, HWCAP, or the cpuinfo flag under a sysroot).
    pub cpu: bool,
    /// The OS enabled it (XCR0, and for AMX the `arch_prctl` permission); `null` when
    /// unknown, as under a sysroot or in a hand-written profile.
    pub os: Option<bool>,
    /// What the planner and the kernels may rely on.
    pub usable: bool,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
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

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
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
    /// Extension: the NVIDIA driver version (`/proc/driver/nvidia/version`, `555.58`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub driver_version: Option<String>,
    /// Extension: where the name, compute capability and memory came from.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub sources: BTreeMap<String, String>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Jetson {
    pub model: Option<String>,
    pub soc: Option<String>,
    pub l4t: Option<String>,
    pub jetpack: Option<String>,
    pub compute_capability: Option<String>,
    /// Extension: where `soc` came from (`/proc/device-tree/compatible nvidia,tegraNNN`,
    /// a module part number, the device-tree file name, the L4T board).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub soc_source: Option<String>,
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

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
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
    /// Extension: a board name the property that named the SoC carried after the chip
    /// (`dragon` of `tegra210_dragon`); `soc_model` keeps the chip alone.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub soc_board: Option<String>,
    /// Extension: when the evidence names more than one SoC, every candidate (and
    /// `soc_model` is `null`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub soc_candidates: Vec<String>,
    /// Extension: QNN / FastRPC libraries found on the image (not proof the NPU is reachable).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub qnn_libraries: Vec<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
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
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Environment {
    pub container: Option<Detection>,
    pub hypervisor: Option<Detection>,
    pub wsl: Option<Detection>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Detection {
    pub detected: bool,
    /// e.g. `kvm`, `docker`; `null` when not known.
    pub name: Option<String>,
    /// The signal that decided it, e.g. `cpuid 1.ecx[31]` or `/.dockerenv`.
    pub how: Option<String>,
}

/// serde's `invalid type: string "yes", expected a boolean` as `expected a boolean,
/// got string "yes"`: what the field needs first, then what it held.
fn readable_serde_error(message: &str) -> String {
    for prefix in ["invalid type: ", "invalid value: "] {
        if let Some(rest) = message.strip_prefix(prefix)
            && let Some((got, expected)) = rest.rsplit_once(", expected ")
        {
            return format!("expected {expected}, got {got}");
        }
    }
    message.to_string()
}

impl Profile {
    /// Whether this CPU can run AMX-INT8 tiles: the probe's `usable` verdict where the
    /// profile has the OS facts (`cpu.features.amx_int8.os`), otherwise the
    /// /proc/cpuinfo flags amx_tile + amx_int8 (the kernel filters those, so they imply
    /// the OS enabled the tile state, not that this process may use it). The one
    /// source for both engines' AMX gates and for `bench`.
    pub fn amx_int8_usable(&self) -> bool {
        match self.cpu.features.get("amx_int8") {
            Some(f) if f.os.is_some() => f.usable,
            _ => self.cpu.has_flag("amx_tile") && self.cpu.has_flag("amx_int8"),
        }
    }

    /// An x86 CPU host ([`HardwareClass::X86Cpu`]) whose AMX-INT8 tiles are usable.
    pub fn x86_amx_int8_usable(&self) -> bool {
        self.hardware_class == HardwareClass::X86Cpu && self.amx_int8_usable()
    }

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
        serde_path_to_error::deserialize(value).map_err(|e| {
            let path = e.path().to_string();
            let message = readable_serde_error(&e.inner().to_string());
            if path == "." {
                data_error(format!("{origin}: not an edgeplan profile: {message}"))
            } else {
                data_error(format!("{origin}: {path}: {message}"))
            }
        })
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

/// The highest CPU number a cpulist may name (a bound against absurd input).
const MAX_CPUS: u32 = 1 << 16;

/// A kernel cpulist (`0-3,8,10-11`) as a set; `None` when malformed or empty.
///
/// Linear in the text (plus a sort of its ranges): overlapping ranges are merged before
/// any CPU is listed, so `0-65535,` repeated costs what reading it costs, not a set
/// insert per CPU per repeat.
pub fn parse_cpulist(text: &str) -> Option<BTreeSet<u32>> {
    let mut ranges: Vec<(u32, u32)> = Vec::new();
    for part in text.trim().split(',').filter(|p| !p.trim().is_empty()) {
        let (lo, hi) = match part.split_once('-') {
            Some((lo, hi)) => (
                lo.trim().parse::<u32>().ok()?,
                hi.trim().parse::<u32>().ok()?,
            ),
            None => {
                let n = part.trim().parse::<u32>().ok()?;
                (n, n)
            }
        };
        if hi < lo || hi >= MAX_CPUS {
            return None;
        }
        ranges.push((lo, hi));
    }
    ranges.sort_unstable();
    let mut merged: Vec<(u32, u32)> = Vec::new();
    for (lo, hi) in ranges {
        match merged.last_mut() {
            Some(last) if lo <= last.1.saturating_add(1) => last.1 = last.1.max(hi),
            _ => merged.push((lo, hi)),
        }
    }
    // Sorted, disjoint ranges: the set is built in order, at most MAX_CPUS entries.
    let set: BTreeSet<u32> = merged.into_iter().flat_map(|(lo, hi)| lo..=hi).collect();
    (!set.is_empty()).then_some(set)
}

/// A set back in kernel cpulist form.
pub fn format_cpulist(set: &BTreeSet<u32>) -> String {
    let mut out: Vec<String> = Vec::new();
    let mut iter = set.iter().copied().peekable();
    while let Some(start) = iter.next() {
        let mut end = start;
        while iter.peek() == Some(&(end + 1)) {
            end += 1;
            iter.next();
        }
        out.push(if end == start {
            start.to_string()
        } else {
            format!("{start}-{end}")
        });
    }
    out.join(",")
}

impl CpuLists {
    /// The first `threads` CPUs of the usable set, as a cpulist: the CPUs an engine's
    /// threads are bound to. `None` when the usable set is unknown or malformed.
    pub fn first_usable(&self, threads: u32) -> Option<String> {
        let set = parse_cpulist(self.usable.as_deref()?)?;
        let take = usize::try_from(threads).ok()?.max(1);
        let first: BTreeSet<u32> = set.into_iter().take(take).collect();
        Some(format_cpulist(&first))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn amx_is_the_os_verdict_when_known_else_the_flags() {
        let mut p = with_measurements(None);
        assert!(!p.amx_int8_usable(), "no flags, no features");
        p.cpu.flags = vec!["amx_tile".into(), "amx_int8".into()];
        assert!(p.x86_amx_int8_usable(), "the flags, OS unknown");
        let hidden = Feature {
            cpu: true,
            os: Some(false),
            usable: false,
        };
        p.cpu.features.insert("amx_int8".into(), hidden);
        assert!(
            !p.amx_int8_usable(),
            "the OS refused the tile state: the flags do not overrule it"
        );
        let unknown = Feature {
            cpu: true,
            os: None,
            usable: false,
        };
        p.cpu.features.insert("amx_int8".into(), unknown);
        assert!(p.amx_int8_usable(), "os null: back to the flags");
        p.hardware_class = HardwareClass::Arm64Cpu;
        assert!(!p.x86_amx_int8_usable());
    }

    fn with_measurements(measurements: Option<serde_json::Value>) -> Profile {
        let mut v: serde_json::Value = serde_json::from_str(
            r#"{"schema_version": 1, "tool": {"name": "edgeplan", "version": "0"},
            "arch": "x86_64", "hardware_class": "x86_cpu", "supports_bf16": true,
            "cpu": {"vendor": null, "model_name": null, "logical_cpus": 2, "usable_threads": 2},
            "memory": {"total_bytes": null, "available_bytes": null, "limit_bytes": null}}"#,
        )
        .unwrap();
        if let Some(m) = measurements {
            v["measurements"] = m;
        }
        Profile::from_value(v, "t").unwrap()
    }

    #[test]
    fn ram_budget_prefers_the_probe_then_the_lower_of_ram_and_limit() {
        let m = |total, available, limit, budget| Memory {
            total_bytes: total,
            available_bytes: available,
            limit_bytes: limit,
            budget_bytes: budget,
            ..Memory::default()
        };
        let b = |m: Memory| m.ram_budget();
        assert_eq!(
            b(m(Some(9), Some(8), Some(6), Some(5))),
            Some(RamBudget::Probe(5))
        );
        let capped = b(m(Some(9), Some(8), Some(6), None)).unwrap();
        assert_eq!(capped.bytes(), 6);
        assert!(matches!(
            capped,
            RamBudget::CgroupLimit {
                ram: 8,
                what: "MemAvailable",
                ..
            }
        ));
        assert_eq!(
            b(m(Some(9), None, Some(10), None)),
            Some(RamBudget::Ram {
                bytes: 9,
                what: "MemTotal (MemAvailable unknown)"
            })
        );
        assert_eq!(
            b(m(None, None, Some(4), None)),
            Some(RamBudget::LimitOnly(4))
        );
        assert_eq!(b(m(None, None, None, None)), None);
    }

    #[test]
    fn no_measurements_no_summary() {
        assert_eq!(with_measurements(None).measurements, None);
        assert_eq!(
            with_measurements(Some(serde_json::json!({"other": 1}))).measurements,
            None
        );
        let bad = serde_json::json!({"bench": {"results": "not a list"}});
        assert_eq!(with_measurements(Some(bad)).measurements, None);
    }

    #[test]
    fn reads_back_the_figures_plan_needs() {
        // The whole bench report, as `bench --save` wrote it before the typed form.
        let m = serde_json::json!({"bench": {
            "schema_version": 1, "quick": true, "peaks": [],
            "tool": {"name": "edgeplan", "version": "0.1.0"},
            "host": {"cpu_model": "AMD EPYC", "logical_cpus": 2, "l3_bytes": 33554432},
            "model": {"name": "qwen3-1.7b", "layers": 28}, "threads": 2, "memory_bandwidth_gbps": 27.5,
            "results": [
                {"path": "w4a8", "phase": "decode", "kernel": "w4a8-avx2", "step_ms": 50.0, "tokens_per_s": 20.0},
                {"path": "w4a8", "phase": "prefill", "kernel": "w4a8-avx2", "step_ms": 900.0, "tokens_per_s": 142.2},
                {"path": "bf16", "phase": "decode", "kernel": "bf16-avx2", "step_ms": 170.0, "tokens_per_s": 5.9}
            ],
            "fidelity": [
                {"path": "w4a8", "scheme": "asymmetric", "rel_error": 0.09},
                {"path": "w4a8", "scheme": "symmetric", "rel_error": 0.11, "top1_agreement": 0.8}
            ],
            "verdict": {"planned": "w4a8-amx", "priority": "speed", "status": "confirmed",
                        "reason": "w4a8 is the fastest decode path", "fastest": {"decode": "w4a8"}}
        }});
        let p = with_measurements(Some(m));
        let s = &p.measurements.as_ref().unwrap().bench;
        let paths = s.paths();
        assert_eq!(paths.len(), 2);
        let w = paths.iter().find(|p| p.path == "w4a8").unwrap();
        assert_eq!(w.decode_tokens_per_s, Some(20.0));
        assert_eq!(w.prefill_tokens_per_s, Some(142.2));
        assert_eq!(w.rel_error, Some(0.11));
        let v = s.verdict.as_ref().unwrap();
        assert_eq!(
            v.fastest.as_ref().and_then(|f| f.decode.as_deref()),
            Some("w4a8")
        );
        assert_eq!(v.status.as_deref(), Some("confirmed"));
        assert_eq!(v.priority.as_deref(), Some("speed"));
        assert!(v.reason.as_deref().unwrap().contains("fastest decode"));
        assert_eq!(s.model_name(), Some("qwen3-1.7b"));
        assert_eq!(s.memory_bandwidth_gbps, Some(27.5));
        // The report's own host and tool read as the saved ones; it had no timestamp.
        assert_eq!(s.host_cpu(), Some("AMD EPYC"));
        assert_eq!(s.version(), Some("0.1.0"));
        assert_eq!(s.measured_at, None);
        // Written back, only the typed subset remains, and it reads the same.
        let text = serde_json::to_string(&p).unwrap();
        let again = Profile::from_json(&text, "again").unwrap();
        assert_eq!(again.measurements, p.measurements);
        assert!(!text.contains("\"layers\""), "{text}");
        assert!(!text.contains("\"l3_bytes\""), "{text}");
    }
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
