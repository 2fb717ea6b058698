//! llama.cpp's dialect: `llama-server` serving a GGUF file.
//!
//! Every option printed here was read in the llama.cpp tree of [`CHECKED_AGAINST`]
//! (common/arg.cpp, common/common.h, tools/server) and is exercised by the end-to-end
//! test (tests/engine_llama_cpp.rs: convert, quantize and serve with the emitted script
//! and flags, get tokens):
//! - `--threads` from the usable threads, and the CPUs they run on as `--cpu-mask`
//!   (hex, up to 512 CPUs) with `--cpu-strict 1`, which places one thread on each CPU
//!   of the mask in turn (ggml-cpu.c `ggml_thread_cpumask_next`, OpenMP builds too);
//! - `--ctx-size`: the whole KV cache in tokens, shared by the `--parallel` slots
//!   (each slot gets ctx-size / parallel). llama-server's own defaults are the model's
//!   training context and 4 slots, which can be far more memory than the device has,
//!   so both are always stated: without a `--model` fit, 4096 tokens and one slot;
//! - `--batch-size 2048 --ubatch-size 512`, llama.cpp's defaults, stated because the
//!   memory fit's compute buffer is sized for that micro-batch;
//! - `--flash-attn on` (llama.cpp's default is `auto`): the memory fit sizes the compute
//!   buffer for flash attention, which every backend edgeplan plans for has;
//! - on a GPU, `--n-gpu-layers all`, or from a `--model` fit that offloads part of the
//!   model, the layers the GPU holds plus the head (llama.cpp counts it as a layer).
//!
//! There is no environment to set: llama-server reads its settings from flags.

use serde_json::{Map, Value, json};

use crate::plan::Plan;
use crate::plan::schema::{EngineRendering, Target};

/// The engine's name in plans and manifests.
pub const NAME: &str = "llama.cpp";

/// The release this dialect was checked against.
pub const CHECKED_AGAINST: [&str; 1] =
    ["llama.cpp 0c1e57098 (vendored in llama-cpp-python 0.3.36)"];

/// Where the pinned llama.cpp comes from: this package's source distribution vendors
/// the tree (the build script builds llama-server from it; installing the package
/// builds Python bindings, not the server).
pub const PACKAGE: &str = "llama-cpp-python==0.3.36";

/// The serve command, before the GGUF file.
pub const COMMAND: [&str; 2] = ["llama-server", "--model"];

/// llama.cpp's default micro-batch (common/common.h `n_ubatch = 512`): the compute
/// buffer the memory fit estimates is sized for it.
pub const UBATCH: u64 = 512;
/// llama.cpp's default logical batch (common/common.h `n_batch = 2048`).
pub const BATCH: u64 = 2048;
/// The context a plan states without a `--model` fit.
pub const CONTEXT_WITHOUT_MODEL: u64 = 4096;
/// The most CPUs `--cpu-mask` can name (`GGML_MAX_N_THREADS`, ggml.h).
const MAX_MASK_CPUS: u32 = 512;

/// `--cpu-mask`'s hex for a cpulist (`2-3` -> `0xc`), or `None` when a CPU is past
/// what the mask can hold or the list is unreadable.
pub fn cpu_mask(cpulist: &str) -> Option<String> {
    let cpus = crate::profile::parse_cpulist(cpulist)?;
    let top = *cpus.iter().next_back()?;
    if top >= MAX_MASK_CPUS {
        return None;
    }
    let mut nibbles = vec![0u8; (top / 4 + 1) as usize];
    for cpu in cpus {
        nibbles[(cpu / 4) as usize] |= 1 << (cpu % 4);
    }
    let hex: String = nibbles
        .iter()
        .rev()
        .map(|n| char::from_digit(u32::from(*n), 16).unwrap_or('0'))
        .collect();
    Some(format!("0x{hex}"))
}

/// llama-server's options for the plan, in flag order (long names without the dashes).
fn kwargs(plan: &Plan) -> Map<String, Value> {
    let d = &plan.deploy;
    let mut kw = Map::new();
    if let Some(t) = d.threads {
        kw.insert("threads".into(), json!(t));
    }
    if d.target == Target::Cpu
        && let Some(mask) = d.cpus.as_deref().and_then(cpu_mask)
    {
        kw.insert("cpu_mask".into(), json!(mask));
        kw.insert("cpu_strict".into(), json!(1));
    }
    let slots = d.max_sequences.unwrap_or(1).max(1);
    let per_slot = d.max_context.unwrap_or(CONTEXT_WITHOUT_MODEL);
    kw.insert("ctx_size".into(), json!(per_slot.saturating_mul(slots)));
    kw.insert("parallel".into(), json!(slots));
    kw.insert("batch_size".into(), json!(BATCH));
    kw.insert("ubatch_size".into(), json!(UBATCH));
    kw.insert("flash_attn".into(), json!("on"));
    if d.target == Target::Gpu {
        match d.gpu_layers {
            Some(n) => kw.insert("n_gpu_layers".into(), json!(n)),
            None => kw.insert("n_gpu_layers".into(), json!("all")),
        };
    }
    kw
}

/// What the rendering chose, for the plan's readers.
fn notes(plan: &Plan) -> Vec<String> {
    let d = &plan.deploy;
    let mut notes = Vec::new();
    if let Some(t) = &d.weights.gguf_type {
        notes.push(format!("the GGUF file is {t}; build it with `edgeplan plan --engine llama.cpp --format script`, which converts the checkpoint and runs llama-quantize from the pinned llama.cpp"));
    }
    match (d.max_context, d.max_sequences) {
        (None, _) => notes.push(format!("no --model fit: --ctx-size {CONTEXT_WITHOUT_MODEL} for one slot (llama-server would otherwise take the model's training context and 4 slots); `plan --model` sizes both")),
        (Some(c), n) => notes.push(format!("--ctx-size is {} slot(s) of {c} tokens: llama-server shares it between its --parallel slots", n.unwrap_or(1).max(1))),
    }
    if d.target == Target::Cpu {
        match d.cpus.as_deref() {
            Some(cpus) if cpu_mask(cpus).is_some() => notes.push(format!("--cpu-mask names CPUs {cpus} (the first usable ones); --cpu-strict 1 puts one thread on each")),
            Some(cpus) => notes.push(format!("the usable CPUs ({cpus}) go past the 512 that --cpu-mask can name: threads are left to the OS")),
            None => notes.push("the usable CPU list is unknown: threads are left to the OS; add --cpu-mask for the CPUs the server may use".into()),
        }
    }
    notes
}

/// The plan's deployment in llama.cpp's dialect, with the options its flags came from.
pub fn render_with_kwargs(plan: &Plan) -> (EngineRendering, Map<String, Value>) {
    let kwargs = kwargs(plan);
    let checked_against = CHECKED_AGAINST.map(String::from).to_vec();
    let rendering = if plan.deploy.target == Target::Npu {
        EngineRendering {
            name: NAME.into(),
            checked_against,
            runs: false,
            package: None,
            command: Vec::new(),
            flags: Vec::new(),
            env: Vec::new(),
            notes: vec!["this path does not run in llama.cpp".into()],
        }
    } else {
        EngineRendering {
            name: NAME.into(),
            checked_against,
            runs: true,
            package: Some(PACKAGE.into()),
            command: COMMAND.iter().map(|s| s.to_string()).collect(),
            flags: super::common::flags_of(&kwargs),
            env: Vec::new(),
            notes: notes(plan),
        }
    };
    (rendering, kwargs)
}

/// The plan's deployment in llama.cpp's dialect.
pub fn render(plan: &Plan) -> EngineRendering {
    render_with_kwargs(plan).0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_masks_are_hex_of_the_cpulist() {
        assert_eq!(cpu_mask("0-1").as_deref(), Some("0x3"));
        assert_eq!(cpu_mask("2-3").as_deref(), Some("0xc"));
        assert_eq!(cpu_mask("4").as_deref(), Some("0x10"));
        assert_eq!(cpu_mask("0,5,9").as_deref(), Some("0x221"));
        assert_eq!(cpu_mask("511").map(|m| m.len()), Some(2 + 128));
        assert_eq!(cpu_mask("512"), None, "past GGML_MAX_N_THREADS");
        assert_eq!(cpu_mask("x"), None);
    }
}
