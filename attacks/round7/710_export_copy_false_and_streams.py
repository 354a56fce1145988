"""Round-6 fixes (safety.md / safe.md: "np.asarray(t, copy=False) asks for the memory itself and is
refused with a TensorError"; t.__dlpack__ with odd arguments raises TensorError/ExportError; streams
copy as themselves and refuse pickling) probed in every spelling: np.asarray/np.array/__array__
with copy=False positionally and by keyword, on a Tensor, a Shared, a view, a 0-d and an empty
tensor; memoryview()/np.frombuffer (the buffer protocol, a second way to ask for the memory);
__dlpack__ with odd keyword values and odd types; copy/deepcopy/pickle/copy.replace-like calls on
Stream and the default pool. Each must be a copy where a copy is asked for, a safetile error
otherwise, never a silent alias or copy where copy=False was asked, never a raw exception."""
from _r7 import *
import copy, pickle


def scenario():
    out = {}

    def tr(name, f):
        try:
            r = f()
            if isinstance(r, np.ndarray):
                out[name] = f"ndarray (writable={r.flags.writeable})"
            else:
                out[name] = "ok " + type(r).__name__
        except BaseException as e:  # noqa
            out[name] = err(e, 60)
    t = ct.from_numpy(np.arange(16, dtype=np.float32)).sync()
    sh = ct.from_numpy(np.arange(16, dtype=np.float32)).sync().shared()
    v = ct.from_numpy(np.arange(16, dtype=np.float32).reshape(4, 4)).sync()[1:3, ::2]
    z0 = ct.from_numpy(np.float32(3.0)).sync() if True else None
    e = ct.zeros(0).sync()
    for nm, x in (("t", t), ("shared", sh), ("view", v), ("0-d", z0), ("empty", e)):
        tr(f"{nm} asarray copy=False", lambda: np.asarray(x, copy=False))
        tr(f"{nm} array copy=False", lambda: np.array(x, copy=False))
        tr(f"{nm} __array__(copy=False)", lambda: x.__array__(copy=False))
        tr(f"{nm} __array__(None, False)", lambda: x.__array__(None, False))
        tr(f"{nm} __array__(float64, copy=False)", lambda: x.__array__(np.float64, copy=False))
        tr(f"{nm} memoryview", lambda: memoryview(x))
        tr(f"{nm} frombuffer", lambda: np.frombuffer(x, np.float32))
        tr(f"{nm} asarray copy=None", lambda: np.asarray(x, copy=None))
    for kw in ({"stream": -1}, {"stream": "x"}, {"stream": 1.5}, {"max_version": -1}, {"max_version": (1,)},
               {"max_version": ("a", "b")}, {"max_version": (2**70, 0)}, {"dl_device": -1}, {"dl_device": (1,)},
               {"dl_device": (2, 0)}, {"dl_device": ("a", 0)}, {"dl_device": (1, 2**70)}, {"copy": "x"},
               {"copy": 1}, {"copy": None}, {"junk": 1}):
        tr(f"__dlpack__{kw}", lambda: t.__dlpack__(**kw))
    tr("__dlpack_device__", lambda: t.__dlpack_device__())
    s = ct.Stream("cpu")
    pool = ct.default_pool()
    tr("copy.copy(stream) is itself", lambda: (copy.copy(s) is s) or 1 / 0)
    tr("deepcopy(stream) is itself", lambda: (copy.deepcopy(s) is s) or 1 / 0)
    tr("deepcopy([stream]) keeps it", lambda: (copy.deepcopy([s])[0] is s) or 1 / 0)
    tr("pickle stream", lambda: pickle.dumps(s))
    tr("pickle stream proto 0", lambda: pickle.dumps(s, 0))
    tr("stream __reduce_ex__(2)", lambda: s.__reduce_ex__(2))
    tr("stream __getstate__", lambda: s.__getstate__())
    tr("copy.copy(pool)", lambda: (copy.copy(pool) is pool) or 1 / 0)
    tr("deepcopy(pool)", lambda: (copy.deepcopy(pool) is pool) or 1 / 0)
    tr("pickle pool", lambda: pickle.dumps(pool))
    tr("t still fine", lambda: t.to_numpy())
    return out


def judge(c, py):
    bad = []
    for k, v in c.items():
        if "(raw)" in v and not ("__getstate__" in k or "__reduce_ex__" in k or "bytes-like" in v):
            bad.append(f"{k}: {v}")
        if ("copy=False" in k or "(None, False)" in k) and v.startswith("ndarray"):
            bad.append(f"{k}: returned an array ({v})")
        if ("memoryview" in k or "frombuffer" in k) and v.startswith(("ok", "ndarray")):
            bad.append(f"{k}: {v} (a second door to the memory)")
        if "__reduce_ex__" in k and not v.startswith(("OwnershipError", "ArgumentError",
                                                                                "TypeError", "StreamError")):
            bad.append(f"{k}: {v}")
    if bad:
        return "BROKEN", "C path: " + " | ".join(bad)
    return "HELD", "every spelling refused or copied as documented"


differential(scenario, judge)
