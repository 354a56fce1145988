"""An independent NumPy Qwen3 (float64) and a writer of random checkpoints in the Hugging Face
layout, for the engine's tests. Written from the model's definition (shared/reference/qwen3.md),
not from the engine's code."""
from __future__ import annotations

import json
import os

import numpy as np

TINY = dict(vocab_size=384, hidden_size=96, intermediate_size=160, num_hidden_layers=2, num_attention_heads=4,
            num_key_value_heads=2, head_dim=16, rms_norm_eps=1e-6, rope_theta=10000.0,
            max_position_embeddings=512, tie_word_embeddings=False)


def config_json(cfg: dict, dtype: str = "float32") -> dict:
    """config.json as a Qwen3 checkpoint on the Hub writes it."""
    return {"architectures": ["Qwen3ForCausalLM"], "attention_bias": False, "attention_dropout": 0.0,
            "bos_token_id": 0, "eos_token_id": 1, "hidden_act": "silu", "initializer_range": 0.02,
            "max_window_layers": cfg["num_hidden_layers"], "model_type": "qwen3", "rope_scaling": None,
            "sliding_window": None, "torch_dtype": dtype, "use_cache": True, "use_sliding_window": False, **cfg}


def random_tensors(cfg: dict, seed: int) -> dict[str, np.ndarray]:
    """Weights named as in a checkpoint ([out, in]), scaled so that logits are well separated."""
    rng = np.random.default_rng(seed)
    h, i, d, v = cfg["hidden_size"], cfg["intermediate_size"], cfg["head_dim"], cfg["vocab_size"]
    nq, nkv = cfg["num_attention_heads"], cfg["num_key_value_heads"]

    def mat(o, n):
        return (rng.standard_normal((o, n)) / np.sqrt(n)).astype(np.float32)

    def norm(n):
        return (1.0 + 0.2 * rng.standard_normal(n)).astype(np.float32)
    # a tied head scores the current token's own row highest unless the table is small against
    # the residual stream's other contributions; 0.1 keeps greedy runs from repeating one token
    emb = 0.1 if cfg["tie_word_embeddings"] else 1.0
    t = {"model.embed_tokens.weight": (emb * rng.standard_normal((v, h))).astype(np.float32),
         "model.norm.weight": norm(h)}
    if not cfg["tie_word_embeddings"]:
        t["lm_head.weight"] = mat(v, h) * 4
    for n in range(cfg["num_hidden_layers"]):
        p = f"model.layers.{n}."
        t.update({p + "input_layernorm.weight": norm(h), p + "post_attention_layernorm.weight": norm(h),
                  p + "self_attn.q_proj.weight": mat(nq * d, h), p + "self_attn.k_proj.weight": mat(nkv * d, h),
                  p + "self_attn.v_proj.weight": mat(nkv * d, h), p + "self_attn.o_proj.weight": mat(h, nq * d),
                  p + "self_attn.q_norm.weight": norm(d), p + "self_attn.k_norm.weight": norm(d),
                  p + "mlp.gate_proj.weight": mat(i, h), p + "mlp.up_proj.weight": mat(i, h),
                  p + "mlp.down_proj.weight": mat(h, i)})
    return t


def write_checkpoint(path: str, cfg: dict, tensors: dict[str, np.ndarray], shards: int = 1,
                     dtype: str = "float32") -> None:
    """config.json plus ``shards`` safetensors files (with model.safetensors.index.json when sharded)."""
    import torch
    from safetensors.torch import save_file
    os.makedirs(path, exist_ok=True)
    with open(os.path.join(path, "config.json"), "w") as f:
        json.dump(config_json(cfg, dtype), f, indent=2)
    names = sorted(tensors)
    tdt = getattr(torch, dtype)
    if shards == 1:
        save_file({n: torch.from_numpy(tensors[n]).to(tdt) for n in names}, os.path.join(path, "model.safetensors"),
                  metadata={"format": "pt"})
        return
    weight_map = {}
    for s in range(shards):
        fname = f"model-{s + 1:05d}-of-{shards:05d}.safetensors"
        part = names[s::shards]
        save_file({n: torch.from_numpy(tensors[n]).to(tdt) for n in part}, os.path.join(path, fname),
                  metadata={"format": "pt"})
        weight_map.update({n: fname for n in part})
    with open(os.path.join(path, "model.safetensors.index.json"), "w") as f:
        json.dump({"metadata": {"total_size": 0}, "weight_map": weight_map}, f, indent=2)


def _rms(x, w, eps):
    return x / np.sqrt((x * x).mean(-1, keepdims=True) + eps) * w


def forward(cfg: dict, t: dict[str, np.ndarray], ids) -> np.ndarray:
    """Logits (float64) for every position of ``ids``: the whole causal forward pass."""
    w = {k: v.astype(np.float64) for k, v in t.items()}
    d = cfg["head_dim"]
    nq, nkv, eps = cfg["num_attention_heads"], cfg["num_key_value_heads"], cfg["rms_norm_eps"]
    n = len(ids)
    x = w["model.embed_tokens.weight"][np.asarray(ids)]
    inv = 1.0 / cfg["rope_theta"] ** (np.arange(0, d, 2) / d)
    ang = np.arange(n)[:, None] * inv[None, :]
    cos, sin = np.cos(np.concatenate([ang, ang], 1)), np.sin(np.concatenate([ang, ang], 1))

    def rope(z):  # z: [heads, n, d]
        rot = np.concatenate([-z[..., d // 2:], z[..., :d // 2]], -1)
        return z * cos + rot * sin
    mask = np.triu(np.full((n, n), -np.inf), 1)
    for layer in range(cfg["num_hidden_layers"]):
        p = f"model.layers.{layer}."
        a = _rms(x, w[p + "input_layernorm.weight"], eps)
        q = (a @ w[p + "self_attn.q_proj.weight"].T).reshape(n, nq, d).transpose(1, 0, 2)
        k = (a @ w[p + "self_attn.k_proj.weight"].T).reshape(n, nkv, d).transpose(1, 0, 2)
        v = (a @ w[p + "self_attn.v_proj.weight"].T).reshape(n, nkv, d).transpose(1, 0, 2)
        q = rope(_rms(q, w[p + "self_attn.q_norm.weight"], eps))
        k = rope(_rms(k, w[p + "self_attn.k_norm.weight"], eps))
        k, v = np.repeat(k, nq // nkv, 0), np.repeat(v, nq // nkv, 0)
        s = q @ k.transpose(0, 2, 1) / np.sqrt(d) + mask
        s = np.exp(s - s.max(-1, keepdims=True))
        o = (s / s.sum(-1, keepdims=True)) @ v
        x = x + o.transpose(1, 0, 2).reshape(n, nq * d) @ w[p + "self_attn.o_proj.weight"].T
        a = _rms(x, w[p + "post_attention_layernorm.weight"], eps)
        g = a @ w[p + "mlp.gate_proj.weight"].T
        x = x + (g / (1 + np.exp(-g)) * (a @ w[p + "mlp.up_proj.weight"].T)) @ w[p + "mlp.down_proj.weight"].T
    head = w["model.embed_tokens.weight"] if cfg["tie_word_embeddings"] else w["lm_head.weight"]
    return _rms(x, w["model.norm.weight"], eps) @ head.T


def greedy(cfg: dict, t: dict[str, np.ndarray], ids, steps: int) -> list[int]:
    """Greedy continuation, recomputing the whole prefix each step (slow, obviously right)."""
    seq = list(ids)
    out = []
    for _ in range(steps):
        nxt = int(np.argmax(forward(cfg, t, seq)[-1]))
        out.append(nxt)
        seq.append(nxt)
    return out
