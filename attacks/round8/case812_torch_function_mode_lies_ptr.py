"""Class 3 (TorchFunctionMode). G3: "the checked memory is the memory that runs" / a Mut aliases nothing.
A raw torch tensor passed as a Ref is read by the Python launch path through torch's Python methods
(data_ptr(), shape, stride(), ...), which an active TorchFunctionMode intercepts; the CPU backend then
hands the alias to NumPy through DLPack (C++, no mode). A mode that reports another data pointer makes the
aliasing check look at memory the launch never touches, while the kernel reads the memory it writes.
Control: the same launch without the mode is refused with an AliasError."""
from _r8 import *
from torch.overrides import TorchFunctionMode

ensure_native()


class LyingPtr(TorchFunctionMode):
    def __torch_function__(self, func, types, args=(), kwargs=None):
        r = func(*args, **(kwargs or {}))
        if getattr(func, "__name__", "") == "data_ptr":
            return r + (1 << 40)          # somewhere far away
        return r


@ct.entry
def shift(z: ct.Mut[ct.f32, "B"], x: ct.Ref[ct.f32, -1]):
    # every block reads block 0's slice of x and writes its own slice of z
    z.store(ct.load_tile_like(x, z) * 0.0 + x.partition((16,)).load((0,)) + 1.0)


N = 64
z = ct.arange(N, dtype=ct.f32).sync() if hasattr(ct, "arange") else ct.zeros(N).sync()
zp = z.partition(16)
# a torch alias of the output's memory (an export: allowed beside a partition, G6)
zt = zp.unpartition()
xt = torch.from_dlpack(zt)          # raw torch tensor over z's memory
before = xt.clone()
zp = zt.partition(16)
obs = {}
try:
    (zp, _) = shift(zp, xt).sync()
    obs["no mode"] = "ran"
except Exception as e:  # noqa
    obs["no mode"] = err(e, 90)
print("control (no mode):", obs["no mode"])
if obs["no mode"] == "ran":
    inconclusive("control not refused: aliasing Ref/Mut accepted without any mode")
if not torch.equal(xt, before):
    broke("control refusal wrote the memory")
try:
    with LyingPtr():
        (zp, _) = shift(zp, xt).sync()
    obs["mode"] = "ran"
except Exception as e:  # noqa
    obs["mode"] = err(e, 90)
print("with lying TorchFunctionMode:", obs["mode"])
if obs["mode"] == "ran":
    after = zp.unpartition().to_numpy()
    print("z after:", after[:20])
    broke("with a TorchFunctionMode reporting data_ptr()+2**40 the launch whose Ref x is a torch view of its own "
          "Mut z is accepted (without the mode: " + obs["no mode"][:60] + "); the kernel ran on the real memory, "
          f"reading the output it writes: z[:4]={after[:4].tolist()}, z[16:20]={after[16:20].tolist()}")
held("refused with the mode too: " + obs["mode"])
