"""Round-8 helpers: watchdog, verdict printers, a tiny kernel zoo, and a stubbed one-pass launcher.
A case prints a final line `HELD: ...`, `BROKE: ...`, `OUTSIDE: ...` or `INCONCLUSIVE: ...`."""
import os, sys, threading, warnings  # threading: the cases use it through `from _rN import *`
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from verdicts import broke, broken, held, inconclusive, is_st, outside, watchdog  # noqa: E402,F401
os.environ.setdefault("SAFETILE_CACHE_DIR", "off")
import numpy as np  # noqa
import torch  # noqa
import safetile as ct  # noqa
import safetile.safe.native as native  # noqa
from safetile.runtime import torch_facts  # noqa
warnings.simplefilter("ignore")
TIMEOUT = float(os.environ.get("ATTACK_TIMEOUT", "50"))


watchdog(TIMEOUT, "BROKE")


def err(e, n=120):
    return f"{type(e).__name__}{'' if is_st(e) else '(RAW)'}: {str(e)[:n]}"


def ensure_native():
    """Load the C++ torch fact reader and the safe launch's C twin (as a warm process has them)."""
    m = torch_facts.module(build=True)
    if os.environ.get("SAFETILE_SAFE_NATIVE", "1") not in ("0", "off", "false"):
        native.FAST.load(build=True)
    return m is not None, native.FAST.build is not None


def c_path_loaded():
    from safetile.safe import launch
    return type(ct.EntryKernel.__call__).__name__ == "method_descriptor" and \
        type(launch.LaunchOp._run).__name__ == "method_descriptor"


POISON = -7777.0


def poisoned(n):
    """A partitioned output filled with poison."""
    return ct.full(n, POISON).sync()


@ct.entry
def copyk(z: ct.Mut[ct.f32, "B"], x: ct.Ref[ct.f32, -1]):
    z.store(ct.load_tile_like(x, z))


@ct.entry
def fill1(z: ct.Mut[ct.f32, "B"], x: ct.Ref[ct.f32, -1]):
    z.store(ct.load_tile_like(x, z) + 1.0)


@ct.entry
def add2(z: ct.Mut[ct.f32, "B"], x: ct.Ref[ct.f32, -1], y: ct.Ref[ct.f32, -1]):
    z.store(ct.load_tile_like(x, z) + ct.load_tile_like(y, z))


@ct.kernel
def ucopy(x, z, TILE: ct.Constant[int]):
    b = ct.bid(0)
    ct.store(z, (b,), ct.load(x, (b,), (TILE,)))


def run_copy(x, n=64, tile=16, k=copyk):
    """One safe launch copying the raw Ref x into a poisoned output; returns the output (numpy)."""
    z = poisoned(n).partition(tile)
    (z, _) = k(z, x).sync()
    return z.unpartition().to_numpy()


class StubVariant:
    """A recording launcher for the one-pass path (as tests/test_launch_dispatch.py does)."""
    def __init__(self, name="V"):
        self.prefix = (name,)
        self.calls = []
        self.call = lambda *a: self.calls.append(a)


def stub_device(monkeypatch_like=None):
    """Make the one-pass path treat CPU tensors as 'current device' ones (-1)."""
    from safetile.backends.triton import launcher as L
    L._get_device = lambda: -1
    L._current_device = lambda: -1
    L._cuda_get_device = lambda: -1
    L._get_stream = lambda device: 77
    return L


def c_reader_fastpath(kernel):
    """A FastPath whose reader is the lean module's C Reader with the C++ torch fact reader."""
    from safetile.backends.triton import lean
    from safetile.backends.triton.fastpath import FastPath
    L = stub_device()
    m = torch_facts.module(build=True)
    if m is None:
        inconclusive("C++ torch fact reader could not be built")
    loader = lean.new_loader()
    if loader.get(build=True) is None:
        inconclusive("lean launcher module could not be built")
    lean._loader = loader
    return FastPath(kernel)


N_MUT = 64


def mutations():
    """(name, fn(x) -> None): in-place re-pointings of a float32 tensor of N_MUT elements that keep it a
    valid Ref for copyk (or turn it into something that must be refused)."""
    N = N_MUT

    def set_other(x):
        x.set_(torch.arange(N, dtype=torch.float32) + 100)

    def set_storage_offset(x):
        big = torch.arange(2 * N, dtype=torch.float32) + 200
        x.set_(big.untyped_storage(), N // 2, (N,), (1,))

    def data_assign(x):
        x.data = torch.arange(N, dtype=torch.float32) + 300

    def as_strided_(x):
        big = torch.arange(3 * N, dtype=torch.float32) + 400
        x.set_(big)
        x.as_strided_((N,), (2,), 1)

    def resize_grow(x):
        x.resize_(N * 4096)          # reallocates the storage: every view moves
        x[:N] = torch.arange(N, dtype=torch.float32) + 500

    def resize_shrink(x):
        x.resize_(N // 2)            # a shorter Ref: copyk reads past it -> padding or refusal

    def share_memory(x):
        x.share_memory_()
        x.add_(600)

    def dtype_view(x):
        x.data = x.view(torch.int32)  # same bytes, another dtype: must be refused (f32 Ref)

    def neg_bit(x):
        torch._C._set_neg(x, True)    # the lazy negative bit set in place: shows -x

    def neg_view_data(x):
        x.data = torch._neg_view(x.detach())

    def untyped_storage_swap(x):
        st = torch.UntypedStorage(N * 4)
        torch.tensor(np.arange(N, dtype=np.float32) + 700).untyped_storage()  # noise
        x.set_(st, 0, (N,), (1,))
        x.copy_(torch.arange(N, dtype=torch.float32) + 700)

    def requires_grad(x):
        x.requires_grad_(True)

    def transpose_like(x):
        x.set_(torch.arange(N, dtype=torch.float32).flip(0).contiguous() + 800)

    return [(f.__name__, f) for f in (set_other, set_storage_offset, data_assign, as_strided_, resize_grow,
                                       resize_shrink, share_memory, dtype_view, neg_bit, neg_view_data,
                                       untyped_storage_swap, requires_grad, transpose_like)]


def shown(x):
    """The values x shows now, as float64 numpy (through torch's own resolution), or None."""
    with torch.no_grad():
        return x.detach().resolve_neg().resolve_conj().to(torch.float64).numpy().copy()


def judge_copy(name, x, out, exc, x_before_bytes=None, n=N_MUT):
    """None when fine, else a problem string. out: the output of copyk into a poisoned N_MUT vector."""
    if exc is not None:
        if not is_st(exc):
            return f"{name}: raw {err(exc)}"
        if out is not None and not (out == POISON).all():
            return f"{name}: refused ({err(exc, 60)}) but the output was written"
        return None
    v = shown(x)
    want = np.full(n, np.nan)
    k = min(n, v.size)
    want[:k] = v[:k]
    got = out.astype(np.float64)
    ok = np.array_equal(got[:k], want[:k])
    if not ok:
        return f"{name}: ran but read {got[:4].tolist()} while x shows {want[:4].tolist()}"
    return None
