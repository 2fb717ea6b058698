#!/usr/bin/env python3
"""Re-computes, independently of edgeplan's Rust code, the figures docs/memory.md's formulas
give for every config in fixtures/models/real (configs cut to the keys edgeplan reads) and
fixtures/models/real-full (complete, unmodified configs), and writes each folder's
manifest.toml (checked by tests/memory.rs). A config the formulas do not cover is listed as
[[refused]] with the words edgeplan's error must contain. Run from anywhere:
python3 scripts/hand_memory.py"""
import glob, json, math, os

MODELS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fixtures", "models")

class Refused(Exception):
    """The config is outside the formulas; the message is what edgeplan's error says."""
D = {  # transformers class defaults (same table as docs/memory.md)
 "llama": dict(tie=False), "mistral": dict(tie=False, sliding_window=4096), "mixtral": dict(tie=False),
 "qwen2": dict(tie=False), "qwen2_moe": dict(tie=False), "qwen3": dict(tie=False), "qwen3_moe": dict(tie=False),
 "gemma": dict(tie=True), "gemma2": dict(tie=True), "gemma3_text": dict(tie=True, pattern=6),
 "phi3": dict(tie=False), "starcoder2": dict(tie=True),
 "deepseek_v2": dict(tie=False),  # not in edgeplan's table: read as it stands, untied
 "smollm3": dict(tie=True), "phi": dict(tie=False), "gpt2": dict(tie=True, ffn_mult=4),
 "chatglm": dict(tie=False), "gpt_oss": dict(tie=False, sliding_window=128),
}
ALIASES = {  # the family's own key names (the config class's attribute_map / __init__ names)
 "gpt2": dict(n_embd="hidden_size", n_layer="num_hidden_layers", n_head="num_attention_heads",
              n_inner="intermediate_size", n_positions="max_position_embeddings"),
 "chatglm": dict(num_layers="num_hidden_layers", ffn_hidden_size="intermediate_size",
                 padded_vocab_size="vocab_size", seq_length="max_position_embeddings", kv_channels="head_dim"),
}
SAME_FAMILY = {"qwen2_5_vl": "qwen2", "qwen2_vl": "qwen2"}
NOT_GATED = {"starcoder2", "phi", "gpt2"}
def shape(cfg):
    if "text_config" in cfg:
        t = dict(cfg["text_config"]); mt = t.get("model_type")
        if mt == "llama":  # LlamaConfig defaults under llava's text_config
            for k, v in dict(hidden_size=4096, intermediate_size=11008, num_hidden_layers=32, num_attention_heads=32).items():
                t.setdefault(k, v)
        if "tie_word_embeddings" not in t and "tie_word_embeddings" in cfg: t["tie_word_embeddings"] = cfg["tie_word_embeddings"]
        cfg = t
    mt = cfg.get("model_type")
    if mt == "chatglm" and "inner_hidden_size" in cfg:
        raise Refused("with inner_hidden_size is the first ChatGLM-6B, which is not supported")
    if mt not in D and mt not in SAME_FAMILY:
        foreign = [k for k in ("n_embd", "n_layer", "n_head") if k in cfg]
        raise Refused(f"it names its shape with {', '.join(chr(34) + k + chr(34) for k in foreign)}")
    mt = SAME_FAMILY.get(mt, mt); d = D[mt]
    cfg = dict(cfg)
    for alias, canon in ALIASES.get(mt, {}).items():
        if cfg.get(alias) is not None: cfg[canon] = cfg[alias]
    if cfg.get("intermediate_size") is None: cfg["intermediate_size"] = d["ffn_mult"] * cfg["hidden_size"]
    if mt == "chatglm":
        cfg["num_key_value_heads"] = cfg.get("multi_query_group_num", 1) if cfg.get("multi_query_attention") else cfg["num_attention_heads"]
    h = cfg["hidden_size"]; i = cfg["intermediate_size"]; L = cfg["num_hidden_layers"]; nq = cfg["num_attention_heads"]
    nkv = cfg.get("num_key_value_heads") or nq; hd = cfg.get("head_dim") or h // nq; V = cfg["vocab_size"]
    tie = cfg.get("tie_word_embeddings", d["tie"])
    sw = cfg.get("sliding_window", d.get("sliding_window"))
    if cfg.get("layer_types"):
        kinds = ["s" if t == "sliding_attention" else "f" for t in cfg["layer_types"]]
    elif mt in ("gemma2", "gpt_oss"): kinds = ["s" if (j+1) % 2 else "f" for j in range(L)]
    elif mt == "gemma3_text":
        p = cfg.get("sliding_window_pattern", d["pattern"]); kinds = ["s" if (j+1) % p else "f" for j in range(L)]
    elif mt.startswith("qwen"):
        kinds = ["s" if (cfg.get("use_sliding_window") and sw and j >= cfg.get("max_window_layers", 28)) else "f" for j in range(L)]
    else: kinds = ["s" if sw else "f"] * L
    if "s" not in kinds: sw = None
    gated = mt not in NOT_GATED
    attn = 2*nq*hd*h + 2*nkv*hd*h
    if "kv_lora_rank" in cfg:  # latent attention: q, kv_a, kv_b, o; the cache holds the latent
        r, nope, rope, v = cfg["kv_lora_rank"], cfg["qk_nope_head_dim"], cfg["qk_rope_head_dim"], cfg["v_head_dim"]
        q = h*nq*(nope+rope) if not cfg.get("q_lora_rank") else h*cfg["q_lora_rank"] + cfg["q_lora_rank"]*nq*(nope+rope)
        attn = q + h*(r+rope) + r*nq*(nope+v) + nq*v*h
        kv_per = (r+rope)*2
    else:
        kv_per = 2*nkv*hd*2
    mlp = lambda w: (3 if gated else 2) * w * h
    E = cfg.get("num_experts") or cfg.get("num_local_experts") or cfg.get("n_routed_experts") or 0
    if E > 1:
        k = cfg["num_experts_per_tok"]; ei = cfg.get("moe_intermediate_size", i)
        gate = "shared_expert_intermediate_size" in cfg
        si = cfg["shared_expert_intermediate_size"] if gate else cfg.get("n_shared_experts", 0)*ei
        step = cfg.get("decoder_sparse_step", 1); only = cfg.get("mlp_only_layers", [])
        freq = cfg.get("moe_layer_freq", 1); first = cfg.get("first_k_dense_replace", 0)
        S = sum(1 for j in range(L) if j not in only and (j+1) % step == 0 and j % freq == 0 and j >= first)
        shared = mlp(si) if si else 0
        lin = attn*L + mlp(i)*(L-S) + (E*mlp(ei) + shared)*S
        router = (E*h + (h if gate and si else 0))*S
        active = attn*L + mlp(i)*(L-S) + (k*mlp(ei)+shared)*S + router + V*h
    else:
        lin = (attn + mlp(i))*L; router = 0; active = None
    limit = cfg.get("max_position_embeddings")
    rope = cfg.get("rope_scaling") or {}
    if rope.get("rope_type", rope.get("type")) in ("yarn", "dynamic") and limit:
        # yarn: original x factor when longer (DeepSeek 4096 x 40 and gpt-oss 4096 x 32 equal their own)
        limit = max(limit, int(rope.get("original_max_position_embeddings", limit) * rope.get("factor", 1)))
    return dict(h=h, L=L, V=V, tie=tie, kv_per=kv_per, kinds=kinds, sw=sw, lin=lin, router=router, active=active,
                limit=limit)
def weights(s, bits):
    q = lambda p: math.ceil(p*bits/8)
    emb = s["V"]*s["h"]*2; norms = (2*s["L"]+1)*s["h"]*2
    head = q(s["V"]*s["h"]) if bits < 16 else (0 if s["tie"] else s["V"]*s["h"]*2)
    return q(s["lin"]) + emb + head + norms + s["router"]*2
def kv(s, N):
    per = s["kv_per"]
    return sum(per*(N if k == "f" else min(N, s["sw"])) for k in s["kinds"])
def engine(s, N, B, T):
    per = s["kv_per"]
    F = s["kinds"].count("f"); S = s["kinds"].count("s")
    kinds = []
    if F: kinds.append((F, -(-N//B)*B))
    if S: kinds.append((S, (-(-min(s["sw"]-1+T, N)//B)+1)*B))
    lo = min(c for c, _ in kinds); hi = max(c for c, _ in kinds)
    g = hi if hi < lo*1.25 else lo
    return sum(-(-c//g)*g*t*per for c, t in kinds)
def manifest(folder, header):
    path = os.path.join(MODELS, folder)
    names = sorted(os.path.basename(f)[:-5] for f in glob.glob(os.path.join(path, "*.json")))
    out = header + [""]
    refused = []
    for name in names:
        try:
            s = shape(json.load(open(os.path.join(path, f"{name}.json"))))
        except Refused as why:
            refused += ["[[refused]]", f'file = "{name}.json"', f"error = {json.dumps(str(why))}", ""]
            continue
        out += [f'[[model]]', f'file = "{name}.json"',
                f'weights_4bit = {weights(s, 4.25)}', f'weights_bf16 = {weights(s, 16)}',
                f'kv_4k = {kv(s, 4096)}', f'kv_32k = {kv(s, 32768)}',
                f'kv_engine_32k_h100 = {engine(s, 32768, 16, 8192)}',
                f'layers = [{s["kinds"].count("f")}, {s["kinds"].count("s")}]']
        if s["active"] is not None: out.append(f'active_params_per_token = {s["active"]}')
        if s["limit"]: out.append(f'context_limit = {s["limit"]}')
        out.append("")
    open(os.path.join(path, "manifest.toml"), "w").write("\n".join(out + refused))

FIGURES = ["# formulas (scripts/hand_memory.py, an independent re-computation): weights on the 4-bit path",
           "# (4.25 bits per weight) and on bf16, KV by layer type at 4k and 32k tokens (bf16, one sequence),",
           "# and vLLM's allocation at 32k on an 80 GiB H100 (16-token blocks, 8192-token prefill chunk).",
           "# tests/memory.rs checks every entry against `edgeplan plan --format json`."]
manifest("real", ["# Expected figures for fixtures/models/real/*.json, computed by hand from docs/memory.md's"] + FIGURES)
manifest("real-full", ["# Expected figures for fixtures/models/real-full/*.json (complete, unmodified configs), computed",
                       "# by hand from docs/memory.md's"] + FIGURES +
         ["# A [[refused]] config is outside the formulas: edgeplan must exit 65 with `error` in its message."])
