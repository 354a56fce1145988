"""A plain-PyTorch Qwen3 (batch 1, static KV cache): the same-run peer of the safetile engine.

Written the way a careful PyTorch user would: stacked q/k/v and gate/up projections
(``F.linear``), RMSNorm in float32, RoPE from cached tables, the cache written in place with
``index_copy_`` at a position held in a device tensor, attention with
``scaled_dot_product_attention`` (GQA, a boolean mask over the cache), argmax on the device.
The decode step touches only static buffers, so it runs eagerly or captured once in a CUDA
graph (``TorchQwen3.graphed_step``) and replayed per token.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F


class TorchQwen3:
    def __init__(self, cfg, tensors: dict, device: str, dtype: torch.dtype, capacity: int):
        self.cfg, self.device, self.dtype, self.cap = cfg, device, dtype, capacity

        def w(name):
            return tensors[name].to(device=device, dtype=dtype)
        self.embed = w("model.embed_tokens.weight")
        self.head = self.embed if cfg.tie_word_embeddings else w("lm_head.weight")
        self.norm = w("model.norm.weight")
        self.layers = []
        for n in range(cfg.num_hidden_layers):
            p = f"model.layers.{n}."
            self.layers.append(dict(
                ln1=w(p + "input_layernorm.weight"), ln2=w(p + "post_attention_layernorm.weight"),
                qkv=torch.cat([w(p + "self_attn.q_proj.weight"), w(p + "self_attn.k_proj.weight"),
                               w(p + "self_attn.v_proj.weight")]),
                qn=w(p + "self_attn.q_norm.weight"), kn=w(p + "self_attn.k_norm.weight"),
                o=w(p + "self_attn.o_proj.weight"),
                gu=torch.cat([w(p + "mlp.gate_proj.weight"), w(p + "mlp.up_proj.weight")]),
                down=w(p + "mlp.down_proj.weight")))
        d = cfg.head_dim
        inv = 1.0 / (cfg.rope_theta ** (torch.arange(0, d, 2, dtype=torch.float32, device=device) / d))
        ang = torch.arange(capacity, dtype=torch.float32, device=device)[:, None] * inv[None, :]
        ang = torch.cat([ang, ang], -1)
        self.cos, self.sin = ang.cos().to(dtype), ang.sin().to(dtype)
        shape = (1, cfg.num_key_value_heads, capacity, d)
        self.kc = [torch.zeros(shape, device=device, dtype=dtype) for _ in range(cfg.num_hidden_layers)]
        self.vc = [torch.zeros(shape, device=device, dtype=dtype) for _ in range(cfg.num_hidden_layers)]
        self.tok = torch.zeros(1, dtype=torch.long, device=device)
        self.pos = torch.zeros(1, dtype=torch.long, device=device)
        self.keys = torch.arange(capacity, device=device)
        self._graph = None

    def _rms(self, x, w):
        xf = x.float()
        return w * (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + self.cfg.rms_norm_eps)).to(x.dtype)

    def _rope(self, x, cos, sin):  # x [1, heads, n, d]
        h = x.shape[-1] // 2
        return x * cos + torch.cat([-x[..., h:], x[..., :h]], -1) * sin

    def _forward(self, x, positions, attend):
        """x [n, H] at ``positions`` (a device tensor): every layer; ``attend(layer, q, k, v)`` writes
        the cache and returns the attention output."""
        cfg = self.cfg
        n, d = x.shape[0], cfg.head_dim
        cos, sin = self.cos[positions][None, None], self.sin[positions][None, None]
        for i, lw in enumerate(self.layers):
            qkv = F.linear(self._rms(x, lw["ln1"]), lw["qkv"])
            q, k, v = qkv.split([cfg.q_size, cfg.kv_size, cfg.kv_size], -1)
            q = self._rope(self._rms(q.view(n, -1, d), lw["qn"]).transpose(0, 1)[None], cos, sin)
            k = self._rope(self._rms(k.view(n, -1, d), lw["kn"]).transpose(0, 1)[None], cos, sin)
            v = v.view(n, -1, d).transpose(0, 1)[None]
            o = attend(i, q, k, v)
            x = x + F.linear(o[0].transpose(0, 1).reshape(n, -1), lw["o"])
            g, u = F.linear(self._rms(x, lw["ln2"]), lw["gu"]).chunk(2, -1)
            x = x + F.linear(F.silu(g) * u, lw["down"])
        return F.linear(self._rms(x[-1:], self.norm), self.head).float()

    @torch.no_grad()
    def prefill(self, ids: list[int]) -> torch.Tensor:
        """Logits after the prompt; fills the cache and sets the next token and position."""
        n = len(ids)
        pos = torch.arange(n, device=self.device)

        def attend(i, q, k, v):  # causal attention within the prompt (flash kernels)
            self.kc[i][:, :, :n] = k
            self.vc[i][:, :, :n] = v
            return F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
        logits = self._forward(self.embed[torch.tensor(ids, device=self.device)], pos, attend)
        self.tok.copy_(logits.argmax(-1))
        self.pos.fill_(n)
        return logits[0]

    @torch.no_grad()
    def step(self) -> None:
        """One decode step on the static buffers: token ``tok`` at ``pos`` → next ``tok``, pos + 1."""
        mask = (self.keys <= self.pos)[None, None, None]

        def attend(i, q, k, v):  # one query over the cache up to pos
            self.kc[i].index_copy_(2, self.pos, k)
            self.vc[i].index_copy_(2, self.pos, v)
            return F.scaled_dot_product_attention(q, self.kc[i], self.vc[i], attn_mask=mask, enable_gqa=True)
        self.logits = self._forward(self.embed[self.tok], self.pos, attend)
        self.tok.copy_(self.logits.argmax(-1))
        self.pos.add_(1)

    def graphed_step(self):
        """The decode step captured in a CUDA graph (capturing runs it: call before the prefill)."""
        if self._graph is None:
            s = torch.cuda.Stream()
            s.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(s):
                for _ in range(2):
                    self.step()
            torch.cuda.current_stream().wait_stream(s)
            self._graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(self._graph):
                self.step()
        return self._graph.replay

    def generate(self, ids: list[int], new: int, step=None) -> list[int]:
        step = step or self.step
        self.prefill(ids)
        out = [int(self.tok)]
        for _ in range(new - 1):
            step()
            out.append(int(self.tok))
        return out
