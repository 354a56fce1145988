"""Every public callable of the safe style answers odd-but-plausible arguments promptly, with a
result or a safetile error (docs/safety.md G7; red team round 4, 407).

Generated, not hand-picked: every function and class of ``safetile.safe.__all__``, and every
public method, property and protocol dunder of the value handles (tensors of several shapes,
partitions, mapped partitions, shared handles, borrows), is called with each odd
value (0-d and empty tensors, negative, zero and huge numbers, wrong types, None, device names
that do not exist here) in every parameter position, the other parameters valid. A failure is
any exception that is not a safetile error (its class is defined in the package) raised from
inside the package, or a call that has not answered within ``BOUND`` seconds.
"""
from __future__ import annotations

import inspect
import math
import threading
import warnings

import numpy as np
import pytest

import safetile as ct
import safetile.safe as safe_api

BOUND = 3.0  # seconds one call may take (they take milliseconds)


@ct.entry
def fill(z: ct.Mut[ct.f32, "B"], x: ct.Ref[ct.f32, -1]):
    z.store(ct.load_tile_like(x, z) + 1.0)


def t(n=8, seed=1):
    return ct.rand(n, seed=seed).sync()


# odd values, made fresh for every call (a call may move what it is given)
ODD = {
    "0": lambda: 0, "-1": lambda: -1, "2**70": lambda: 2 ** 70, "1.5": lambda: 1.5, "nan": lambda: math.nan,
    "'x'": lambda: "x", "None": lambda: None, "True": lambda: True, "()": lambda: (), "(2,-1)": lambda: (2, -1),
    "[]": lambda: [], "np.int64(3)": lambda: np.int64(3), "np empty": lambda: np.zeros(0, np.float32),
    "0-d tensor": lambda: ct.from_numpy(np.array(3.0, np.float32)).sync(), "empty tensor": lambda: t(0),
    "object()": lambda: object(), "'cuda'": lambda: "cuda", "'cuda:7'": lambda: "cuda:7", "'tpu'": lambda: "tpu",
}
try:  # foreign tensor kinds DLPack cannot carry
    import torch

    ODD.update({
        "torch sparse": lambda: torch.zeros(2, 2).to_sparse(), "torch meta": lambda: torch.zeros(2, device="meta"),
        "torch conj": lambda: torch.zeros(2, dtype=torch.complex64).conj(),
        "torch neg": lambda: torch.zeros(2)._neg_view(), "torch grad": lambda: torch.zeros(2, requires_grad=True),
        "torch nested": lambda: torch.nested.nested_tensor([torch.zeros(2)]),
    })
except ImportError:  # pragma: no cover - CI installs torch
    pass

# valid values by parameter name (the other parameters of a call that mutates one)
VALID = {
    "shape": lambda: 4, "size": lambda: 2, "dtype": lambda: ct.f32, "device": lambda: "cpu", "seed": lambda: 1,
    "fill_value": lambda: 1.0, "src": lambda: t(4, 2), "dst": lambda: t(4, 3), "x": lambda: t(4, 4),
    "a": lambda: np.ones(4, np.float32), "tensor": lambda: t(4, 5), "data": lambda: np.ones(4, np.float32),
    "stream": lambda: None, "name": lambda: None, "num_tile_blocks": lambda: 1, "axis": lambda: 0,
    "path": lambda: None, "start": lambda: 0, "stop": lambda: 2, "step": lambda: 1, "dim": lambda: 0,
    "index": lambda: 0, "key": lambda: 0, "op": lambda: ct.value(1), "fn": lambda: (lambda v: v),
    "f": lambda: (lambda v: v), "ops": lambda: ct.value(1), "other": lambda: ct.value(1),
}

SKIP_FUNCTIONS = {"entry", "EntryKernel", "DeviceOp", "RaceReport"}  # decorators / plain records, not host calls


def is_safetile_error(e: BaseException) -> bool:
    return isinstance(e, ct.SafetileError)


def raised_inside(e: BaseException) -> bool:
    tb = e.__traceback__
    while tb is not None:
        if "/safetile/" in tb.tb_frame.f_code.co_filename:
            return True
        tb = tb.tb_next
    return False


class Surface:
    """Runs calls with a time bound and collects the ones that answer wrongly."""

    def __init__(self):
        self.bad: list[str] = []
        self.calls = 0

    def call(self, what: str, make) -> None:
        """``make()`` builds the arguments and makes the call (both inside the bound)."""
        self.calls += 1
        box: list[str] = []

        def run():
            try:
                r = make()
                if isinstance(r, ct.DeviceOp) and not isinstance(r, ct.Graph):
                    r.sync()  # a lazy operation's refusal may come when it runs
            except BaseException as e:  # noqa: BLE001 - judged below
                if not is_safetile_error(e) and raised_inside(e):
                    box.append(f"{what}: {type(e).__module__}.{type(e).__name__}: {str(e)[:90]}")
            box.append("")

        th = threading.Thread(target=run, daemon=True)
        th.start()
        th.join(BOUND)
        if not box:
            self.bad.append(f"{what}: no answer after {BOUND} s")
        elif box[0]:
            self.bad.append(box[0])

    def mutations(self, name: str, fn, prefix=()) -> None:
        """``fn`` with each odd value alone, and in each parameter position with the others valid."""
        for oname, odd in ODD.items():
            self.call(f"{name}({oname})", lambda odd=odd: fn(*prefix, odd()))
        try:
            params = [p for p in inspect.signature(fn).parameters.values()
                      if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]
        except (TypeError, ValueError):
            return
        for i, p in enumerate(params):
            others = params[:i] + params[i + 1:]
            if any(q.default is q.empty and q.name not in VALID for q in others):
                continue
            for oname, odd in ODD.items():
                def make(p=p, odd=odd):
                    pos, kw = list(prefix), {}
                    for q in params:
                        v = odd() if q is p else (VALID[q.name]() if q.name in VALID else q.default)
                        if q.kind == q.KEYWORD_ONLY:
                            kw[q.name] = v
                        else:
                            pos.append(v)
                    return fn(*pos, **kw)
                self.call(f"{name}({p.name}={oname})", make)


def handles():
    """Fresh handles of every class of the safe style (and a few shapes of each)."""
    return {
        "tensor": lambda: t(8), "tensor 2-d": lambda: ct.rand((4, 4), seed=1).sync(),
        "tensor 0-d": ODD["0-d tensor"], "tensor empty": lambda: t(0),
        "partition": lambda: t(8).partition(4), "partition empty": lambda: t(0).partition(4),
        "partition prefix": lambda: ct.rand((4, 4), seed=1).sync().partition_prefix(2),
        "mapped": lambda: t(8).partition(2).map(2), "shared": lambda: t(8).shared(),
        "borrow": lambda: ct.borrow_mut(t(8)),
    }


def _mutmut_name(name: str) -> bool:
    """A method mutation testing adds to the class (``xǁTensorǁsum__mutmut_3``: mutmut keeps every
    mutant and the original of a method on its class, behind a trampoline), not the class's API."""
    return "ǁ" in name or "__mutmut_" in name


DUNDERS = ("__len__", "__iter__", "__getitem__", "__setitem__", "__array__", "__dlpack__", "__dlpack_device__",
           "__bool__", "__index__", "__int__", "__float__", "__contains__", "__enter__", "__exit__", "__call__",
           "__await__", "__getstate__", "__reduce__", "__copy__", "__deepcopy__", "__repr__", "__str__",
           "__format__", "__hash__", "__eq__")


@pytest.mark.filterwarnings("ignore")
def test_every_public_call_answers_promptly_with_a_result_or_a_safetile_error(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)  # show('x') and friends write files here
    try:  # show() imports matplotlib on first use: seconds on a loaded machine, not the call's own time
        import matplotlib.figure  # noqa: F401
    except ImportError:
        pass
    default = ct.default_device()
    s = Surface()
    try:
        for name in safe_api.__all__:
            obj = getattr(safe_api, name)
            if name in SKIP_FUNCTIONS or not callable(obj) or isinstance(obj, ct.DType):
                continue
            if isinstance(obj, type) and issubclass(obj, BaseException):
                continue
            s.mutations(f"ct.{name}", obj)
        for hname, make in handles().items():
            cls = type(make())
            names = [n for n in dir(cls) if not n.startswith("_") and not _mutmut_name(n)] + \
                [n for n in DUNDERS if hasattr(cls, n)]
            for attr in names:
                s.call(f"{hname}.{attr}", lambda make=make, attr=attr: getattr(make(), attr))
                if not callable(getattr(cls, attr, None)):
                    continue
                s.call(f"{hname}.{attr}()", lambda make=make, attr=attr: getattr(make(), attr)())
                for oname, odd in ODD.items():
                    s.call(f"{hname}.{attr}({oname})", lambda make=make, attr=attr, odd=odd: getattr(make(), attr)(odd()))
                    s.call(f"{hname}.{attr}(0, {oname})",
                           lambda make=make, attr=attr, odd=odd: getattr(make(), attr)(0, odd()))
    finally:
        ct.set_default_device(default)
    capsys.readouterr()
    assert s.calls > 3000
    assert not s.bad, f"{len(s.bad)} of {s.calls} calls answered wrongly:\n" + "\n".join(s.bad)


def test_a_device_this_process_cannot_use_is_refused_when_the_op_is_built():
    import torch
    count = torch.cuda.device_count() if torch.cuda.is_available() else 0
    name = f"cuda:{count}"  # one past the last GPU (cuda:0 without any)
    for make in (lambda: ct.zeros(2, device=name), lambda: ct.to_device(t(2), name), lambda: ct.Stream(name),
                 lambda: ct.StreamPool(name, 1), lambda: ct.set_default_device(name)):
        with pytest.raises(ct.TensorError, match=rf"device '{name}' is not available: this process sees {count} CUDA"):
            make()
    assert ct.default_device() != name


def test_stream_pools_are_bounded():
    assert len(ct.StreamPool("cpu", np.int64(2)).streams) == 2
    with pytest.raises(ct.ArgumentError, match="at most 1024 streams, got 1180591620717411303424"):
        ct.StreamPool("cpu", 2 ** 70)
    with pytest.raises(ct.ArgumentError, match="must be an integer, got True"):
        ct.StreamPool("cpu", True)


def test_every_public_error_class_is_a_safetile_error():
    """Red team round 10 noted that host-side refusals shared no base with compile errors: one
    ``except ct.SafetileError`` now catches every error safetile raises for its user."""
    from safetile import tune
    from safetile.basic.program import BasicInputError
    from safetile.models.qwen3.config import CheckpointError
    from safetile.models.qwen3.engine import GenerationBusyError
    public = [v for v in vars(ct).values() if isinstance(v, type) and issubclass(v, Exception)
              and not issubclass(v, Warning)]
    assert len(public) > 20
    for cls in public + [tune.TuningError, BasicInputError, CheckpointError, GenerationBusyError]:
        assert issubclass(cls, ct.SafetileError), cls
