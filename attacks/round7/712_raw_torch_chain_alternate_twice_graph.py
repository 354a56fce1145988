"""G3 / G8 for the per-terminal raw alias (made once per terminal, reused while the tensor shows the
same facts, anew when re-pointed) and G8's replay rule ("a replay is refused (GraphCaptureError naming
the argument) when any of them changed in place since"). In one then-chain: two raw torch tensors
alternating (a, b, a, b), the same tensor passed as two Refs of one launch, a tensor re-pointed with
set_/as_strided_/resize_ (within its storage)/.data= between launches, and a fresh tensor made each
step with a recycled Python id; then the same chain captured as a graph, the tensor updated in place
(a replay must see the new values) and re-pointed (a replay must be refused). Expected values are
computed from what each tensor shows at each launch; both paths must agree with them."""
from _r7 import *
import torch, gc

N = 64


def val(z):
    return sorted(set(z.unpartition().to_numpy().tolist()))


def scenario():
    out = {}
    a, b = torch.full((N,), 1.0), torch.full((N,), 10.0)
    seen = []

    def rec(r):
        seen.append(float(r[0].unpartition().to_numpy()[0]) if False else None)
        return r
    # alternating a, b, a, b ; each launch z = z + x + y
    z = ct.zeros(N).sync().partition(16)
    op = acc(z, a, a)
    for x in (b, a, b):
        op = op.then(lambda r, x=x: acc(r[0], x, x))
    (z, _, _) = op.sync()
    out["alternating a,b,a,b (expect 44)"] = val(z)
    # re-pointed between launches, inside closures
    t = torch.full((N,), 1.0)
    big = torch.arange(2 * N, dtype=torch.float32)
    steps = [lambda: t.set_(torch.full((N,), 2.0)),
             lambda: (t.set_(big), t.as_strided_((N,), (2,))),
             lambda: t.resize_(N // 2).resize_(N),
             lambda: setattr(t, "data", torch.full((N,), 5.0))]
    z = ct.zeros(N).sync().partition(16)
    expect = [t.clone()]
    op = acc(z, t, t)
    for s in steps:
        def nxt(r, s=s):
            s()
            expect.append(t.clone())
            return acc(r[0], t, t)
        op = op.then(nxt)
    (z, _, _) = op.sync()
    exp = sum(2 * e for e in expect)
    got = z.unpartition().to_numpy()
    out["re-pointed in chain"] = "as shown" if np.allclose(got, exp.numpy()) else f"differs: got {got[:4]} expected {exp[:4].tolist()}"
    # fresh tensor each step (ids recycled)
    z = ct.zeros(N).sync().partition(16)
    ids = set()

    def fresh(r, i):
        gc.collect()
        x = torch.full((N,), float(i))
        ids.add(id(x))
        return acc(r[0], x, x)
    op = ct.value((z, None, None))
    for i in range(1, 6):
        op = op.then(lambda r, i=i: fresh(r, i))
    (z, _, _) = op.sync()
    out["fresh tensors (expect 30)"] = val(z)
    # graph: capture, update in place, re-point
    g_t = torch.full((N,), 1.0)
    z = ct.zeros(N).sync().partition(16)
    g = acc(z, g_t, g_t).then(lambda r: acc(r[0], g_t, g_t)).graph()
    g_t.fill_(3.0)
    r = g.launch()
    out["graph replay after fill_ (expect first z + 12)"] = "?"
    try:
        zz = r[0]
        out["graph replay after fill_ (expect first z + 12)"] = "ok"
    except Exception as e:  # noqa
        out["graph replay after fill_ (expect first z + 12)"] = err(e, 60)
    g_t.set_(torch.full((N,), 100.0))
    try:
        g.launch()
        out["graph replay after set_"] = "ran"
    except Exception as e:  # noqa
        out["graph replay after set_"] = err(e, 50)
    g.close()
    return out


@ct.entry
def acc(z: ct.Mut[ct.f32, "B"], x: ct.Ref[ct.f32, -1], y: ct.Ref[ct.f32, -1]):
    z.store(z.load() + ct.load_tile_like(x, z) + ct.load_tile_like(y, z))


def judge(c, py):
    bad = []
    if c["alternating a,b,a,b (expect 44)"] != [44.0]:
        bad.append(f"alternating: {c['alternating a,b,a,b (expect 44)']}")
    if c["re-pointed in chain"] != "as shown":
        bad.append(c["re-pointed in chain"])
    if c["fresh tensors (expect 30)"] != [30.0]:
        bad.append(f"fresh: {c['fresh tensors (expect 30)']}")
    if c["graph replay after set_"] == "ran":
        bad.append("replay after set_ not refused")
    if bad:
        return "BROKEN", "C path: " + "; ".join(bad)
    return "HELD", "per-terminal aliases follow every re-pointing; replays refused after set_"


differential(scenario, judge)
