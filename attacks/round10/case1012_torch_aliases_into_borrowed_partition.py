"""G3/G8 with torch Refs (the C twin takes raw torch tensors as Ref): t = ct.from_dlpack(tt) of a CPU torch
tensor, borrowed; launches addk(p, r) with p the borrowed partition and r a raw torch tensor that aliases tt:
(a) tt itself, (b) tt.view(torch.int32) reinterpreted... as f32 via a view chain, (c) tt[8:40], (d) an
as_strided view, (e) in a then-chain whose first launches used a non-aliasing raw tensor o (warm: the C twin
holds o's alias for the terminal) and whose closure re-points o onto tt's storage with o.set_() before the next
launch, (f) the same with a repeated-launch loop outside a chain (plan reuse), (g) torch.from_dlpack of a
safetile export of a view of t taken before the borrow.
Expect: each aliasing launch refused with AliasError (a safetile error) before anything runs, t's bytes
unchanged by it, no raw error; non-aliasing launches compute the NumPy reference. Run with the C path on/off."""
from _r10 import *
try:
    import torch
except Exception:  # noqa
    inconclusive("torch not installed")

both_ways()
native_loaded()
problems = []
res = {}


def expect_alias(name, f, t_np_before, read):
    try:
        out = f()
        if hasattr(out, "sync"):
            out = out.sync()
        problems.append(f"{name}: aliasing launch ran")
        res[name] = "RAN"
    except Exception as e:  # noqa
        res[name] = type(e).__name__
        if not st_err(e):
            problems.append(f"{name}: raw {err(e)}")
        elif not isinstance(e, ct.AliasError):
            res[name] = err(e, 100)
    after = read()
    if not np.array_equal(after, t_np_before):
        problems.append(f"{name}: t changed by a refused launch ({t_np_before[:2]} -> {after[:2]})")


for rep in range(2):
    tt = torch.full((64,), 3.0)
    t = ct.from_dlpack(tt)
    v = t[0:64]                   # a view taken before the borrow
    o = torch.full((64,), 1.0)
    with ct.borrow_mut(t) as b:
        p = b.partition(16)
        for _ in range(3):         # warm with a non-aliasing raw torch Ref
            p, _o = addk(p, o).sync()
        base = tt.numpy().copy()
        if not np.all(base == 6.0):
            problems.append(f"warm result wrong: {base[:2]}")

        def read():
            return tt.numpy().copy()
        expect_alias("a_tt", lambda: addk(p, tt), base, read)
        iv = tt.view(torch.int32).view(torch.float32)
        expect_alias("b_reinterp", lambda: addk(p, iv), base, read)
        expect_alias("c_slice", lambda: addk(p, tt[8:40]), base, read)
        expect_alias("d_as_strided", lambda: addk(p, tt.as_strided((8,), (8,), 1)), base, read)

        o2 = torch.full((64,), 1.0)

        def repoint(vals):
            o2.set_(tt.untyped_storage(), 0, (64,), (1,))
            return addk(vals[0], o2)
        before = read()
        try:
            addk(p, o2).then(lambda v_: addk(v_[0], o2)).then(repoint).sync()
            problems.append("e_chain_set: the re-pointed launch ran")
            res["e_chain_set"] = "RAN"
        except Exception as e:  # noqa
            res["e_chain_set"] = type(e).__name__
            if not st_err(e):
                problems.append(f"e_chain_set: raw {err(e)}")
        after = read()
        # two launches (+1 each) may have run before the refusal; the third must not have
        if not (np.array_equal(after, before + 2) or np.array_equal(after, before)):
            problems.append(f"e_chain_set: t = {after[:2]} from {before[:2]} (expected +2 at most)")
        # after a refused chain p is given back? (a failed terminal gives back)
        o3 = torch.full((64,), 1.0)
        for i in range(3):
            try:
                p, _ = addk(p, o3).sync()
            except Exception as e:  # noqa
                problems.append(f"f: p not usable after the refused chain: {err(e)}")
                break
        o3.set_(tt.untyped_storage(), 0, (64,), (1,))
        expect_alias("f_repeat_set", lambda: addk(p, o3), read(), read)
    res["exports"] = ""
    try:
        ex = torch.from_dlpack(v)        # v is usable again after the borrow
        with ct.borrow_mut(t) as b:
            p = b.partition(16)
            expect_alias("g_export", lambda: addk(p, ex), tt.numpy().copy(), lambda: tt.numpy().copy())
        del ex
    except Exception as e:  # noqa
        res["exports"] = err(e, 100)
if problems:
    broke("; ".join(problems[:4]) + f" | {res}")
held(f"native={NATIVE}: {res}")
