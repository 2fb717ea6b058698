#!/usr/bin/env python3
"""Parse the memory report of a llama.cpp log (llama-server, llama-cli, ...) into JSON.

Usage: llama_buffers.py LOG [--all]

Reads the lines llama.cpp (b11312) prints at INFO level while it loads a model
and creates a context:
  load_tensors:   CPU_REPACK model buffer size =     1.18 MiB      (src/llama-model.cpp)
  llama_kv_cache:        CPU KV buffer size =    32.00 MiB         (src/llama-kv-cache.cpp)
  llama_kv_cache: size =   32.00 MiB (  4096 cells,   2 layers,  4/1 seqs), K (f16):   16.00 MiB, V (f16):   16.00 MiB
  sched_reserve:        CPU compute buffer size =     4.25 MiB     (src/llama-context.cpp)
  llama_context:        CPU  output buffer size =     0.0 MiB
  llama_context: n_ctx = 4096 (and n_seq_max, n_ctx_seq, n_batch, n_ubatch, flash_attn, ...)
  system_info: n_threads = 2 (n_threads_batch = 2) / 2 | CPU : ... |
and, at debug level (-lv 5 / -v), ggml's "repack: repack tensor X with Q4_0_8x8" lines.

Output (stdout): one JSON object
  model_buffers   {buffer type name: {"mib": as printed, "bytes": mib*2^20 rounded}}
  kv_buffers      {device buffer name: {...}}     (per device)
  compute_buffers {device buffer name: {...}}     (per device)
  output_buffers  {device buffer name: {...}}
  kv_cache        [{"size_mib", "cells", "layers", "seqs", "k_type", "k_mib", "v_type", "v_mib"}]
  n_ctx           int, as the log reports it (llama_context: n_ctx); context: every "llama_context: key = value"
  repack          the repack / extra buffer type evidence lines of that load, verbatim
                  ("repack: repack tensor ...", "... cannot be used with preferred buffer type CPU_REPACK", ...)
  memory_breakdown  the memory breakdown table llama-server prints on exit, verbatim
  system_info     the system_info line, verbatim
  loads           how many model loads the log shows; the figures are those of the last one.
                  llama-server's default --fit on first loads the model without allocating
                  (its buffers print as 0.00 MiB), then for real (--all: every load, in "all_loads")
The log prints MiB with two decimals, so "bytes" is exact only to +-0.005 MiB
(5243 bytes); "mib" keeps the printed text.
Exit status: 0 when at least one of these was found, 1 when none was, 2 on usage errors.
"""
import json
import re
import sys

MIB = 1024 * 1024
NUM = r"([0-9]+(?:\.[0-9]+)?)"
RE_MODEL = re.compile(r"(\w+):\s+(\S+) model buffer size =\s*" + NUM + r" MiB")
RE_KV = re.compile(r"(\w+):\s+(\S+) KV buffer size =\s*" + NUM + r" MiB")
RE_COMPUTE = re.compile(r"(\w+):\s+(\S+) compute buffer size =\s*" + NUM + r" MiB")
RE_OUTPUT = re.compile(r"(\w+):\s+(\S+)\s+output buffer size =\s*" + NUM + r" MiB")
RE_KV_DETAIL = re.compile(
    r"llama_kv_cache: size =\s*" + NUM + r" MiB \(\s*(\d+) cells,\s*(\d+) layers,\s*(\d+)/(\d+) seqs\), "
    r"K \((\w+)\):\s*" + NUM + r" MiB, V \((\w+)\):\s*" + NUM + r" MiB")
RE_CTX = re.compile(r"llama_context: (\w+)\s+= (.+?)\s*$")
RE_REPACK = re.compile(r"repack|extra buf|buffer type overridden|\bAMX\b|KLEIDIAI|CPU_REPACK", re.IGNORECASE)
RE_LOADER = re.compile(r"llama_model_loader: loaded meta data")
RE_BREAKDOWN = re.compile(r"memory_breakdown_print: \|")
RE_SYSINFO = re.compile(r"(system_info: .*?)\s*$")
RE_ANSI = re.compile(r"\x1b\[[0-9;]*m")


def size(mib_text: str) -> dict:
    return {"mib": mib_text, "bytes": round(float(mib_text) * MIB)}


def new_load() -> dict:
    return {"model_buffers": {}, "kv_buffers": {}, "compute_buffers": {}, "output_buffers": {},
            "kv_cache": [], "context": {}, "n_ctx": None, "repack": [], "memory_breakdown": []}


def as_number(text: str):
    try:
        return int(text)
    except ValueError:
        try:
            return float(text)
        except ValueError:
            return text


def parse(lines) -> dict:
    """Split the log into model loads (each "llama_model_loader: loaded meta data" line, or a
    model-buffer block with no loader line before it, starts one) and parse each."""
    loads = []
    cur = None
    prev_model_line = False
    sysinfo = None
    for raw in lines:
        line = RE_ANSI.sub("", raw.rstrip("\n"))
        if RE_LOADER.search(line):
            cur = new_load()
            loads.append(cur)
            prev_model_line = False
            continue
        m = RE_SYSINFO.search(line)
        if m:
            if sysinfo is None:
                sysinfo = m.group(1)
            continue  # its "REPACK = 1" is a build feature, not evidence of use
        m = RE_MODEL.search(line)
        if m:
            if cur is None or (cur["model_buffers"] and not prev_model_line):
                cur = new_load()
                loads.append(cur)
            prev_model_line = True
            cur["model_buffers"][m.group(2)] = size(m.group(3))
            if RE_REPACK.search(m.group(2)):
                cur["repack"].append(line.strip())
            continue
        prev_model_line = False
        if cur is None:
            cur = new_load()
            loads.append(cur)
        if RE_REPACK.search(line):
            cur["repack"].append(line.strip())
        if RE_BREAKDOWN.search(line):
            cur["memory_breakdown"].append(line.strip())
            continue
        m = RE_KV.search(line)
        if m:
            cur["kv_buffers"][m.group(2)] = size(m.group(3))
            continue
        m = RE_COMPUTE.search(line)
        if m:
            cur["compute_buffers"][m.group(2)] = size(m.group(3))
            continue
        m = RE_OUTPUT.search(line)
        if m:
            cur["output_buffers"][m.group(2)] = size(m.group(3))
            continue
        m = RE_KV_DETAIL.search(line)
        if m:
            cur["kv_cache"].append({
                "size_mib": m.group(1), "cells": int(m.group(2)), "layers": int(m.group(3)),
                "seqs": f"{m.group(4)}/{m.group(5)}",
                "k_type": m.group(6), "k_mib": m.group(7), "v_type": m.group(8), "v_mib": m.group(9)})
            continue
        m = RE_CTX.search(line)
        if m:
            key, val = m.group(1), m.group(2)
            cur["context"][key] = as_number(val)
            if key == "n_ctx":
                cur["n_ctx"] = as_number(val)
    loads = [ld for ld in loads if any(ld[k] for k in ("model_buffers", "kv_buffers", "compute_buffers",
                                                       "kv_cache", "context", "repack"))]
    out = dict(loads[-1]) if loads else new_load()
    out["system_info"] = sysinfo
    out["loads"] = len(loads)
    out["_all"] = loads
    return out


def main() -> int:
    args = [a for a in sys.argv[1:] if a != "--all"]
    if len(args) != 1 or args[0] in ("-h", "--help"):
        print(__doc__, file=sys.stderr)
        return 2
    try:
        with open(args[0], encoding="utf-8", errors="replace") as f:
            out = parse(f)
    except OSError as e:
        print(f"llama_buffers.py: {e}", file=sys.stderr)
        return 2
    all_loads = out.pop("_all")
    if "--all" in sys.argv[1:]:
        out["all_loads"] = all_loads
    found = (out["model_buffers"] or out["kv_buffers"] or out["compute_buffers"] or out["repack"]
             or out["n_ctx"] is not None or out["system_info"])
    print(json.dumps(out, indent=2))
    if not found:
        print(f"llama_buffers.py: no llama.cpp buffer, n_ctx or system_info lines in {args[0]}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
