#!/usr/bin/env python3
"""Writes a random-weight, Qwen3-1.7B-shaped GGUF (F16) for timing llama.cpp beside
`edgeplan bench` on the same host: 28 layers, hidden 2048, FFN 6144, 16 query and 8 KV
heads of 128, vocabulary 151936 with tied embeddings, and no tokenizer (llama-bench draws
random token ids). Quantize it with llama.cpp's `llama-quantize OUT.gguf Q4_0.gguf Q4_0`.

Usage: python3 scripts/random-qwen3-gguf.py LLAMA_CPP_DIR OUT.gguf
(LLAMA_CPP_DIR is a llama.cpp source tree: its gguf-py package writes the file; numpy needed.)
About 3.4 GB on disk; values are N(0, 0.02) from a fixed seed, norms are ones."""
import os
import sys

import numpy as np

if len(sys.argv) != 3:
    sys.exit(__doc__)
sys.path.insert(0, os.path.join(sys.argv[1], "gguf-py"))
import gguf  # noqa: E402

HIDDEN, LAYERS, FFN, HEADS, KV_HEADS, HEAD_DIM, VOCAB = 2048, 28, 6144, 16, 8, 128, 151936

rng = np.random.default_rng(0)


def matrix(rows, cols):
    return (rng.standard_normal((rows, cols), dtype=np.float32) * 0.02).astype(np.float16)


def ones(n):
    return np.ones(n, dtype=np.float32)


w = gguf.GGUFWriter(sys.argv[2], "qwen3")
w.add_context_length(40960)
w.add_embedding_length(HIDDEN)
w.add_block_count(LAYERS)
w.add_feed_forward_length(FFN)
w.add_head_count(HEADS)
w.add_head_count_kv(KV_HEADS)
w.add_key_length(HEAD_DIM)
w.add_value_length(HEAD_DIM)
w.add_rope_freq_base(1e6)
w.add_layer_norm_rms_eps(1e-6)
w.add_file_type(gguf.LlamaFileType.MOSTLY_F16)
w.add_tokenizer_model("no_vocab")
w.add_vocab_size(VOCAB)
w.add_tensor("token_embd.weight", matrix(VOCAB, HIDDEN))
w.add_tensor("output_norm.weight", ones(HIDDEN))
for i in range(LAYERS):
    p = f"blk.{i}."
    w.add_tensor(p + "attn_norm.weight", ones(HIDDEN))
    w.add_tensor(p + "ffn_norm.weight", ones(HIDDEN))
    w.add_tensor(p + "attn_q_norm.weight", ones(HEAD_DIM))
    w.add_tensor(p + "attn_k_norm.weight", ones(HEAD_DIM))
    w.add_tensor(p + "attn_q.weight", matrix(HEADS * HEAD_DIM, HIDDEN))
    w.add_tensor(p + "attn_k.weight", matrix(KV_HEADS * HEAD_DIM, HIDDEN))
    w.add_tensor(p + "attn_v.weight", matrix(KV_HEADS * HEAD_DIM, HIDDEN))
    w.add_tensor(p + "attn_output.weight", matrix(HIDDEN, HEADS * HEAD_DIM))
    w.add_tensor(p + "ffn_gate.weight", matrix(FFN, HIDDEN))
    w.add_tensor(p + "ffn_up.weight", matrix(FFN, HIDDEN))
    w.add_tensor(p + "ffn_down.weight", matrix(HIDDEN, FFN))
w.write_header_to_file()
w.write_kv_data_to_file()
w.write_tensors_to_file()
w.close()
