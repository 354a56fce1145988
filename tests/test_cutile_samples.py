"""NVIDIA's cuTile Python samples, unchanged (tests/cutile_samples/), run by safetile.

Each sample is imported with ``cuda.tile`` aliased to safetile; its kernels are launched the
way its host function launches them (same grid, same tile sizes where the CPU allows) on CPU
torch tensors with fresh random data, and every output is compared with a torch reference.
The samples' host functions need CUDA tensors; tests/test_compat_gpu.py calls them on the GPU.
A few small launches also run on the Triton backend in Triton's interpreter.
"""
from __future__ import annotations

import math

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import safetile as ct  # noqa: E402
from cutile_alias import load_sample  # noqa: E402
from triton_interp import triton_interpreter  # noqa: E402

F = torch.nn.functional


def poisoned(*shape, dtype=torch.float32):
    return torch.full(shape, float("nan") if dtype.is_floating_point else -7).to(dtype)


def tf32(t):
    """float32 values rounded to tfloat32 (the MatMul sample multiplies float32 as tfloat32)."""
    return torch.from_numpy(ct.dtypes.round_tf32(t.numpy()))


def gen():
    return torch.Generator().manual_seed(int(np.random.SeedSequence().entropy % 2**31))


# ------------------------------------------------------------------------------ vector add

@pytest.mark.parametrize("n", [1, 1000, 4096])
def test_vector_addition(n):
    m = load_sample("VectorAddition")
    g = gen()
    a, b = torch.randn(n, generator=g), torch.randn(n, generator=g)
    for kernel in (m.vec_add_kernel_1d, m.vec_add_kernel_1d_gather):
        c = poisoned(n)
        ct.launch(None, (math.ceil(n / 256),), kernel, (a, b, c, 256))
        torch.testing.assert_close(c, a + b)
    a2, b2 = torch.randn(37, 70, generator=g), torch.randn(37, 70, generator=g)
    for kernel in (m.vec_add_kernel_2d, m.vec_add_kernel_2d_gather):
        c2 = poisoned(37, 70)
        ct.launch(None, (math.ceil(37 / 16), math.ceil(70 / 32)), kernel, (a2, b2, c2, 16, 32))
        torch.testing.assert_close(c2, a2 + b2)


# ------------------------------------------------------------------------------ matmul

@pytest.mark.parametrize("dtype,tiles", [(torch.float32, (32, 32, 32)), (torch.float16, (64, 128, 32))])
def test_matmul(dtype, tiles):
    m = load_sample("MatMul")
    g = gen()
    A = torch.randn(100, 70, generator=g).to(dtype)
    B = torch.randn(70, 150, generator=g).to(dtype)
    tm, tn, tk = tiles
    ref = ((tf32(A) if dtype == torch.float32 else A).double() @
           (tf32(B) if dtype == torch.float32 else B).double()).to(dtype)
    tol = dict(atol=2e-2, rtol=2e-2) if dtype == torch.float16 else dict(atol=1e-3, rtol=1e-3)
    grid = math.ceil(100 / tm) * math.ceil(150 / tn)
    C = poisoned(100, 150, dtype=dtype)
    ct.launch(None, (grid, 1, 1), m.matmul_kernel, (A, B, C, tm, tn, tk))
    torch.testing.assert_close(C, ref, **tol)
    C = poisoned(100, 150, dtype=dtype)
    ct.launch(None, (min(3, grid), 1, 1), m.persistent_matmul_kernel, (A, B, C, tm, tn, tk))
    torch.testing.assert_close(C, ref, **tol)


def test_batch_matmul_float16_and_float8():
    m = load_sample("BatchMatMul")
    g = gen()
    A = torch.randn(3, 64, 96, generator=g, dtype=torch.float16)
    B = torch.randn(3, 96, 80, generator=g, dtype=torch.float16)
    C = poisoned(3, 64, 80, dtype=torch.float16)
    ct.launch(None, (3, 1, 1), m.batch_matmul_kernel, (A, B, C, 128, 256, 128))  # the sample's tiles
    torch.testing.assert_close(C, (A.float() @ B.float()).half(), atol=2e-2, rtol=2e-2)
    A8 = torch.randn(2, 64, 64, generator=g).to(torch.float8_e4m3fn)
    B8 = torch.randn(2, 64, 32, generator=g).to(torch.float8_e4m3fn)
    C32 = poisoned(2, 64, 32)
    ct.launch(None, (2, 1, 1), m.batch_matmul_kernel, (A8, B8, C32, 64, 32, 32))
    torch.testing.assert_close(C32, A8.float() @ B8.float(), atol=1e-3, rtol=1e-4)


def test_transpose():
    m = load_sample("Transpose")
    x = torch.randn(100, 70, generator=gen())
    y = poisoned(70, 100)
    ct.launch(None, (math.ceil(100 / 32), math.ceil(70 / 32)), m.transpose_kernel, (x, y, 32, 32))
    torch.testing.assert_close(y, x.T)


# ------------------------------------------------------------------------------ layer norm

def test_layer_norm_forward_and_backward():
    m = load_sample("LayerNorm")
    g = gen()
    M, N, eps = 8, 300, 1e-5
    x = torch.randn(M, N, generator=g)
    w, b = torch.randn(N, generator=g), torch.randn(N, generator=g)
    y, mean, rstd = poisoned(M, N), poisoned(M), poisoned(M)
    ct.launch(None, (M,), m.layer_norm_fwd, (x, w, b, y, mean, rstd, eps, 128))
    torch.testing.assert_close(y, F.layer_norm(x, (N,), w, b, eps), atol=1e-4, rtol=1e-4)
    torch.testing.assert_close(mean, x.mean(1))
    # backward: partial sums under a spin lock per group (atomic_cas / atomic_xchg), then a reduction
    xr, wr, br = (t.clone().requires_grad_() for t in (x, w, b))
    dy = torch.randn(M, N, generator=g)
    F.layer_norm(xr, (N,), wr, br, eps).backward(dy)
    G = 4
    dx, dw, db = poisoned(M, N), torch.zeros(G, N), torch.zeros(G, N)
    locks = torch.zeros(G, dtype=torch.int32)
    ct.launch(None, (M,), m.layer_norm_bwd_dx_partial_dwdb, (dx, dy, dw, db, x, w, mean, rstd, locks, 128))
    torch.testing.assert_close(dx, xr.grad, atol=1e-4, rtol=1e-4)
    assert (locks == 0).all()  # every lock released
    fw, fb = poisoned(N), poisoned(N)
    ct.launch(None, (math.ceil(N / 128),), m.layer_norm_bwd_dwdb, (dw, db, fw, fb, G, 128))
    torch.testing.assert_close(fw, wr.grad, atol=1e-4, rtol=1e-4)
    torch.testing.assert_close(fb, br.grad, atol=1e-4, rtol=1e-4)


# ------------------------------------------------------------------------------ attention

def fmha(m, Q, K, V, causal, tile=32, group=1):
    B, H, S, D = Q.shape
    out = poisoned(*Q.shape, dtype=Q.dtype)
    even_k = K.shape[2] % tile == 0
    ct.launch(None, (math.ceil(S / tile), B * H, 1), m.fmha_kernel,
              (Q, K, V, out, 1 / math.sqrt(D), 0, D, H, tile, tile, group, causal, even_k))
    return out


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("seq", [64, 80])
def test_attention(causal, seq):
    m = load_sample("AttentionFMHA")
    g = gen()
    Q, K, V = (torch.randn(1, 2, seq, 32, generator=g, dtype=torch.float16) for _ in range(3))
    out = fmha(m, Q, K, V, causal)
    ref = F.scaled_dot_product_attention(Q.float(), K.float(), V.float(), is_causal=causal)
    torch.testing.assert_close(out.float(), ref, atol=2e-3, rtol=2e-3)


def test_attention_grouped_query():
    m = load_sample("AttentionFMHA")
    g = gen()
    Q = torch.randn(1, 4, 64, 32, generator=g, dtype=torch.float16)
    K, V = (torch.randn(1, 2, 64, 32, generator=g, dtype=torch.float16) for _ in range(2))
    out = fmha(m, Q, K, V, False, group=2)
    ref = F.scaled_dot_product_attention(Q.float(), K.float(), V.float(), enable_gqa=True)
    torch.testing.assert_close(out.float(), ref, atol=2e-3, rtol=2e-3)


# ------------------------------------------------------------------------------ FFT

def test_fft():
    m = load_sample("FFT")
    g = gen()
    BS, N, D = 2, 64, 16
    x = torch.complex(torch.randn(BS, N, generator=g), torch.randn(BS, N, generator=g))
    W = m.make_twiddles((4, 4, 4), torch.float32, "cpu")
    packed = torch.view_as_real(x).reshape(BS, N * 2 // D, D).contiguous()
    y = poisoned(*packed.shape)
    ct.launch(None, (1,), m.fft_kernel, (packed, y, *W, N, 4, 4, 4, BS, D))
    torch.testing.assert_close(torch.view_as_complex(y.reshape(BS, N, 2)), torch.fft.fft(x), atol=1e-3, rtol=1e-3)


# ------------------------------------------------------------------------------ mixture of experts

def test_moe():
    m = load_sample("MoE")
    g = gen()
    tokens, hidden, experts, inter, topk, tile = 12, 64, 4, 32, 2, 16
    hs = torch.randn(tokens, hidden, generator=g) * 0.5
    w1 = torch.randn(experts, inter * 2, hidden, generator=g) * 0.1
    w2 = torch.randn(experts, hidden, inter, generator=g) * 0.1
    ids = torch.stack([torch.randperm(experts, generator=g)[:topk] for _ in range(tokens)])
    weights = torch.softmax(torch.randn(tokens, topk, generator=g), dim=-1)
    sorted_ids, expert_ids = m.moe_align_tile_size_torch(ids, tile, experts)

    def fused(A, B, C, mul, replicas):
        grid = (math.ceil(sorted_ids.shape[0] / tile) * math.ceil(B.shape[1] / tile),)
        ct.launch(None, grid, m.fused_moe_kernel, (A, B, C.view(-1, C.shape[2]), weights.view(-1), sorted_ids,
                                                    expert_ids, replicas, mul, tile, tile, tile))

    cache1 = torch.zeros(tokens, topk, inter * 2)
    fused(hs, w1, cache1, False, topk)
    cache2 = torch.zeros(tokens * topk, inter)
    ab = cache1.view(-1, inter * 2)
    a, b = ab.chunk(2, dim=-1)
    ct.launch(None, (ab.shape[0],), m.silu_and_mul_kernel, (a, b, cache2, m.next_power_of_2(inter)))
    cache3 = torch.zeros(tokens, topk, hidden)
    fused(cache2, w2, cache3, True, 1)
    torch.testing.assert_close(cache3.sum(1), m.torch_moe(hs, w1, w2, weights, ids), atol=1e-4, rtol=1e-3)


# ------------------------------------------------------------------------------ block-scaled matmul

@pytest.mark.parametrize("swizzled", [False, True])
def test_block_scaled_matmul(swizzled):
    m = load_sample("BlockScaledMatMul")
    g = gen()
    M = N = 128
    K, block = 256, 32
    A, A_scale = m.block_quantize(torch.rand(M, K, generator=g), block)
    B, B_scale = m.block_quantize(torch.rand(N, K, generator=g), block)
    B, B_scale = B.T, B_scale.T
    ref = (A.float() * A_scale.float().repeat_interleave(block, 1)) @ \
        (B.float() * B_scale.float().repeat_interleave(block, 0))
    if swizzled:
        A_scale, B_scale = m.swizzle_32_4_4(A_scale), m.swizzle_32_4_4(B_scale.T.contiguous())
    C = poisoned(M, N)
    ct.launch(None, (1, 1, 1), m.block_scaled_matmul_kernel, (A, A_scale, B, B_scale, C, 128, 128, 128, block))
    torch.testing.assert_close(C, ref, atol=1e-4, rtol=1e-3)


# ------------------------------------------------------------------------------ Triton backend

def test_samples_on_the_triton_backend():
    """Small launches of four samples on the Triton backend, in Triton's interpreter."""
    va, tr, mm, att = (load_sample(n) for n in ("VectorAddition", "Transpose", "MatMul", "AttentionFMHA"))
    g = gen()
    a, b = torch.randn(100, generator=g), torch.randn(100, generator=g)
    x = torch.randn(40, 24, generator=g)
    A, B = torch.randn(40, 24, generator=g), torch.randn(24, 48, generator=g)
    Q, K, V = (torch.randn(1, 1, 32, 16, generator=g, dtype=torch.float16) for _ in range(3))
    with triton_interpreter():
        c = poisoned(100)
        ct.launch(None, (4,), va.vec_add_kernel_1d_gather, (a, b, c, 32))
        torch.testing.assert_close(c, a + b)
        y = poisoned(24, 40)
        ct.launch(None, (3, 2), tr.transpose_kernel, (x, y, 16, 16))
        torch.testing.assert_close(y, x.T)
        C = poisoned(40, 48)
        ct.launch(None, (9, 1, 1), mm.matmul_kernel, (A, B, C, 16, 16, 16))
        torch.testing.assert_close(C, (tf32(A).double() @ tf32(B).double()).float(), atol=1e-4, rtol=1e-4)
        out = fmha(att, Q, K, V, True, tile=16)
    ref = F.scaled_dot_product_attention(Q.float(), K.float(), V.float(), is_causal=True)
    torch.testing.assert_close(out.float(), ref, atol=2e-3, rtol=2e-3)


# ------------------------------------------------------------------------------ GPU fit (compile only)

def test_sample_tiles_fit_an_h100_block(tmp_path, monkeypatch):
    """The batched-matmul sample's 128x256x128 float16 tiles need more shared memory than an
    H100 block has at Triton's default three pipeline stages (288 KiB): the Triton backend
    compiles such kernels again with fewer stages (and a failing num_ctas hint with one CTA).
    Compiled for sm_90 without a GPU."""
    pytest.importorskip("triton")
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    from safetile.backends.triton import cache, launcher as L
    from safetile.backends.triton.codegen import Facts, generate
    from safetile.runtime.args import arg_specs
    monkeypatch.setenv("SAFETILE_CACHE_DIR", str(tmp_path))
    bmm = load_sample("BatchMatMul")
    args = (torch.zeros(4, 512, 256, dtype=torch.float16), torch.zeros(4, 256, 1024, dtype=torch.float16),
            torch.zeros(4, 512, 1024, dtype=torch.float16), 128, 256, 128)
    fn = bmm.batch_matmul_kernel.specialize(arg_specs(bmm.batch_matmul_kernel, args))
    facts = Facts(tuple(L.array_facts(*L.array_parts(a)[:3]) for a in args[:3]), False, 90, True, True)
    jitfn, gen = cache.load("sm90-fit-test", lambda: generate(fn, facts))
    src = ASTSource(jitfn, dict(gen.signature), {}, dict(gen.attrs))
    compiled = L.compile_fitting(src, GPUTarget("cuda", 90, 32), L.compile_options(fn, gen, facts),
                                 shared_limit=232448)
    assert compiled.metadata.shared <= 232448
