"""Promise (safety.md G7): "Every refusal is a safetile error raised before anything runs";
HELPER/DESIGN: "No raw tracebacks from inside the package". Earlier rounds (140-148, 213, 219)
covered factories, views, launch arguments, declarations; this round: 0-d and empty tensors
through every host method, odd-but-valid numbers (NumPy integer scalars, bools) in host APIs,
and the less-travelled surfaces (Partition.num_tiles/show, Shared methods, DeviceOp
combinators given wrong arities/values, Stream/StreamPool, memcpy of 0-d/empty, borrow_mut
of non-tensors, graph scopes misuse). A call either works or raises a safetile error; a
builtins/NumPy exception raised from inside safetile is a raw traceback.
"""
from _r4 import *

import os
import tempfile


def t0():
    return ct.from_numpy(np.array(3.0, np.float32)).sync()


def te():
    return ct.zeros(0).sync()


CASES = {
    "len(0-d tensor)": lambda: len(t0()),
    "iter(0-d tensor)": lambda: list(t0()),
    "0-d [()]": lambda: t0()[()],
    "0-d [...]": lambda: t0()[...],
    "0-d reshape(1)": lambda: t0().reshape(1),
    "0-d reshape(())": lambda: t0().reshape(()),
    "0-d slice": lambda: t0().slice(0, 0, 1),
    "0-d partition(1)": lambda: t0().partition(1),
    "0-d partition_prefix(1)": lambda: t0().partition_prefix(1),
    "0-d dup": lambda: t0().dup().sync(),
    "0-d shared/unwrap": lambda: t0().shared().try_unwrap(),
    "0-d memcpy": lambda: ct.memcpy(t0(), t0()).sync(),
    "0-d to_numpy": lambda: t0().to_numpy(),
    "0-d np.asarray": lambda: np.asarray(t0()),
    "0-d dlpack": lambda: np.from_dlpack(t0()),
    "empty reshape(0,5)": lambda: te().reshape(0, 5),
    "empty [1:]": lambda: te()[1:],
    "empty memcpy": lambda: ct.memcpy(te(), te()).sync(),
    "empty dup": lambda: te().dup().sync(),
    "empty partition_prefix": lambda: ct.zeros((0, 4)).sync().partition_prefix(2),
    "empty map": lambda: te().partition(4).map(1),
    "empty show": lambda: te().partition(4).show(),
    "empty 2d show": lambda: ct.zeros((0, 5)).sync().partition((2, 2)).show(),
    "num_tiles(5)": lambda: ct.zeros(8).sync().partition(4).num_tiles(5),
    "num_tiles(-1)": lambda: ct.zeros(8).sync().partition(4).num_tiles(-1),
    "num_tiles('a')": lambda: ct.zeros(8).sync().partition(4).num_tiles("a"),
    "show('x.qqq')": lambda: ct.zeros(8).sync().partition(4).show(os.path.join(tempfile.mkdtemp(), "x.qqq")),
    "show(5)": lambda: ct.zeros(8).sync().partition(4).show(5),
    "map(np.int8(2))": lambda: ct.zeros(8).sync().partition(2).map(np.int8(2)),
    "map(True)": lambda: ct.zeros(8).sync().partition(2).map(True),
    "shared.try_partition(0)": lambda: ct.zeros(8).sync().shared().try_partition(0),
    "shared[0:2]": lambda: ct.zeros(8).sync().shared()[0:2],
    "shared.reshape": lambda: ct.zeros(8).sync().shared().reshape(2, 4),
    "memcpy shape mismatch": lambda: ct.memcpy(ct.zeros(8).sync(), ct.zeros(4).sync()).sync(),
    "memcpy dtype mismatch": lambda: ct.memcpy(ct.zeros(8).sync(), ct.zeros(8, dtype=ct.int32).sync()).sync(),
    "memcpy raw src": lambda: ct.memcpy(ct.zeros(8).sync(), np.zeros(8, np.float32)).sync(),
    "memcpy raw list": lambda: ct.memcpy(ct.zeros(2).sync(), [1.0, 2.0]).sync(),
    "memcpy same": lambda: (lambda t: ct.memcpy(t, t).sync())(ct.zeros(8).sync()),
    "memcpy overlap views": lambda: (lambda t: ct.memcpy(t[0:6], t[2:8]).sync())(ct.zeros(8).sync()),
    "zip()": lambda: ct.zip().sync(),
    "zip(1, 2)": lambda: ct.zip(1, 2).sync(),
    "unzip(-1)": lambda: ct.value((1, 2)).unzip(-1),
    "unzip('a')": lambda: ct.value((1, 2)).unzip("a"),
    "first of non-tuple": lambda: ct.value(5).first().sync(),
    "last of empty tuple": lambda: ct.value(()).last().sync(),
    "value(op)": lambda: ct.value(ct.zeros(2)).sync(),
    "map returns op": lambda: ct.value(1).map(lambda v: ct.zeros(2)).sync(),
    "Stream('tpu')": lambda: ct.Stream("tpu"),
    "Stream(None)": lambda: ct.Stream(None),
    "StreamPool(-1)": lambda: ct.StreamPool("cpu", -1),
    "StreamPool(2**70)": lambda: ct.StreamPool("cpu", 2**70),
    "sync_on(5)": lambda: ct.zeros(2).sync_on(5),
    "graph(5)": lambda: ct.zeros(2).partition(2).graph(5),
    "borrow_mut(5)": lambda: ct.borrow_mut(5),
    "borrow_mut(np)": lambda: ct.borrow_mut(np.zeros(4)),
    "borrow_mut(shared)": lambda: ct.borrow_mut(ct.zeros(4).sync().shared()),
    "shared(5)": lambda: ct.shared(5),
    "shared(np)": lambda: ct.shared(np.zeros(4)),
    "graph_scope record non-op": lambda: (lambda s: s.__enter__().record(5))(ct.graph_scope()),
    "to_device('cuda') no GPU": lambda: ct.to_device(ct.zeros(2).sync(), "cuda").sync(),
    "zeros('cuda') no GPU": lambda: ct.zeros(2, device="cuda").sync(),
    "set_default_device('x')": lambda: ct.set_default_device("x"),
    "detect_races(None,...)": lambda: ct.detect_races(None, (1, 1, 1), ()),
    "launch grid str": lambda: ct.launch(None, "abc", fill, ()),
    "launch grid (0,)": lambda: ct.launch(None, (0,), ct.kernel(lambda a: None), (np.zeros(2),)),
    "rand((2,2.0))": lambda: ct.rand((2, 2.0), seed=1),
    "arange(np.int64(4))": lambda: ct.arange(np.int64(4)).sync(),
    "full((2,), np.float32(1))": lambda: ct.full((2,), np.float32(1.0)).sync(),
    "full((2,), complex)": lambda: ct.full((2,), 1j).sync(),
    "full((2,), None)": lambda: ct.full((2,), None).sync(),
    "from_dlpack(np 0-d)": lambda: ct.from_dlpack(np.array(1.0, np.float32)),
    "from_dlpack(torch bool)": lambda: ct.from_dlpack(__import__("torch").zeros(2, dtype=__import__("torch").bool)),
    "from_dlpack(torch complex)": lambda: ct.from_dlpack(__import__("torch").zeros(2, dtype=__import__("torch").complex64)),
    "from_dlpack(torch sparse)": lambda: ct.from_dlpack(__import__("torch").zeros(2, 2).to_sparse()),
    "from_dlpack(torch meta)": lambda: ct.from_dlpack(__import__("torch").zeros(2, device="meta")),
    "from_dlpack(torch conj)": lambda: ct.from_dlpack(__import__("torch").zeros(2, dtype=__import__("torch").complex64).conj()),
    "from_dlpack(torch neg bit)": lambda: ct.from_dlpack(__import__("torch").zeros(2)._neg_view()),
    "from_dlpack(torch requires_grad)": lambda: ct.from_dlpack(__import__("torch").zeros(2, requires_grad=True)),
    "from_dlpack(torch nested)": lambda: ct.from_dlpack(__import__("torch").nested.nested_tensor([__import__("torch").zeros(2)])),
    "from_dlpack(torch 2**40 expand)": lambda: ct.from_dlpack(__import__("torch").zeros(1).expand(2**40)),
}

import threading

fails = []
hangs = []


def check(name, f):
    try:
        f()
    except BaseException as e:  # noqa: BLE001
        if not is_safetile_error(e):
            tb = e.__traceback__
            inside = False
            while tb:
                if "/safetile/" in tb.tb_frame.f_code.co_filename:
                    inside = True
                tb = tb.tb_next
            if inside:
                fails.append(f"{name}: {type(e).__module__}.{type(e).__name__}: {str(e)[:70]}")


for name, f in CASES.items():
    if os.environ.get("TRACE"):
        print(name, flush=True)
    th = threading.Thread(target=check, args=(name, f), daemon=True)
    th.start()
    th.join(3)
    if th.is_alive():
        hangs.append(f"{name}: no answer after 3 s (not refused)")
fails += hangs
if fails:
    broken(f"{len(fails)} of {len(CASES)} calls raised a raw exception from inside safetile or never returned: " + "; ".join(fails))
held(f"all {len(CASES)} odd calls worked or were refused with safetile errors")
