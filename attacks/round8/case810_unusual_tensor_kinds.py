"""Class 3. Unusual raw torch tensors as the Ref of a safe launch (C twin hot for a plain tensor of the same
dtype first, so each odd tensor meets the C twin and the C++ fact reader first): sparse COO/CSR, nested, meta,
0-d, empty, 17 dimensions (beyond the C++ reader's 16), huge strides, an overlapping as_strided (a Ref may
overlap), expand (stride 0), a tensor subclass, requires_grad, an inference-mode tensor, a non-contiguous
permuted view, float64, a quantized tensor. Each: the launch reads the values the tensor shows, or is refused
with a safetile error and writes nothing.
# BACKENDS: cpu triton"""
from _r8 import *

ensure_native()


@ct.entry
def copyany(z: ct.Mut[ct.f32, "B"], x: ct.Ref[ct.f32, -1]):
    z.store(ct.load_tile_like(x, z))


class Sub(torch.Tensor):
    pass


class Liar(torch.Tensor):
    """A subclass whose __torch_function__ lies about data_ptr / shape / stride."""
    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        r = super().__torch_function__(func, types, args, kwargs or {})
        n = getattr(func, "__name__", "")
        if n == "data_ptr":
            return r + 4096
        return r


N = 64
cases = []
base = torch.arange(N, dtype=torch.float32)
cases.append(("sparse_coo", lambda: base.to_sparse()))
cases.append(("sparse_csr", lambda: base.reshape(8, 8).to_sparse_csr()))
cases.append(("nested", lambda: torch.nested.nested_tensor([base[:32], base[:32]])))
cases.append(("meta", lambda: torch.empty(N, device="meta")))
cases.append(("zero_d", lambda: torch.tensor(5.0)))
cases.append(("empty", lambda: torch.empty(0)))
cases.append(("huge_stride", lambda: torch.empty(1).as_strided((N,), (2**40,))))
cases.append(("overlap_as_strided", lambda: torch.arange(N + 3, dtype=torch.float32).as_strided((N,), (0 + 1,), 3)))
cases.append(("expand", lambda: torch.tensor([3.0]).expand(N)))
cases.append(("subclass", lambda: base.clone().as_subclass(Sub)))
cases.append(("liar_subclass", lambda: base.clone().as_subclass(Liar)))
cases.append(("requires_grad", lambda: base.clone().requires_grad_()))
cases.append(("parameter", lambda: torch.nn.Parameter(base.clone())))


def inference():
    with torch.inference_mode():
        return torch.arange(N, dtype=torch.float32) * 1.0


cases.append(("inference_mode", inference))
cases.append(("float64", lambda: base.double()))
cases.append(("quantized", lambda: torch.quantize_per_tensor(base, 1.0, 0, torch.qint32)))
cases.append(("conj_complex", lambda: torch.complex(base, base).conj()))

problems, log = [], []
for _ in range(3):
    run_copy(base.clone(), k=copyany)  # hot
for name, mk in cases:
    try:
        x = mk()
    except Exception as e:  # noqa
        log.append(f"{name}: torch cannot make it ({type(e).__name__})")
        continue
    z = poisoned(N).partition(16)
    try:
        (z, _) = copyany(z, x).sync()
        out = z.unpartition().to_numpy()
        if name == "huge_stride":
            problems.append(f"{name}: a Ref over 2**46 bytes of unallocated memory ran (read {out[:2]})")
        else:
            v = shown(x) if x.layout == torch.strided and x.device.type != "meta" else None
            k = min(N, v.size) if v is not None else 0
            good = v is not None and np.array_equal(out[:k].astype(np.float64), v.reshape(-1)[:k]) \
                if x.dim() <= 1 else v is not None
            log.append(f"{name}: ran, read {out[:3].tolist()}" + ("" if good else "  <-- wrong"))
            if not good:
                problems.append(f"{name}: ran, read {out[:4].tolist()} while it shows {None if v is None else v.reshape(-1)[:4].tolist()}")
    except Exception as e:  # noqa
        try:
            zz = z.unpartition().to_numpy()
            wrote = not (zz == POISON).all()
        except Exception:  # noqa
            wrote = False
        log.append(f"{name}: refused {err(e, 70)}")
        if not is_st(e):
            problems.append(f"{name}: raw {err(e)}")
        if wrote:
            problems.append(f"{name}: refused but wrote the output")

# 17 dimensions: the C++ reader declines (> 16), torch's methods answer
try:
    x = torch.arange(2**17, dtype=torch.float32).reshape((2,) * 17)

    @ct.entry
    def first(z: ct.Mut[ct.f32, "B"], x: ct.Ref[ct.f32, (-1,) * 17]):
        z.store(ct.full(z.shape, 1.0, ct.f32))
    z = poisoned(N).partition(16)
    (z, _) = first(z, x).sync()
    log.append(f"dims17: ran {z.unpartition().to_numpy()[:2].tolist()}")
except Exception as e:  # noqa
    log.append(f"dims17: {err(e, 80)}")
    if not is_st(e):
        problems.append(f"dims17: raw {err(e)}")
print("\n".join(log))
if problems:
    broke("; ".join(problems))
held(f"{len(log)} odd tensors: read as shown or refused with safetile errors")
