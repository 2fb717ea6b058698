#!/usr/bin/env python3
"""Run llama.cpp's convert_hf_to_gguf.py, optionally naming the BPE pre-tokenizer.

Usage (with the converter venv's python, after `eval "$(scripts/engines/llama_install.sh)"`):
  $EDGEPLAN_CONVERT_VENV/bin/python scripts/engines/llama_convert.py \
      [--llama-cpp TREE] [--pre-tokenizer NAME] MODEL_DIR --outtype bf16 --outfile OUT.gguf [converter args]

The converter recognises a BPE tokenizer by hashing how it splits a fixed text
and refuses any tokenizer it has not seen ("BPE pre-tokenizer was not
recognized").  The test models (tiny_model.py) train their own small byte-level
BPE with the GPT-2 split regex, which no upstream model has, so for them pass
--pre-tokenizer gpt-2: that name is written to tokenizer.ggml.pre only when the
hash is unknown; a recognised tokenizer keeps the converter's own answer.
Without --pre-tokenizer this is exactly convert_hf_to_gguf.py.

TREE defaults to $EDGEPLAN_LLAMA_CPP.  Everything after our own options goes to
the converter unchanged; its exit status is ours.
"""
import logging
import os
import runpy
import sys


def main() -> int:
    argv = sys.argv[1:]
    tree = os.environ.get("EDGEPLAN_LLAMA_CPP")
    pre = None
    while argv and argv[0] in ("--llama-cpp", "--pre-tokenizer"):
        if len(argv) < 2:
            print(f"llama_convert.py: {argv[0]} needs a value", file=sys.stderr)
            return 2
        if argv[0] == "--llama-cpp":
            tree = argv[1]
        else:
            pre = argv[1]
        argv = argv[2:]
    if not tree:
        print("llama_convert.py: set EDGEPLAN_LLAMA_CPP or pass --llama-cpp TREE", file=sys.stderr)
        return 2
    script = os.path.join(tree, "convert_hf_to_gguf.py")
    if not os.path.isfile(script):
        print(f"llama_convert.py: {script} not found", file=sys.stderr)
        return 2

    sys.path.insert(0, tree)
    if pre is not None:
        from conversion.base import TextModel  # the tree's converter package

        original = TextModel.get_vocab_base_pre

        def get_vocab_base_pre(self, tokenizer) -> str:
            try:
                return original(self, tokenizer)
            except NotImplementedError:
                logging.getLogger("llama_convert").warning(
                    "unrecognised BPE pre-tokenizer: writing tokenizer.ggml.pre=%r (--pre-tokenizer)", pre)
                return pre

        TextModel.get_vocab_base_pre = get_vocab_base_pre

    sys.argv = [script] + argv
    try:
        runpy.run_path(script, run_name="__main__")
    except SystemExit as e:
        code = e.code
        if code is None:
            return 0
        if isinstance(code, int):
            return code
        print(code, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
