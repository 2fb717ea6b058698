//! The engine-neutral deployment of a plan: what any engine is asked to run.
//!
//! [`deployment`] builds it when the rules have chosen a path: the target (CPU, GPU,
//! NPU), the kernel family, the checkpoint's weight format, the activation dtype, the
//! threads and the CPUs they run on, and a KV budget from the RAM budget (a quarter of
//! it in whole GiB on a CPU, when no model is given). [`apply_fit`] then refines it
//! from a `--model` memory fit: context, sequences, batched tokens, the KV bytes left
//! after the weights, a GPU's memory fraction. Engines (src/engine/) render it; no
//! engine's flag or variable is named here.

use serde_json::json;

use super::catalog::{Catalog, Engine, PathSpec};
use super::memory::{self, MemoryFit};
use super::schema::{Deployment, Fact, Step, Target, WeightFormat};
use crate::profile::{HardwareClass, Profile};

/// Without a `--model` fit, the share of the usable RAM budget a CPU plan gives the
/// KV cache (the fit replaces it with what the model leaves).
const KV_SHARE_WITHOUT_MODEL: f64 = 0.25;

/// The KV size a CPU plan states when its budget is unknown: 4 GiB, the size vLLM's
/// CPU backend took by default before it sized the cache from the memory utilization.
const KV_BYTES_BUDGET_UNKNOWN: u64 = 4 << 30;

/// The engine-neutral deployment of `spec` on `profile` (routed as `route`), and the
/// trace step that says what it holds. `--model` fits refine the KV budget, context
/// and sequences later ([`memory::apply`]).
pub(super) fn deployment(
    profile: &Profile,
    route: HardwareClass,
    spec: &PathSpec,
    catalog: &Catalog,
    origin: &str,
) -> (Deployment, Step) {
    // A vLLM path that vLLM cannot run is an exported graph; llama.cpp runs on the
    // route's CPU or GPU.
    let serves = spec.runs_in_vllm || spec.engine == Engine::LlamaCpp;
    let target = match (serves, route) {
        (false, _) | (_, HardwareClass::NpuPhone) => Target::Npu,
        (true, HardwareClass::CudaDiscrete | HardwareClass::Jetson) => Target::Gpu,
        (true, HardwareClass::X86Cpu | HardwareClass::Arm64Cpu) => Target::Cpu,
    };
    let threads = profile.cpu.usable_threads;
    let cpus = match (target, threads, profile.cpu.cpulists.as_ref()) {
        (Target::Cpu, Some(t), Some(lists)) => lists.first_usable(t),
        _ => None,
    };
    let (kv_cache_bytes, kv_cache_source) = match target {
        Target::Cpu if spec.engine == Engine::LlamaCpp => (
            None,
            "llama.cpp sizes its KV cache from the context (--ctx-size): the context decides"
                .to_string(),
        ),
        Target::Cpu => cpu_kv_without_model(profile),
        Target::Gpu => (
            None,
            "the engine's own (memory fraction of the GPU less the weights)".to_string(),
        ),
        Target::Npu => (None, "none: no engine serves this path".to_string()),
    };
    let deploy = Deployment {
        target,
        kernel: spec.kernel,
        weights: WeightFormat {
            format: match spec.engine {
                Engine::LlamaCpp => Some("gguf".into()),
                Engine::Vllm => spec.quantization.clone(),
            },
            gguf_type: spec.gguf_type.clone(),
            bits: spec.kernel.weight_bits(),
            group_size: spec.group_size,
            symmetric: spec.symmetric,
            act_order: false,
            lm_head: spec.lm_head,
            dtype: spec.dtype,
        },
        activations: spec.activations,
        threads,
        cpus,
        kv_cache_bytes,
        kv_cache_source,
        max_context: None,
        max_sequences: None,
        max_batched_tokens: None,
        gpu_memory_fraction: None,
        gpu_layers: None,
        beyond_context_limit: false,
    };
    let outcome = outcome(spec, &deploy);
    let step = Step {
        rule: "deployment".into(),
        outcome,
        facts: vec![
            Fact::new(
                "path.kernel",
                json!(spec.kernel),
                format!("catalog ({})", catalog.origin),
            ),
            Fact::new(
                "path.quantization",
                json!(spec.quantization),
                format!("catalog ({})", catalog.origin),
            ),
            Fact::new("cpu.usable_threads", json!(threads), origin.to_string()),
            Fact::new(
                "cpu.cpulists.usable",
                json!(profile.cpu.cpulists.as_ref().and_then(|l| l.usable.clone())),
                origin.to_string(),
            ),
        ],
    };
    (deploy, step)
}

/// A CPU plan's KV size before any `--model` fit: a quarter of the usable RAM budget
/// (the budget less the default headroom), in whole GiB, at least 1 GiB; 4 GiB when
/// the budget is unknown.
fn cpu_kv_without_model(profile: &Profile) -> (Option<u64>, String) {
    const GIB: u64 = 1 << 30;
    let (budget, source) = memory::budget(profile);
    match budget {
        Some(b) => {
            let usable = b as f64 * (1.0 - memory::DEFAULT_HEADROOM);
            let share = (usable * KV_SHARE_WITHOUT_MODEL) as u64 / GIB * GIB;
            (
                Some(share.max(GIB)),
                format!(
                    "no --model given: a quarter of the usable budget ({source}, less {:.0}% headroom) in whole GiB, at least 1 GiB; `plan --model` sizes it to the model",
                    memory::DEFAULT_HEADROOM * 100.0
                ),
            )
        }
        None => (
            Some(KV_BYTES_BUDGET_UNKNOWN),
            format!(
                "the memory budget is unknown ({source}): 4 GiB, vLLM's former CPU default; probe the device or pass --model for a sized one"
            ),
        ),
    }
}

/// Puts what the engine figure assumed into the deployment, so that the engine starts
/// with it: context, sequences, batched tokens, the CPU KV size or the GPU memory
/// fraction. Nothing changes off the engine or when the request does not fit.
pub fn apply_fit(fit: &MemoryFit, deploy: &mut Deployment) {
    if deploy.target == Target::Npu || fit.fits == Some(false) {
        return;
    }
    deploy.max_context = Some(fit.context);
    deploy.beyond_context_limit = fit.beyond_context_limit;
    if let Some(e) = &fit.engine {
        deploy.max_batched_tokens = Some(e.max_num_batched_tokens);
    }
    if let Some(l) = &fit.llama_cpp {
        // llama.cpp serves the asked sequences in as many slots; its KV is sized by
        // the context, so nothing else is stated.
        deploy.max_sequences = Some(fit.concurrency.max(1));
        deploy.gpu_layers = l.gpu_layers.filter(|_| deploy.target == Target::Gpu);
        deploy.max_batched_tokens = None;
        return;
    }
    if let Some(most) = fit.max_concurrency.filter(|m| *m >= 1) {
        deploy.max_sequences = Some(most.min(memory::MAX_NUM_SEQS_CAP));
    }
    match deploy.target {
        Target::Gpu => deploy.gpu_memory_fraction = Some(memory::gpu_utilization(fit.headroom)),
        Target::Cpu => {
            if let Some(bytes) = fit.cpu_kv_cache_bytes {
                deploy.kv_cache_bytes = Some(bytes);
                deploy.kv_cache_source = format!(
                    "the memory fit for {}: whole GiB of the budget left after weights and {:.0}% headroom",
                    fit.model,
                    fit.headroom * 100.0
                );
            }
        }
        Target::Npu => {}
    }
}

/// The trace's sentence for a deployment.
fn outcome(spec: &PathSpec, deploy: &Deployment) -> String {
    let target = match deploy.target {
        Target::Cpu => "CPU",
        Target::Gpu => "GPU",
        Target::Npu => "NPU (exported graph)",
    };
    let kernel = serde_json::to_value(spec.kernel).unwrap_or_default();
    let kv = match deploy.kv_cache_bytes {
        Some(b) => format!("{b} bytes ({})", deploy.kv_cache_source),
        None => deploy.kv_cache_source.clone(),
    };
    format!(
        "deploy on the {target}: kernel {}, weights {} ({} bit{}), activations {}, KV cache {kv}",
        kernel.as_str().unwrap_or("?"),
        match (&spec.gguf_type, &spec.quantization) {
            (Some(t), _) => format!("GGUF {t}"),
            (None, Some(q)) => q.clone(),
            (None, None) => "16-bit, unquantized".into(),
        },
        spec.kernel.weight_bits(),
        spec.group_size
            .map(|g| format!(", group {g}"))
            .unwrap_or_default(),
        spec.activations.as_str(),
    )
}
