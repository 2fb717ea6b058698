#!/usr/bin/env python3
"""Compare edgeplan's llama.cpp memory fit with what llama.cpp logged allocating.

Usage: check_llama_memory.py PLAN.json BUFFERS.json MODEL.gguf [--tolerance 0.05]

PLAN.json: `edgeplan plan --engine llama.cpp --model CONFIG --context N --format json`.
BUFFERS.json: llama_buffers.py's parse of the llama-server log of that plan's flags.
MODEL.gguf: the file that server loaded (read with the tree's gguf-py).

Four figures, each within the tolerance (default 5%) of llama.cpp's:
  file      memory.llama_cpp.file_bytes     vs the GGUF file's tensor bytes
  repacked  memory.llama_cpp.repacked_bytes vs the CPU_REPACK (+ AMX) model buffers
  KV        memory.llama_cpp.kv_bytes       vs the KV buffers
  compute   memory.llama_cpp.compute_bytes  vs the compute buffers
and, for information, the plan's weights (file + repacked copies) against the sum of
the model buffers the log reports: CPU_Mapped is the mapped range from the first to
the last tensor that is not repacked, so a repacked tensor at the file's end is left
out of it (a few percent on a tiny model, nothing on a real one).
The log prints MiB with two decimals, so each of its figures is known to +-5243
bytes: that much is added to the tolerance. Prints one line per figure; exit 1 when
any is off, 2 on bad input.
"""
import json
import sys

ROUNDING = 5243  # half of 0.01 MiB, the log's resolution


def total(buffers: dict) -> int:
    return sum(v["bytes"] for v in buffers.values())


def main() -> int:
    args = sys.argv[1:]
    tolerance = 0.05
    if "--tolerance" in args:
        i = args.index("--tolerance")
        tolerance = float(args[i + 1])
        del args[i : i + 2]
    if len(args) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    from gguf import GGUFReader  # the tree's gguf-py, in the converter's environment

    file_tensor_bytes = sum(int(t.n_bytes) for t in GGUFReader(args[2]).tensors)
    with open(args[0], encoding="utf-8") as f:
        plan = json.load(f)
    with open(args[1], encoding="utf-8") as f:
        log = json.load(f)
    memory = plan.get("memory") or {}
    ours = memory.get("llama_cpp")
    if not ours:
        print(f"{args[0]}: no memory.llama_cpp (not a llama.cpp plan with --model?)", file=sys.stderr)
        return 2
    extra = {k: v for k, v in log["model_buffers"].items() if k in ("CPU_REPACK", "AMX")}
    rows = [
        ("file", ours["file_bytes"], file_tensor_bytes, 0),
        ("repacked", ours["repacked_bytes"], total(extra), len(extra)),
        ("KV", ours["kv_bytes"], total(log["kv_buffers"]), len(log["kv_buffers"])),
        ("compute", ours["compute_bytes"], total(log["compute_buffers"]), len(log["compute_buffers"])),
    ]
    bad = 0
    for name, planned, logged, parts in rows:
        if parts == 0 and name not in ("file", "repacked"):
            print(f"{name}: llama.cpp's log reports no such buffer", file=sys.stderr)
            bad += 1
            continue
        if logged == 0 and planned == 0:
            print(f"{name:8} planned 0 B, llama.cpp 0 B  ok", file=sys.stderr)
            continue
        slack = tolerance * logged + ROUNDING * parts
        off = planned - logged
        ok = abs(off) <= slack
        ratio = planned / logged if logged else float("inf")
        print(
            f"{name:8} planned {planned:>13,} B  llama.cpp {logged:>13,} B  ratio {ratio:.4f}  "
            f"{'ok' if ok else 'OFF'} (tolerance {tolerance:.0%})",
            file=sys.stderr,
        )
        bad += not ok
    weights = total(log["model_buffers"])
    print(
        f"(weights: planned {memory['weights_bytes']:,} B, llama.cpp's model buffers {weights:,} B, "
        f"ratio {memory['weights_bytes'] / max(weights, 1):.4f})",
        file=sys.stderr,
    )
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
