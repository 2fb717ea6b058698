//! The decision for llama.cpp: which GGUF file a device gets. Pure, like `rules.rs`.
//!
//! | route                                   | speed        | fidelity              |
//! |-----------------------------------------|--------------|-----------------------|
//! | CPU (x86, Arm, a phone's Arm cores)     | `gguf-q4_0`  | `gguf-q4_k_m`         |
//! | NVIDIA GPU or Jetson (layers offloaded) | `gguf-q4_0`  | `gguf-bf16`, or `gguf-f16` below compute capability 8.0 |
//!
//! Every fact comes from the llama.cpp tree vendored in llama-cpp-python 0.3.36
//! (ggml-org/llama.cpp@0c1e57098); file and line are cited in each step:
//! - every CPU runs a quantized type against activations quantized to 8 bits (Q8_0 for
//!   Q4_0, Q8_K for the k-quants: ggml-cpu.c's type traits, `vec_dot_type`), so decode,
//!   bound by memory bandwidth, reads 4.5 bits a weight instead of 16: 4-bit wins on
//!   every CPU, and Q4_0 has the most hand-written kernels;
//! - on AVX2 (AVX-512 too) and on Arm with dotprod or i8mm, the CPU backend repacks
//!   Q4_0 and Q4_K at load into interleaved layouts with GEMM kernels of their own
//!   (ggml-cpu/repack.cpp, `ggml_repack_get_optimal_repack_type`); on an AMX build
//!   the AMX buffer type takes Q4_0 and Q4_K first (ggml-cpu/amx/common.h,
//!   `qtype_has_amx_kernels`). These are compile-time checks of the ggml-cpu build: the
//!   build script compiles llama.cpp on the device with `GGML_NATIVE`, so the device's
//!   ISA is the build's;
//! - fidelity keeps the bit budget and takes the k-quant mix, the lowest perplexity at
//!   about Q4_0's size in llama-quantize's own table (tools/quantize/quantize.cpp).
//!
//! A phone's NPU is not planned for llama.cpp (its Hexagon backend is not built by the
//! script), so phones are planned on their Arm cores.

use serde_json::json;

use super::catalog::PathId;
use super::schema::{Fact, PlanNote, Priority, Step};
use crate::profile::{Arch, HardwareClass, Profile};

/// Paths that lost, each with the reason.
type Lost = Vec<(PathId, String)>;

/// llama-quantize's own figures (tools/quantize/quantize.cpp:37-71).
const Q4_0_TABLE: &str = "Q4_0: 4.34G, +0.4685 ppl @ Llama-3-8B";
const Q4_K_M_TABLE: &str = "Q4_K_M: 4.58G, +0.1754 ppl @ Llama-3-8B";

/// The route for llama.cpp: a phone's NPU is not an llama.cpp target, so its Arm CPU is
/// planned; every other class routes as it is.
pub(super) fn route(profile: &Profile, origin: &str, trace: &mut Vec<Step>) -> HardwareClass {
    let class = profile.hardware_class;
    if class != HardwareClass::NpuPhone {
        return class;
    }
    trace.push(Step {
        rule: "llama_cpp_phone_cpu".into(),
        outcome: "a phone: llama.cpp runs on its Arm CPU cores (the build script compiles the CPU backend only; llama.cpp's Hexagon backend is not planned)".into(),
        facts: vec![Fact::new("arch", json!(profile.arch.as_str()), origin.to_string())],
    });
    match profile.arch {
        Arch::X86_64 => HardwareClass::X86Cpu,
        Arch::Aarch64 => HardwareClass::Arm64Cpu,
    }
}

/// The GGUF path on `route`, at `priority`. `gpu_bf16` is the GPU-dtype step's verdict
/// (computed by the caller when the route is a GPU).
pub(super) fn choose(
    profile: &Profile,
    priority: Priority,
    route: HardwareClass,
    gpu_bf16: Option<bool>,
    origin: &str,
    trace: &mut Vec<Step>,
    lost: &mut Lost,
) -> PathId {
    match (route, gpu_bf16) {
        (HardwareClass::CudaDiscrete | HardwareClass::Jetson, Some(bf16)) => {
            choose_gpu(priority, bf16, trace, lost)
        }
        _ => choose_cpu(profile, priority, origin, trace, lost),
    }
}

/// A CPU: Q4_0 for speed, Q4_K_M for fidelity, with the kernels this CPU gets.
fn choose_cpu(
    profile: &Profile,
    priority: Priority,
    origin: &str,
    trace: &mut Vec<Step>,
    lost: &mut Lost,
) -> PathId {
    trace.push(cpu_kernels(profile, origin));
    let dense_loss = "16 bits per weight: decode on a CPU reads every weight once per token, so it moves 3.5x the bytes of Q4_0; llama.cpp's quantized types compute with 8-bit activations on every CPU (ggml-cpu.c type traits, vec_dot_type), so 4-bit is the faster and smaller build";
    lost.push((PathId::GgufBf16, dense_loss.into()));
    lost.push((PathId::GgufF16, dense_loss.into()));
    match priority {
        Priority::Speed => {
            trace.push(Step::priority(priority, &format!("speed first: Q4_0, the 4-bit type with the most CPU kernels (repacked layouts for AVX2 and Arm dotprod/i8mm, AMX) and the cheapest dequantization; llama-quantize's table: {Q4_0_TABLE}")));
            lost.push((PathId::GgufQ4KM, format!("more faithful ({Q4_K_M_TABLE}) but larger and with fewer repacked kernels (none for its Q6_K tensors on x86); the choice under --priority fidelity")));
            PathId::GgufQ4_0
        }
        Priority::Fidelity => {
            trace.push(Step::priority(priority, &format!("fidelity first: Q4_K_M, the lowest perplexity at about Q4_0's size in llama-quantize's table ({Q4_K_M_TABLE}, against {Q4_0_TABLE})")));
            lost.push((
                PathId::GgufQ4_0,
                format!("faster, but the least faithful 4-bit type ({Q4_0_TABLE})"),
            ));
            PathId::GgufQ4KM
        }
    }
}

/// A GPU: all layers offloaded (the memory fit may offload fewer); Q4_0 for speed, the
/// 16-bit file for fidelity.
fn choose_gpu(priority: Priority, bf16: bool, trace: &mut Vec<Step>, lost: &mut Lost) -> PathId {
    let (dense, other_dense) = if bf16 {
        (PathId::GgufBf16, PathId::GgufF16)
    } else {
        (PathId::GgufF16, PathId::GgufBf16)
    };
    lost.push((
        other_dense,
        if bf16 {
            "bf16 is supported: same 16 bits, with bf16's wider exponent range"
        } else {
            "this GPU has no bf16 arithmetic"
        }
        .into(),
    ));
    match priority {
        Priority::Speed => {
            trace.push(Step::priority(priority, &format!("speed first: Q4_0 with the layers offloaded to the GPU; decode reads a quarter of the 16-bit bytes per token ({Q4_0_TABLE})")));
            lost.push((dense, "16 bits per weight: 3.5x the bytes per decoded token of Q4_0; the choice under --priority fidelity".into()));
            lost.push((
                PathId::GgufQ4KM,
                format!(
                    "more faithful ({Q4_K_M_TABLE}) and a little larger; Q4_0 is the speed choice"
                ),
            ));
            PathId::GgufQ4_0
        }
        Priority::Fidelity => {
            trace.push(Step::priority(priority, "fidelity first: the model's own 16-bit weights, offloaded to the GPU (the memory fit says whether they fit)"));
            lost.push((PathId::GgufQ4_0, format!("4-bit: {Q4_0_TABLE}")));
            lost.push((PathId::GgufQ4KM, format!("4-bit: {Q4_K_M_TABLE}")));
            dense
        }
    }
}

/// On an x86 CPU with usable AMX, llama.cpp's AMX weight buffer is known to crash the
/// first inference on some hosts (ggml-org/llama.cpp#20824; a KVM Xeon family 6 model
/// 167 here): the plan says so, and what the build script does about it.
pub(super) fn amx_crash_note(profile: &Profile, route: HardwareClass) -> Option<PlanNote> {
    let amx = profile.arch == Arch::X86_64
        && profile.feature_usable("amx_int8")
        && profile.feature_usable("avx512_vnni");
    (amx && route == HardwareClass::X86Cpu).then(|| {
        PlanNote::device("AMX host: llama.cpp's AMX weight buffer crashes the first inference on some AMX machines (ggml-org/llama.cpp#20824; CPU flags cannot tell which). The build script asks the server for a few tokens first; if it dies with that buffer, it serves with --no-repack (plain AVX-512 kernels, no AMX or repacked copies) and says so.".to_string())
    })
}

/// Which of llama.cpp's CPU kernels this CPU gets for Q4_0 and Q4_K, from its ISA.
fn cpu_kernels(profile: &Profile, origin: &str) -> Step {
    let cpu = &profile.cpu;
    let known = !cpu.flags.is_empty() || !cpu.features.is_empty();
    let (outcome, facts) = match profile.arch {
        Arch::X86_64 => {
            let avx2 = profile.feature_usable("avx2");
            let amx = profile.feature_usable("amx_int8") && profile.feature_usable("avx512_vnni");
            let outcome = match (known, amx, avx2) {
                (false, _, _) => "the profile lists no CPU features: whether llama.cpp repacks Q4_0/Q4_K here (AVX2 and up) is unknown; probe the device".to_string(),
                (true, true, _) => "AMX-INT8 with AVX512-VNNI: a native build offers the AMX buffer type first, which takes Q4_0 and Q4_K weights whose output rows are a multiple of 32 (ggml-cpu/amx/common.h:106-115, amx.cpp:139-187); the rest go to the AVX2 repack (q4_0_8x8, q4_K_8x8)".to_string(),
                (true, false, true) => "AVX2: llama.cpp repacks Q4_0 to q4_0_8x8 and Q4_K to q4_K_8x8 at load (weights with rows a multiple of 8; ggml-cpu/repack.cpp:4974-5031) and multiplies them against Q8_0 / Q8_K activations".to_string(),
                (true, false, false) => "no AVX2: no repacked layout on this CPU (ggml-cpu/repack.cpp needs AVX2 on x86); Q4_0 runs ggml-cpu's plain Q4_0 x Q8_0 dot product".to_string(),
            };
            (
                outcome,
                vec![
                    Fact::new(
                        "cpu.features.avx2.usable (else the cpuinfo flag)",
                        json!(avx2),
                        origin.to_string(),
                    ),
                    Fact::new(
                        "cpu.features.amx_int8.usable (else the cpuinfo flag)",
                        json!(profile.feature_usable("amx_int8")),
                        origin.to_string(),
                    ),
                ],
            )
        }
        Arch::Aarch64 => {
            let (dotprod, i8mm) = (cpu.has_flag("asimddp"), cpu.has_flag("i8mm"));
            let outcome = match (known, i8mm, dotprod) {
                (false, _, _) => "the profile lists no CPU features: whether llama.cpp repacks Q4_0/Q4_K here (Arm dotprod or i8mm) is unknown; probe the device".to_string(),
                (true, true, _) => "Arm i8mm: llama.cpp repacks Q4_0 to q4_0_4x8 and Q4_K to q4_K_8x8 at load (ggml-cpu/repack.cpp:4974-5031)".to_string(),
                (true, false, true) => "Arm dotprod: llama.cpp repacks Q4_0 to q4_0_4x4 and Q4_K to q4_K_8x4 at load (ggml-cpu/repack.cpp:4974-5031)".to_string(),
                (true, false, false) => "Arm without dotprod or i8mm (ARMv8.0, e.g. Cortex-A53/A72): no repacked layout; Q4_0 runs ggml-cpu's NEON Q4_0 x Q8_0 dot product".to_string(),
            };
            (
                outcome,
                vec![Fact::new(
                    "cpu.flags (asimddp = dotprod, i8mm)",
                    json!([("asimddp", dotprod), ("i8mm", i8mm)]),
                    format!("/proc/cpuinfo Features ({origin})"),
                )],
            )
        }
    };
    Step {
        rule: "llama_cpp_cpu_kernels".into(),
        outcome,
        facts,
    }
}
