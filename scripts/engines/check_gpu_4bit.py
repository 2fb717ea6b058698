#!/usr/bin/env python3
"""A GPU 4-bit plan (w4a16-gpu-*), checked against vLLM's own code without a GPU.

Usage: $EDGEPLAN_SERVE_VENV/bin/python check_gpu_4bit.py GPTQ_DIR MODEL_CONFIG CC PLAN_JSON

GPTQ_DIR      a checkpoint built by the plan's own script (its config.json's
              quantization_config and its tokenizer are used);
MODEL_CONFIG  the Hugging Face config of the model the plan was fitted for (shapes and
              context limit; no weights are read);
CC            the compute capability of the plan's GPU, as 75, 86, 90 ...;
PLAN_JSON     `edgeplan plan --format json` for that GPU and model.

Checks, with vLLM's classes (the CPU wheel's Python is the GPU wheel's for these files):
1. the checkpoint's quantization_config is what the plan says (4 bits, group, sym,
   desc_act false, lm_head);
2. vLLM's override picks auto_gptq for the plan's --quantization value, from_config
   accepts the config, its minimum capability is met and the plan's dtype is one it takes;
3. with the platform made to report CUDA at CC: Marlin supports the type and group,
   AutoGPTQLinearMethod (which calls verify_marlin_supported) constructs, and
   choose_mp_linear_kernel picks the kernel the plan's notes name for every linear of
   the model (Machete at 9.0, Marlin from 7.5); at 7.0 the same construction fails,
   which is why edgeplan plans no 4-bit GPU path below 7.5;
4. the plan's flags through the serve parser and create_engine_config(), on a directory
   with the model's config and the checkpoint's quantization_config (not faked).
Prints one line per check; exits 1 on the first failure, 2 on bad usage.
"""
import contextlib
import json
import os
import shutil
import sys
import tempfile


def fail(msg: str) -> None:
    print(f"check_gpu_4bit: FAILED: {msg}")
    sys.exit(1)


def ok(msg: str) -> None:
    print(f"check_gpu_4bit: ok: {msg}")


def expected_kernel(cc: int) -> str:
    # kernels/linear/__init__.py:539 (0.33.0): CutlassW4A8 (fp8 activations only),
    # Machete (capability exactly 9.0), Marlin (from 7.5), ...
    return "MacheteLinearKernel" if cc == 90 else "MarlinLinearKernel"


@contextlib.contextmanager
def fake_cuda(cc: int):
    """vLLM's current_platform answering as a CUDA GPU of compute capability `cc`."""
    from vllm.platforms import PlatformEnum, current_platform
    from vllm.platforms.interface import DeviceCapability

    cap = DeviceCapability(cc // 10, cc % 10)

    def as_int(c):
        return c if isinstance(c, int) else c[0] * 10 + c[1]

    patch = {
        "_enum": PlatformEnum.CUDA,
        "is_cuda": lambda: True,
        "is_cuda_alike": lambda: True,
        "is_cpu": lambda: False,
        "is_rocm": lambda: False,
        "is_xpu": lambda: False,
        "get_device_capability": lambda device_id=0: cap,
        "has_device_capability": lambda c, device_id=0: cc >= as_int(c),
        "is_device_capability": lambda c, device_id=0: cc == as_int(c),
        "is_device_capability_family": lambda c, device_id=0: cc // 10 == as_int(c) // 10,
    }
    saved = {k: current_platform.__dict__[k] for k in patch if k in current_platform.__dict__}
    for k, v in patch.items():
        setattr(current_platform, k, v)
    try:
        yield
    finally:
        for k in patch:
            if k in saved:
                setattr(current_platform, k, saved[k])
            else:
                delattr(current_platform, k)


def linear_shapes(cfg: dict) -> list[tuple[int, int]]:
    """(in, out) of each distinct linear of a Llama/Qwen-style decoder layer."""
    h, i = cfg["hidden_size"], cfg["intermediate_size"]
    heads, kv = cfg["num_attention_heads"], cfg.get("num_key_value_heads", cfg["num_attention_heads"])
    d = cfg.get("head_dim") or h // heads
    return sorted({(h, (heads + 2 * kv) * d), (heads * d, h), (h, 2 * i), (i, h)})


def check_config(qcfg: dict, weights: dict) -> None:
    want = {
        "quant_method": "gptq",
        "bits": weights["bits"],
        "group_size": weights["group_size"],
        "sym": weights["symmetric"],
        "desc_act": False,
        "lm_head": weights["lm_head"] == "quantized",
    }
    got = {k: qcfg.get(k) for k in want}
    if got != want:
        fail(f"the checkpoint's quantization_config {got} is not the plan's {want}")
    ok(f"quantization_config {want}")


def check_method(qcfg: dict, flags: list[str], dtype: str, cc: int):
    import torch
    from vllm.model_executor.layers.quantization import get_quantization_config
    from vllm.model_executor.layers.quantization.auto_gptq import AutoGPTQConfig

    user = flags[flags.index("--quantization") + 1] if "--quantization" in flags else None
    if user is not None and get_quantization_config(user) is not AutoGPTQConfig:
        fail(f"--quantization {user} is not AutoGPTQConfig's")
    method = AutoGPTQConfig.override_quantization_method(qcfg, user)
    if method != "auto_gptq":
        fail(f"--quantization {user}: vLLM's override gives {method}, not auto_gptq")
    cfg = AutoGPTQConfig.from_config(qcfg)
    if cfg.get_min_capability() > cc:
        fail(f"auto_gptq needs capability {cfg.get_min_capability()}, the GPU has {cc}")
    act = {"float16": torch.float16, "bfloat16": torch.bfloat16}[dtype]
    if act not in cfg.get_supported_act_dtypes():
        fail(f"--dtype {dtype} is not one auto_gptq takes")
    if cc < 80 and act == torch.bfloat16:
        fail("--dtype bfloat16 below compute capability 8.0 (platforms/cuda.py:638 refuses it)")
    ok(f"--quantization {user} -> {method} ({cfg!r}); min capability {cfg.get_min_capability()} <= {cc}; dtype {dtype}")
    return cfg, act


def check_kernel(cfg, act, cc: int, shapes: list[tuple[int, int]], notes: str) -> None:
    from vllm.model_executor.kernels.linear import MPLinearLayerConfig, choose_mp_linear_kernel
    from vllm.model_executor.layers.quantization.auto_gptq import AutoGPTQLinearMethod
    from vllm.model_executor.layers.quantization.utils.marlin_utils import check_marlin_supported

    want = expected_kernel(cc)
    with fake_cuda(cc):
        if not check_marlin_supported(cfg.quant_type, cfg.group_size, False, cc):
            fail(f"Marlin does not support {cfg.quant_type}, group {cfg.group_size} at {cc}")
        AutoGPTQLinearMethod(cfg)  # verify_marlin_supported, as vLLM does per layer
        for k, n in shapes:
            layer = MPLinearLayerConfig(
                full_weight_shape=(k, n),
                partition_weight_shape=(k, n),
                weight_type=cfg.quant_type,
                act_type=act,
                group_size=cfg.group_size,
                zero_points=False,
            )
            got = choose_mp_linear_kernel(layer, cc).__name__
            if got != want:
                fail(f"capability {cc}, linear {k}x{n}: vLLM picks {got}, edgeplan says {want}")
    if want not in notes:
        fail(f"the plan's engine notes do not name {want}: {notes}")
    ok(f"capability {cc}: {want} for the linears {shapes}")
    with fake_cuda(70):
        try:
            AutoGPTQLinearMethod(cfg)
        except ValueError as e:
            ok(f"capability 70 refused as edgeplan assumes: {' '.join(str(e).split())[:120]}")
        else:
            fail("vLLM would load GPTQ at capability 7.0: edgeplan's 7.5 floor is stale")


def check_engine(gptq_dir: str, model_config: dict, qcfg: dict, flags: list[str]) -> None:
    from vllm.engine.arg_utils import AsyncEngineArgs
    from vllm.entrypoints.launchers.cli_args import make_arg_parser, validate_parsed_serve_args
    from vllm.utils.argparse_utils import FlexibleArgumentParser

    work = tempfile.mkdtemp(prefix="edgeplan-gpu4-")
    try:
        for name in os.listdir(gptq_dir):
            if name.startswith("tokenizer") or name == "special_tokens_map.json":
                shutil.copy(os.path.join(gptq_dir, name), work)
        config = {"architectures": ["LlamaForCausalLM"], "torch_dtype": "bfloat16", **model_config}
        rope = config.get("rope_scaling") or {}
        if rope.get("rope_type") == "llama3":
            # edgeplan's cut config keeps only the keys it reads; transformers needs the
            # rest of Llama 3.1's rope block (meta-llama/Llama-3.1-8B config.json).
            config["rope_scaling"] = {"low_freq_factor": 1.0, "high_freq_factor": 4.0, **rope}
            config.setdefault("rope_theta", 500000.0)
        config["quantization_config"] = qcfg
        with open(os.path.join(work, "config.json"), "w") as f:
            json.dump(config, f)
        parser = make_arg_parser(FlexibleArgumentParser(description="edgeplan check"))

        def _error(message):
            raise ValueError(f"argument parser: {message}")

        parser.error = _error
        args = parser.parse_args(["--model", work, *flags])
        validate_parsed_serve_args(args)
        engine = AsyncEngineArgs.from_cli_args(args).create_engine_config()
        m = engine.model_config
        if m.quantization != "auto_gptq":
            fail(f"create_engine_config: quantization {m.quantization}, not auto_gptq")
        ok(f"parser and create_engine_config accept {' '.join(flags)}: quantization={m.quantization} dtype={m.dtype} max_model_len={m.max_model_len}")
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main() -> int:
    if len(sys.argv) != 5:
        print(__doc__, file=sys.stderr)
        return 2
    gptq_dir, model_config_path, cc, plan_path = sys.argv[1:5]
    cc = int(cc)
    os.environ.setdefault("VLLM_LOGGING_LEVEL", "WARNING")
    with open(plan_path) as f:
        plan = json.load(f)
    with open(model_config_path) as f:
        model_config = json.load(f)
    with open(os.path.join(gptq_dir, "config.json")) as f:
        qcfg = json.load(f)["quantization_config"]
    d = plan["deploy"]
    if not (d["target"] == "gpu" and d["kernel"] == "w4a16" and d["weights"]["format"] == "gptq"):
        fail(f"not a GPU 4-bit GPTQ plan: {plan['path']['name']} {d['target']} {d['kernel']}")
    flags = plan["engine"]["flags"]
    dtype = flags[flags.index("--dtype") + 1]
    print(f"check_gpu_4bit: {plan['device']}: {plan['path']['name']} at capability {cc}: {' '.join(flags)}")
    check_config(qcfg, d["weights"])
    cfg, act = check_method(qcfg, flags, dtype, cc)
    check_kernel(cfg, act, cc, linear_shapes(model_config), " ".join(plan["engine"]["notes"]))
    check_engine(gptq_dir, model_config, qcfg, flags)
    return 0


if __name__ == "__main__":
    sys.exit(main())
