"""Tiled matrix multiply with a K loop of ct.mma, on arrays whose sizes are not multiples
of the tile (partial tiles are zero-padded on load and clipped on store).

Run: python examples/gemm.py
"""
import numpy as np

import safetile as ct


@ct.kernel
def gemm(A, B, C, tm: ct.Constant[int], tn: ct.Constant[int], tk: ct.Constant[int]):
    bx, by = ct.bid(0), ct.bid(1)
    acc = ct.full((tm, tn), 0, dtype=ct.float32)
    for k in range(ct.num_tiles(A, axis=1, shape=(tm, tk))):
        a = ct.load(A, index=(bx, k), shape=(tm, tk), padding_mode=ct.PaddingMode.ZERO)
        b = ct.load(B, index=(k, by), shape=(tk, tn), padding_mode=ct.PaddingMode.ZERO)
        acc = ct.mma(a, b, acc)
    ct.store(C, index=(bx, by), tile=acc.astype(C.dtype))


def main() -> None:
    rng = np.random.default_rng()
    m, n, k = 300, 200, 130
    A = rng.standard_normal((m, k)).astype(np.float16)
    B = rng.standard_normal((k, n)).astype(np.float16)
    C = np.full((m, n), np.nan, dtype=np.float32)
    ct.launch(None, (ct.cdiv(m, 64), ct.cdiv(n, 64)), gemm, (A, B, C, 64, 64, 32))
    ref = A.astype(np.float64) @ B.astype(np.float64)
    rel = np.linalg.norm(C - ref) / np.linalg.norm(ref)
    print(f"gemm {m}x{n}x{k} float16 -> float32: relative error {rel:.2e}")
    assert rel < 1e-5


if __name__ == "__main__":
    main()
