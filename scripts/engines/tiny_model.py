#!/usr/bin/env python3
"""Make a tiny random Qwen3-shaped model and a tokenizer, locally, no hub access.

Usage: tiny_model.py OUT_DIR [--calibration FILE] [--seed N] [--untied]

Run it with the python of either engine venv (it needs torch, transformers,
tokenizers).  OUT_DIR gets config.json, generation_config.json,
model.safetensors (bf16), tokenizer.json, tokenizer_config.json, and
special_tokens_map.json: GPTQModel and vLLM both load the directory.

Every linear in/out dimension is a multiple of 128 (GPTQ group 128; vLLM's CPU
WNA16 kernel needs dims divisible by 32): hidden 256, intermediate 768,
q 4x64=256, kv 2x64=128, vocab 512.  The head is tied to the embeddings, as in
the small Qwen3 models (--untied writes a separate lm_head instead).

--calibration FILE writes calibration text, one sample per line (>= 8 lines),
for the GPTQ build.
"""
import argparse
import json
import os
import random
import sys

TEXT = [
    "The quick brown fox jumps over the lazy dog near the river bank.",
    "Edge devices run small language models with quantized weights to save memory.",
    "A deploy planner chooses the engine, the precision and the memory budget for each host.",
    "GPTQ quantizes each linear layer to four bits using a small calibration set.",
    "The server answers completion requests over HTTP and streams tokens back.",
    "Memory bandwidth bounds the decode speed of a transformer on a CPU.",
    "Prefill processes the prompt in parallel while decode produces one token at a time.",
    "Key and value caches grow with the context length and the number of sequences.",
    "Threads are pinned to cores so that the matrix kernels do not migrate.",
    "Integers, floats and brackets: 0 1 2 3 4 5 6 7 8 9 ( ) [ ] { } < > = + - * / % .",
    "Once upon a time there was a small model that could only count to ten.",
    "Hello world! How are you today? I am fine, thank you, and you?",
    "Rust compiles the planner; Python runs the engines in their own environments.",
    "Symmetric quantization stores no zero point; asymmetric stores one per group.",
    "The attention backend reads the paged cache block by block.",
    "Calibration data should look like the text the model will see in production.",
]

SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]

CHAT_TEMPLATE = (
    "{% for message in messages %}"
    "{{ '<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"
)


def build_tokenizer(out_dir: str, vocab_size: int):
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.post_processor = processors.ByteLevel(trim_offsets=False)
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=SPECIALS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(TEXT * 4, trainer=trainer)
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok,
        bos_token=None,
        eos_token="<|endoftext|>",
        pad_token="<|endoftext|>",
        unk_token=None,
        model_max_length=4096,
    )
    fast.chat_template = CHAT_TEMPLATE
    fast.save_pretrained(out_dir)
    return fast


def from_config(args) -> int:
    """A random model with the shapes of a real Qwen3 config, saved in bf16."""
    import torch
    from transformers import Qwen3Config, Qwen3ForCausalLM

    with open(args.config, encoding="utf-8") as f:
        raw = json.load(f)
    if raw.get("model_type") != "qwen3":
        print(f"{args.config}: model_type {raw.get('model_type')!r}, only qwen3 configs are built", file=sys.stderr)
        return 1
    torch.manual_seed(args.seed)
    os.makedirs(args.out_dir, exist_ok=True)
    build_tokenizer(args.out_dir, vocab_size=512)
    fields = {k: v for k, v in raw.items() if k not in ("architectures", "transformers_version")}
    cfg = Qwen3Config(**fields)
    torch.set_default_dtype(torch.bfloat16)
    model = Qwen3ForCausalLM(cfg)
    model.save_pretrained(args.out_dir)
    print(f"wrote {args.out_dir}: {sum(p.numel() for p in model.parameters())} parameters", file=sys.stderr)
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out_dir")
    ap.add_argument("--calibration", help="also write calibration text here, one sample a line")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--untied", action="store_true", help="separate lm_head (tie_word_embeddings false)")
    ap.add_argument("--config", help="a real Qwen3 config.json: random weights of its shapes (for memory figures), "
                    "the tiny tokenizer (the converter pads the vocabulary to the config's)")
    args = ap.parse_args()
    if args.config:
        return from_config(args)

    import torch
    from transformers import GenerationConfig, Qwen3Config, Qwen3ForCausalLM

    torch.manual_seed(args.seed)
    random.seed(args.seed)
    os.makedirs(args.out_dir, exist_ok=True)

    # A multiple of 128, and equal to the tokenizer's size so that every id the
    # random model samples decodes to text.
    vocab_size = 512
    tok = build_tokenizer(args.out_dir, vocab_size=vocab_size)
    eos_id = tok.convert_tokens_to_ids("<|endoftext|>")
    if len(tok) > vocab_size:
        print(f"tokenizer has {len(tok)} ids > vocab {vocab_size}", file=sys.stderr)
        return 1

    cfg = Qwen3Config(
        vocab_size=vocab_size,
        hidden_size=256,
        intermediate_size=768,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        head_dim=64,
        max_position_embeddings=4096,
        rms_norm_eps=1e-6,
        rope_theta=1000000.0,
        tie_word_embeddings=not args.untied,
        bos_token_id=eos_id,
        eos_token_id=eos_id,
        pad_token_id=eos_id,
        torch_dtype="bfloat16",
    )
    model = Qwen3ForCausalLM(cfg).to(torch.bfloat16)
    model.eval()
    model.generation_config = GenerationConfig(
        bos_token_id=eos_id, eos_token_id=eos_id, pad_token_id=eos_id, do_sample=False
    )
    model.save_pretrained(args.out_dir)

    # sanity: reload and run one forward pass
    m2 = Qwen3ForCausalLM.from_pretrained(args.out_dir, dtype=torch.bfloat16)
    ids = tok("Hello world", return_tensors="pt").input_ids
    with torch.no_grad():
        logits = m2(ids).logits
    assert logits.shape[-1] == vocab_size, logits.shape

    if args.calibration:
        lines = list(TEXT)
        random.shuffle(lines)
        with open(args.calibration, "w") as f:
            f.write("\n".join(lines) + "\n")

    with open(os.path.join(args.out_dir, "config.json")) as f:
        saved = json.load(f)
    print(
        f"wrote {args.out_dir}: {sum(p.numel() for p in model.parameters())} params, "
        f"tied={saved.get('tie_word_embeddings')}, tokenizer ids={len(tok)}, eos={eos_id}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
