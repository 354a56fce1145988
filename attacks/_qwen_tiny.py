"""A tiny random Qwen3 for the model attacks (HF tensor names)."""
from _common import *
from safetile.models import qwen3


def tiny(max_seq_len=64, seed=0, tied=False):
    cfg = qwen3.Qwen3Config(vocab_size=512, hidden_size=64, intermediate_size=128, num_hidden_layers=1,
                            num_attention_heads=2, num_key_value_heads=1, head_dim=32,
                            max_position_embeddings=128, tie_word_embeddings=tied, torch_dtype="float32")
    rng = np.random.default_rng(seed)
    H, I, V, D = 64, 128, 512, 32
    w = lambda *s: (rng.standard_normal(s) * 0.05).astype(np.float32)  # noqa: E731
    t = {"model.embed_tokens.weight": w(V, H), "model.norm.weight": np.ones(H, np.float32)}
    if not tied:
        t["lm_head.weight"] = w(V, H)
    p = "model.layers.0."
    t[p + "self_attn.q_proj.weight"] = w(2 * D, H)
    t[p + "self_attn.k_proj.weight"] = w(D, H)
    t[p + "self_attn.v_proj.weight"] = w(D, H)
    t[p + "self_attn.o_proj.weight"] = w(H, 2 * D)
    t[p + "self_attn.q_norm.weight"] = np.ones(D, np.float32)
    t[p + "self_attn.k_norm.weight"] = np.ones(D, np.float32)
    t[p + "input_layernorm.weight"] = np.ones(H, np.float32)
    t[p + "post_attention_layernorm.weight"] = np.ones(H, np.float32)
    t[p + "mlp.gate_proj.weight"] = w(I, H)
    t[p + "mlp.up_proj.weight"] = w(I, H)
    t[p + "mlp.down_proj.weight"] = w(H, I)
    return qwen3.from_weights(cfg, t, device="cpu", max_seq_len=max_seq_len), t
