"""Session 16, call 5 (H200): NVIDIA's samples whose kernels loop over products (MoE, BlockScaledMatMul,
FFT, BatchMatMul with fp8) checked as in tests/test_compat_gpu.py, now that such grids are walked by
resident blocks; prints which launched kernels were compiled persistent. (Call 4's GPU tests ran out
of time at 96 % with no failure, before the long sample test that holds these.)

    PYTHONPATH=src:tests python bench/results/NVIDIA_H200/session16/call5/check_samples.py
"""
import torch

import safetile as ct
from cutile_alias import load_sample
from safetile.backends.triton.persistent import PersistentCall

g = torch.Generator(device="cuda").manual_seed(0)
results = []


def walked(module) -> list[str]:
    names = []
    for name in dir(module):
        k = getattr(module, name)
        for spec in getattr(k, "backend_cache", {}).values():
            for v in getattr(spec, "by_facts", {}).values():
                call = getattr(v, "call", None)
                inner = getattr(call, "inner", None)
                if isinstance(call, PersistentCall) or isinstance(inner, PersistentCall):
                    names.append(name)
    return sorted(set(names))


def check(name, fn):
    try:
        fn()
        results.append((name, "ok"))
    except Exception as e:  # noqa: BLE001 - report every sample
        results.append((name, f"FAILED {type(e).__name__}: {str(e)[:300]}"))


def moe():
    m = load_sample("MoE")
    hs = torch.randn(48, 512, device="cuda", generator=g, dtype=torch.bfloat16) * 0.5
    w1 = torch.randn(16, 1024, 512, device="cuda", generator=g, dtype=torch.bfloat16) * 0.1
    w2 = torch.randn(16, 512, 512, device="cuda", generator=g, dtype=torch.bfloat16) * 0.1
    ids = torch.stack([torch.randperm(16, device="cuda", generator=g)[:4] for _ in range(48)])
    wts = torch.softmax(torch.randn(48, 4, device="cuda", generator=g), -1).to(torch.bfloat16)
    got = m.cutile_moe(hs, w1, w2, wts, ids, tile_m=128, tile_n=128, tile_k=64)
    torch.testing.assert_close(got, m.torch_moe(hs, w1, w2, wts, ids), rtol=1e-1, atol=1e-1)
    print("MoE walked:", walked(m))


def block_scaled():
    bs = load_sample("BlockScaledMatMul")
    A, As = bs.block_quantize(torch.rand(512, 768, device="cuda", generator=g), 32)
    B, Bs = bs.block_quantize(torch.rand(512, 768, device="cuda", generator=g), 32)
    B, Bs = B.T, Bs.T
    ref = (A.float() * As.float().repeat_interleave(32, 1)) @ (B.float() * Bs.float().repeat_interleave(32, 0))
    for a_s, b_s in ((As, Bs), (bs.swizzle_32_4_4(As), bs.swizzle_32_4_4(Bs.T.contiguous()))):
        C = torch.full((512, 512), float("nan"), device="cuda")
        ct.launch(torch.cuda.current_stream(), (16, 1, 1), bs.block_scaled_matmul_kernel,
                  (A, a_s, B, b_s, C, 128, 128, 128, 32))
        torch.testing.assert_close(C, ref, atol=1e-3, rtol=1e-3)
    print("BlockScaledMatMul walked:", walked(bs))


def fft():
    f = load_sample("FFT")
    xc = torch.randn(8, 1024, device="cuda", generator=g, dtype=torch.complex64)
    torch.testing.assert_close(f.cutile_fft(xc, (16, 8, 8)), torch.fft.fft(xc), atol=1e-2, rtol=1e-3)
    print("FFT walked:", walked(f))


def bmm_fp8():
    bmm = load_sample("BatchMatMul")
    X = torch.randn(4, 512, 256, device="cuda", generator=g, dtype=torch.float16)
    Y = torch.randn(4, 256, 1024, device="cuda", generator=g, dtype=torch.float16)
    torch.testing.assert_close(bmm.bmm(X, Y, torch.float16), X @ Y, atol=5e-2, rtol=2e-2)
    X8, Y8 = X.to(torch.float8_e4m3fn), Y.to(torch.float8_e4m3fn)
    exact = X8.double() @ Y8.double()
    scale = X8.double().abs() @ Y8.double().abs()
    got = bmm.bmm(X8, Y8, torch.float32)
    assert bool(((got.double() - exact).abs() <= scale * 2.0 ** -8).all())
    mm = load_sample("MatMul")
    A = torch.randn(1000, 700, device="cuda", generator=g, dtype=torch.float16)
    B = torch.randn(700, 500, device="cuda", generator=g, dtype=torch.float16)
    torch.testing.assert_close(mm.cutile_matmul(A, B), A @ B, atol=5e-2, rtol=2e-2)
    torch.testing.assert_close(mm.cutile_matmul(A, B, persistent=True), A @ B, atol=5e-2, rtol=2e-2)
    print("BatchMatMul walked:", walked(bmm), "MatMul walked:", walked(mm))


for name, fn in (("MoE", moe), ("BlockScaledMatMul", block_scaled), ("FFT", fft), ("BatchMatMul+MatMul", bmm_fp8)):
    check(name, fn)
print("== samples with product loops, persistent grids on")
for name, r in results:
    print(f"{name:20s} {r}")
