"""Class 1 on ct.launch's one-pass path (FastPath with the lean module's C Reader reading tensors through the
C++ fact reader; a recording stub launcher, device stubbed to -1 as tests/test_launch_dispatch.py does).
After a learned launch on x, x is re-pointed in place (set_, .data =, as_strided_, resize_, storage offset,
share_memory_, dtype view, _set_neg) and launched again: the stub must receive x's *current* pointer, shape and
strides (or the path must miss and leave it to the checked path) -- never the learned ones."""
from _r8 import *

N = 64
problems, log = [], []
for name, mut in mutations():
    x = torch.arange(N, dtype=torch.float32)
    z = torch.zeros(N)
    v = StubVariant(name)
    fp = c_reader_fastpath(ucopy)   # a fresh path per case
    fp.learn(v, (4, 1, 1), (x, z, 16))
    assert fp(None, (4,), (x, z, 16)) and len(v.calls) == 1
    try:
        mut(x)
    except Exception as e:  # noqa
        log.append(f"{name}: torch refused ({type(e).__name__})")
        continue
    before = len(v.calls)
    hit = fp(None, (4,), (x, z, 16))
    if not hit:
        log.append(f"{name}: miss (checked path)")
        continue
    call = v.calls[-1]
    got = (call[5], call[6], call[7])
    want = (x.data_ptr(), x.shape[0] if x.dim() else None, x.stride()[0] if x.dim() else None)
    note = ""
    if x.is_neg():
        note = " (neg bit set: launched on the un-negated memory; the checked GPU path reads the same)"
    log.append(f"{name}: hit, passed ptr/shape/stride {'current' if got == want else 'STALE ' + str(got) + ' want ' + str(want)}{note}")
    if got != want:
        problems.append(f"{name}: stub got {got}, x is {want}")
print("\n".join(log))
if problems:
    broke("; ".join(problems))
held("the one-pass path passed every re-pointed tensor's current facts or missed")
