"""A toy multi-layer model captured once as a graph and replayed per batch of tokens.

Each layer is ``h = relu(h @ W + b)`` over T tokens, as one safe-style launch writing a
partitioned output buffer. The layers ping-pong between two activation buffers, so the
whole forward pass touches fixed memory: it is captured once (``.graph()``) and
replayed for every new batch; the input buffer is refreshed with ``ct.memcpy`` before
each replay. Reports tokens per second for eager execution and graph replay.
"""
from __future__ import annotations

import time

import numpy as np

import safetile as ct


@ct.entry
def dense_relu(out: ct.Mut[ct.f32, ("BT", "D")], h: ct.Ref[ct.f32, (-1, "D")], w: ct.Ref[ct.f32, ("D", "D")],
               bias: ct.Ref[ct.f32, ("D",)]):
    x = ct.load_tile_like(h, out)
    y = ct.matmul(x, w.load()) + bias.load().reshape((1, D))  # noqa: F821 - generic
    out.store(ct.maximum(y, 0.0))


def make_weights(layers, d, seed=0):
    ws = []
    for i in range(layers):
        w = ct.randn((d, d), seed=seed + 2 * i).sync()
        w = ct.from_numpy(w.to_numpy() / np.sqrt(d), dtype=ct.f32).sync().shared()
        b = ct.rand(d, seed=seed + 2 * i + 1).sync().shared()
        ws.append((w, b))
    return ws


def forward(a, b, weights, bt):
    """A DeviceOp running every layer: input in ``a``; returns (output tensor, spare buffer)."""
    d = weights[0][0].shape[0]
    op = ct.value((a, b))
    for w, bias in weights:
        def layer(bufs, w=w, bias=bias):
            src, dst = bufs
            return dense_relu(dst.partition((bt, d)), src, w, bias).map(lambda r: (r[0].unpartition(), r[1]))
        op = op.then(layer)
    return op


def reference(x, weights):
    h = x.astype(np.float64)
    for w, b in weights:
        h = np.maximum(h @ w.to_numpy().astype(np.float64) + b.to_numpy(), 0.0)
    return h


class ToyModel:
    """Owns the activation buffers and the captured graph."""

    def __init__(self, layers=8, tokens=32, d=64, bt=16, seed=0):
        self.weights = make_weights(layers, d, seed)
        self.tokens, self.d, self.bt = tokens, d, bt
        a = ct.zeros((tokens, d)).sync()
        b = ct.zeros((tokens, d)).sync()
        self.graph = forward(a, b, self.weights, bt).graph()
        self.input = a  # the graph's input buffer (given back after capture)

    def __call__(self, x: np.ndarray) -> np.ndarray:
        self.input = ct.memcpy(self.input, x.astype(np.float32)).sync()
        out, _ = self.graph.launch()
        return out.to_numpy()


def tokens_per_second(layers=8, tokens=32, d=64, steps=50):
    model = ToyModel(layers, tokens, d)
    rng = np.random.default_rng(1)
    batches = [rng.standard_normal((tokens, d)).astype(np.float32) for _ in range(steps)]
    model(batches[0])  # warm-up
    t0 = time.perf_counter()
    for x in batches:
        model(x)
    replay = tokens * steps / (time.perf_counter() - t0)
    a, b = ct.zeros((tokens, d)).sync(), ct.zeros((tokens, d)).sync()
    t0 = time.perf_counter()
    for x in batches:
        a = ct.memcpy(a, x).sync()
        a, b = forward(a, b, model.weights, model.bt).sync()
    eager = tokens * steps / (time.perf_counter() - t0)
    return replay, eager, model.graph.num_ops


def main():
    replay, eager, n = tokens_per_second()
    print(f"toy model, {n} launches per forward: graph replay {replay:,.0f} tokens/s, eager {eager:,.0f} tokens/s")


if __name__ == "__main__":
    main()
