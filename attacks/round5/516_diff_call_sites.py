"""Promise (safety.md G4): "Use-after-move errors name the holder and how it gives the value back"
(safe.md: "moved into launch 'add' (op #5, created at app.py:12)"); G8 "The common case in C":
the C twin computes the launch's call site itself (walking frames to the first one outside
safetile, asking the Python function for files it has not met) and must decide nothing
differently.

Attack: repeated launches (the C twin's case) built from unusual frames — `exec` of code with
filename '<string>', code compiled with a made-up filename, a lambda, a generator, a coroutine, a
`then` closure, a thread, a class body, a `__del__` finalizer, code compiled with the filename of
one of safetile's own modules (`safetile/safe/launch.py`), and a frame 200 deep — and for each the
op's `site`/`repr` and the use-after-move message for an argument are recorded; with the C twin
on and off every text must be identical.
(Op numbers, "op #N", are compared too: 517 isolates the case where they differed.)
"""
from _r5 import *

import asyncio
import gc
import threading


def scenario(rec):
    import safetile.safe.launch as L

    @ct.entry
    def k(z: ct.Mut[ct.f32, "B"], x: ct.Ref[ct.f32, -1]):
        z.store(ct.load_tile_like(x, z) + 1.0)
    st = {"z": ct.from_dlpack(np.zeros(64, np.float32)).partition(16), "x": ct.from_dlpack(np.ones(64, np.float32))}
    for _ in range(3):
        st["z"], st["x"] = k(st["z"], st["x"]).sync()

    def observe(label, make):
        try:
            op = make()
        except BaseException as e:  # noqa: BLE001
            rec(label, "EXC " + exc_str(e)[:300])
            return
        try:
            k(st["z"], st["x"])
            rec(label + " second build", "ACCEPTED")
        except BaseException as e:  # noqa: BLE001
            rec(label + " use-after-move", exc_str(e)[:400])
        rec(label + " op", [repr(op), str(getattr(op, "site", None))])
        st["z"], st["x"] = op.sync()

    g = {"k": k, "st": st}
    observe("exec <string>", lambda: (exec("op = k(st['z'], st['x'])", g), g["op"])[1])
    observe("made-up file", lambda: (exec(compile("op = k(st['z'], st['x'])", "/nonexistent/app.py", "exec"), g),
                                     g["op"])[1])
    observe("safetile's own filename", lambda: (exec(compile("op = k(st['z'], st['x'])", L.__file__, "exec"), g),
                                                g["op"])[1])
    observe("lambda", lambda: (lambda: k(st["z"], st["x"]))())

    def gen():
        yield k(st["z"], st["x"])
    observe("generator", lambda: next(gen()))

    async def co():
        return k(st["z"], st["x"])
    observe("coroutine", lambda: asyncio.run(co()))
    box = {}

    def th():
        box["op"] = k(st["z"], st["x"])
    t = threading.Thread(target=th)
    observe("thread", lambda: (t.start(), t.join(), box["op"])[2])

    def cls_body():
        class C:
            op = k(st["z"], st["x"])
        return C.op
    observe("class body", cls_body)

    class D:
        def __del__(self):
            box["del"] = k(st["z"], st["x"])

    def fin():
        d = D()
        del d
        gc.collect()
        return box["del"]
    observe("__del__", fin)

    def deep(n):
        return deep(n - 1) if n else k(st["z"], st["x"])
    observe("200 frames deep", lambda: deep(200))
    # then closure: the site of a launch built inside a chain, seen in a refusal
    seen = []

    def step(v):
        op2 = k(v[0], v[1])
        try:
            k(v[0], v[1])
        except BaseException as e:  # noqa: BLE001
            seen.append(exc_str(e)[:400])
        seen.append(repr(op2))
        return op2
    st["z"], st["x"] = k(st["z"], st["x"]).then(step).sync()
    rec("then closure", seen)


def check(log):
    return [v[:300] for k_, v in log if k_ == "SCENARIO-RAISED"] + \
           [f"{k_}: a second build with moved arguments was accepted" for k_, v in log if v == "ACCEPTED"]


def main():
    problems, on, off = differential(__file__, scenario, check, "call sites")
    if problems:
        broken("; ".join(problems[:3]))
    held(f"{len(on)} site texts identical with the C twin on and off")


run_guarded(main, "516")
