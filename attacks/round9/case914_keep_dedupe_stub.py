"""G3/G8 "the checked memory is the memory that runs ... until the GPU has finished it": the terminal keeps
each submitted launch's runtime arguments (ExecContext.keep), now once when the last kept tuple holds the
same objects. GPU-only in effect; checked here with the C run on the CPU stream through a recording stub
launcher bound to the plans (as tests/test_safe_native.py binds one). Chains alternate two bound plans (A:
zA, B: zB) that read a raw torch tensor (safetile's alias of it is what the launch runs on, and nothing but
the op and the keep holds it), a plan launched repeatedly, and the raw tensor re-pointed (set_) and back
mid-chain; 4 threads run such chains at once. Expect: at every submission, every runtime object of every
launch submitted so far in that terminal is alive (weak references), each terminal keeps only its own, and
all of them are released once the terminal has waited."""
from _r9 import *
import weakref

require_c_lock()
try:
    import torch
    from safetile.backends.triton import launcher
    from safetile.safe.launch import prepare
    from safetile.safe.streams import current_context
except Exception as e:  # noqa
    inconclusive(f"stub launcher unavailable: {err(e)}")

N, TILE = 256, 64


@ct.entry
def add(z: ct.Mut[ct.f32, "B"], x: ct.Ref[ct.f32, -1], y: ct.Ref[ct.f32, -1]):
    z.store(ct.load_tile_like(x, z) + ct.load_tile_like(y, z))


problems = []
plock = threading.Lock()


class Stub:
    """The lean launcher's stand-in: at each submission, checks that everything kept so far is alive."""

    def __init__(self):
        self.calls = 0
        self.seen = {}  # terminal id -> weak refs of every object of every kept tuple so far

    def __call__(self, gx, gy, gz, stream, *tail):
        self.calls += 1
        ctx = current_context()
        refs = self.seen.setdefault(id(ctx), [])
        for tup in ctx.keep:
            for o in (tup if isinstance(tup, tuple) else (tup,)):
                try:
                    refs.append(weakref.ref(o))
                except TypeError:
                    pass
        dead = sum(r() is None for r in refs)
        if dead:
            with plock:
                problems.append(f"{dead} objects kept earlier in this terminal are gone while it still runs")


def bind(kernel, args, stub):
    plan = prepare(kernel, args)
    variant = type("V", (), {"call": staticmethod(stub), "prefix": ("spec",)})()
    plan.bound = launcher.Bound(variant, (4, 1, 1), (1, 2, 3), -1)  # the CPU stream's device index
    return plan


def run_thread(i, results):
    stub = Stub()
    y = ct.from_dlpack(np.ones(N, np.float32)).shared()
    zA = ct.from_dlpack(np.zeros(N, np.float32)).partition(TILE)
    zB = ct.from_dlpack(np.zeros(N, np.float32)).partition(TILE)
    xt = torch.ones(N)
    other = torch.full((N,), 5.0)
    s1 = xt.untyped_storage()
    bind(add, (zA, xt, y), stub)
    bind(add, (zB, xt, y), stub)
    aliases = []

    def step(k):
        def f(v):
            zA_, zB_ = (v[0], state["zB"]) if state["last"] == "A" else (state["zA"], v[0])
            state["zA"], state["zB"] = zA_, zB_
            if k == 5:
                xt.set_(other)          # re-pointed: another key (the Python path decides, unbound)
            if k == 6:
                xt.set_(s1, 0, (N,), (1,))  # and back: the bound plan's facts again
            use = "A" if k % 3 != 2 else "B"
            state["last"] = use
            op = add(zA_ if use == "A" else zB_, xt, v[2])
            try:
                aliases.append(weakref.ref(op._runtime[1]))  # (only to observe: the alias this launch runs on)
            except Exception:  # noqa
                pass
            return op
        return f

    state = {"zA": zA, "zB": zB, "last": "A"}
    op = add(zA, xt, y)
    for k in range(1, 12):
        op = op.then(step(k))
    res = op.sync()
    del op
    gc.collect()
    alive_after = sum(a() is not None for a in aliases)
    results[i] = (stub.calls, alive_after, len(aliases))


from safetile.safe.native import FAST
_real_run = FAST.run
c_runs = [0]


def _counting_run(op, ctx):
    r = _real_run(op, ctx)
    c_runs[0] += r is not None
    return r


FAST.run = _counting_run  # (observation only, as tests/test_safe_native.py counts the C path)
for rnd in range(3):
    results = [None] * 4
    ths = [threading.Thread(target=run_thread, args=(i, results), daemon=True) for i in range(4)]
    for th in ths:
        th.start()
    for th in ths:
        th.join(30)
    if any(r is None for r in results):
        broke(f"a chain thread failed or hung: {results}")
    if any(r[1] for r in results):
        problems.append(f"aliases still alive after the terminals ended: {results}")
    if sum(r[0] for r in results) < 20:
        inconclusive(f"too few stub submissions: {results}")
print(f"per-thread (stub submissions, aliases alive after, aliases made): {results}; C runs {c_runs[0]}")
if c_runs[0] < 20:
    inconclusive(f"the C run took only {c_runs[0]} launches")
if problems:
    broke("; ".join(sorted(set(problems))[:3]))
held(f"{c_runs[0]} C runs: every kept runtime object stayed alive until its terminal waited, and was released after")
