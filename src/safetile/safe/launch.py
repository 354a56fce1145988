"""The launch boundary of entry kernels: check, move arguments in, run, give them back.

A launch is checked completely before anything happens (``checks.py``: kinds, element
types, shapes, generics, power-of-two sub-tensors, the grid, compilation, memory aliasing
including self-overlap, preconditions). The checks are a pure function of the arguments'
facts (``facts.py``), so ``prepare`` caches their result, the ``Plan``, keyed on exactly
those facts; a launch with the same facts reuses it, anything else is checked again.
Ownership is state, not a fact: ``take`` checks that every argument is usable and moves
it in as one atomic step (``ownership.OWNERSHIP``), so two threads can never launch from
one value. Running the ``LaunchOp`` gives every argument back as the kind it came in
(partition → partition, shared → shared, tensor → tensor); dropping an unrun one (or
``cancel()``) gives them back too.
"""
from __future__ import annotations

import itertools
import warnings
from typing import Any

from ..runtime.env import backend_override
from .checks import Junk, Plan, check_memory, check_types
from .deviceop import DeviceOp, ExecContext
from .entry import EntryKernel
from .errors import AliasError, DeviceOpError, LaunchDroppedWarning, LaunchTypeError
from .facts import SCALARS, ArgFacts, facts_of, scalar_type_key, tensor_facts
from .memory import notify_all, wait_until
from .ownership import OWNERSHIP, LazyText, Owned, caller_site
from .partition import MappedPartition, Partition, Shared
from .tensor import Tensor

_op_ids = itertools.count(1)
_FACT_TYPES = (Partition, Shared, Tensor, MappedPartition)
_VALUE_TYPES = frozenset({int, float, bool})


def _arg_fact(kernel: EntryKernel, is_const: bool, a: Any) -> Any:
    """One argument's fact: ``ArgFacts``, a scalar or constant value (hashable), or ``Junk``."""
    f = facts_of(a)
    if f is not None:
        return f
    if is_const or isinstance(a, SCALARS):
        try:
            hash(a)
            return a
        except TypeError:
            pass
    return Junk(type(a).__name__)


def prepare(kernel: EntryKernel, args: tuple) -> Plan:
    """The checked plan of a launch with ``args`` (cached on every fact the checks read); raises
    before touching anything. Ownership is not checked here (see ``take``)."""
    names = kernel.param_names
    if len(args) != len(names):
        raise LaunchTypeError(f"kernel {kernel.__name__!r} takes {len(names)} argument(s) ({', '.join(names)}), "
                              f"got {len(args)}")
    facts = []
    for is_const, a in zip(kernel.const_flags, args):
        ta = type(a)
        if ta is Tensor:
            facts.append(tensor_facts(a))
        elif ta in _VALUE_TYPES:
            facts.append(a)
        else:
            facts.append(_arg_fact(kernel, is_const, a))
    # a scalar's key carries its type too: 1, 1.0 and True are equal as dict keys
    key = (kernel.config_key, backend_override(),
           tuple(f if type(f) is ArgFacts else (type(f), f) for f in facts))
    caches = kernel.caches
    plan = caches.plans.get(key)
    if plan is not None:
        return plan
    facts = tuple(facts)
    tkey = (key[0], key[1], tuple(f.type_key if type(f) is ArgFacts else
                                  scalar_type_key(f) if isinstance(f, SCALARS) and not c else (type(f), f)
                                  for f, c in zip(facts, kernel.const_flags)))
    tc = caches.types.get(tkey)
    if tc is None:
        tc = caches.store(caches.types, tkey, check_types(kernel, facts))
    return caches.store(caches.plans, key, check_memory(kernel, tc, facts))


def runtime_args(args: tuple) -> tuple:
    """What the backend receives: each tensor-like argument's array, scalars and constants as given."""
    out = []
    for a in args:
        ta = type(a)
        if ta is Tensor:
            out.append(a._data)
        elif ta is Partition or ta is Shared or ta is MappedPartition or isinstance(a, _FACT_TYPES):
            out.append(a._tensor._data if not isinstance(a, Tensor) else a._data)
        else:
            out.append(a)
    return tuple(out)


def _passed_as(name: str, kname: str) -> str:
    return f"passed as argument {name!r} of kernel {kname!r}"


def check_ownership(kernel: EntryKernel, args: tuple) -> None:
    """Every argument usable (not moved, borrowed, released, unwrapped or in use by another
    running terminal) and no value passed twice where that is unsafe. Reads only."""
    kname = kernel.__name__
    seen: dict[int, tuple[str, bool]] = {}
    for name, mut, a in zip(kernel.param_names, kernel.mut_flags, args):
        if not isinstance(a, (Owned, Shared)):
            continue
        key = id(a)
        if key in seen:
            first, first_mut = seen[key]
            if mut or first_mut:
                raise AliasError(f"kernel {kname!r}: the same {a.label} is passed as argument {first!r} and "
                                 f"argument {name!r}; a mutable argument must not alias any other argument")
            if isinstance(a, Owned):
                raise AliasError(f"kernel {kname!r}: the same {a.label} is passed as argument {first!r} and "
                                 f"argument {name!r}; a tensor moves into one parameter only: pass "
                                 "ct.shared(t) to read it through several")
        seen[key] = (name, mut)
        a._check(LazyText(_passed_as, name, kname))


def _moved_into(kname: str, op_id: int, site: str) -> str:
    return (f"launch {kname!r} (op #{op_id}, created at {site}); it is given back by that launch's result "
            "(e.g. `z, x, y = op.sync()`) or by op.cancel()")


# ------------------------------------------------------------------------------ running

def run_plan(plan: Plan, runtime: tuple, stream=None, race_detector=None) -> None:
    """Run a checked launch on its backend (no ownership bookkeeping)."""
    c = plan.compiled
    if plan.backend == "cpu":
        if plan.device != "cpu":
            raise LaunchTypeError("the CPU backend runs on host memory; these arguments live on "
                                  f"{plan.device}")
        from ..runtime.launch import run_cpu
        run_cpu(c.fn, plan.grid3, c.shim, runtime, race_detector)
        return
    bound = plan.bound
    if bound and stream is not None and stream.device_index == bound.device:
        bound(stream.handle)  # the common case: a plan launched again on a stream of its device
        return
    runner = c.gpu
    if runner is None:  # the backend's launcher for this specialisation, kept with the compiled kernel
        try:
            from ..backends.triton.launcher import specialization
        except ImportError as e:
            raise LaunchTypeError(f"the Triton GPU backend is not available: {e}") from None
        runner = c.gpu = specialization(c.shim, c.fn, c.specs)
    if bound is None and stream is not None and stream.is_cuda:
        # the plan's key holds every pointer, shape, stride and scalar: resolve the arguments once
        bound = plan.bound = runner.bind(plan.grid3, runtime) or False
        if bound and stream.device_index == bound.device:
            bound(stream.handle)
            return
    # host memory goes to the launcher only in interpreter mode (TRITON_INTERPRET=1)
    runner(getattr(stream, "torch_stream", None), plan.grid3, runtime)


class LaunchOp(DeviceOp):
    """A lazy launch of an entry kernel; running it returns the arguments, same kinds in as out.

    States: built (arguments moved in) → running → done / failed; or built → cancelled
    (``cancel()``, dropped unrun, or its borrow ended). Transitions happen under ``OWNERSHIP``."""

    def __init__(self, kernel: EntryKernel, args: tuple):
        self._state = "new"  # not holding anything yet (a failing constructor gives nothing back)
        self.kernel = kernel
        self.args = args = tuple(args)
        self.arity = len(args)
        self.id = next(_op_ids)
        self.site = caller_site()
        self._plan: Plan | None = None
        self._inflight = None
        self._into = LazyText(_moved_into, kernel.__name__, self.id, self.site)
        if any(isinstance(a, DeviceOp) for a in args):  # resolved when the op runs
            self._take([a for a in args if not isinstance(a, DeviceOp)], None)
            self._state = "built"
            return
        self._take(args, kernel)
        self._state = "built"
        try:
            self._plan = prepare(kernel, args)
        except BaseException:
            self._state = "rejected"
            self._give_back(args)
            raise

    @property
    def label(self) -> str:
        return f"launch {self.kernel.__name__!r} (op #{self.id}, created at {self.site})"

    def _device(self):
        if self._plan is not None:
            return self._plan.device
        for a in self.args:
            if isinstance(a, DeviceOp):
                d = a._device()
                if d is not None:
                    return d
            else:
                f = facts_of(a)
                if f is not None:
                    return f.device
        return None

    # ------------------------------------------------------------------ ownership

    def _take(self, values, kernel: EntryKernel | None) -> None:
        """Check every value usable and move it in, as one step; with ``kernel``, also refuse a
        value passed twice where unsafe (``check_ownership``)."""
        with OWNERSHIP:
            if kernel is not None:
                check_ownership(kernel, tuple(values))
            else:
                for a in values:
                    if isinstance(a, (Owned, Shared)):
                        a._check("passed to a launch")
            held = []
            try:
                for a in values:
                    if isinstance(a, Shared):
                        a._hold()
                        held.append(a)
                    elif isinstance(a, Owned):
                        a._move(self._into, holder=self, check=False)
            except BaseException:
                for a in held:
                    a._release()
                raise

    def _give_back(self, values, ctx: ExecContext | None = None) -> None:
        with OWNERSHIP:
            for a in values:
                if isinstance(a, Shared):
                    a._release()
                elif isinstance(a, Owned) and a.holder is self:
                    a._give_back(ctx)

    def _children(self):
        return tuple(a for a in self.args if isinstance(a, DeviceOp))

    def _set_state(self, old: tuple, new: str) -> bool:
        with OWNERSHIP:
            if self._state not in old:
                return False
            self._state = new
        notify_all()
        return True

    def cancel_unrun(self) -> bool:
        """Cancel if it has not started: give the arguments back (True), else False."""
        if not self._set_state(("built",), "cancelled"):
            return False
        self._give_back(self.args)
        return True

    def cancel(self) -> tuple:
        """Give the arguments back without running (the op can never run afterwards)."""
        if not self.cancel_unrun():
            raise DeviceOpError(f"{self.label} cannot be cancelled: it has {self._state_text()}")
        return self.args

    def _state_text(self) -> str:
        return {"running": "started running", "done": "already run", "failed": "already failed",
                "rejected": "been rejected", "cancelled": "been cancelled", "abandoned": "been abandoned",
                "dropped": "been dropped"}.get(self._state, self._state)

    def __del__(self):
        try:
            if self._state == "built" and self._set_state(("built",), "dropped"):
                self._give_back(self.args)
                warnings.warn(f"{self.label} was dropped without being run; its arguments were given back",
                              LaunchDroppedWarning, stacklevel=2)
        except Exception:  # noqa: BLE001 - interpreter shutdown: nothing left to give back to
            pass

    def _abandon(self) -> None:
        if self._set_state(("built",), "abandoned"):
            self._give_back(self.args)
        super()._abandon()

    def _wait_finished(self) -> None:
        """Block until the launch has stopped running (and, on the GPU, its work has finished)."""
        wait_until(lambda: self._state != "running")
        ev = self._inflight
        if ev is not None:
            ev.wait_host()

    def _reconfigure(self, kernel: EntryKernel) -> "LaunchOp":
        if self._state != "built":
            raise DeviceOpError(f"{self.label} has {self._state_text()}; configure the kernel before launching")
        try:
            if self._plan is not None:
                self._plan = prepare(kernel, self.args)
        except Exception:
            if self._set_state(("built",), "rejected"):
                self._give_back(self.args)
            raise
        self.kernel = kernel
        return self

    def _configure(self, make) -> "LaunchOp":
        try:
            k = make()
        except Exception:
            if self._set_state(("built",), "rejected"):
                self._give_back(self.args)
            raise
        return self._reconfigure(k)

    def grid(self, grid) -> "LaunchOp":
        """Set an explicit grid (checked against the partitions; a rejected launch gives its arguments back)."""
        return self._configure(lambda: self.kernel.grid(grid))

    def generics(self, mapping=None, **values) -> "LaunchOp":
        """Set explicit const generics (a rejected launch gives its arguments back)."""
        return self._configure(lambda: self.kernel.generics(mapping, **values))

    # ------------------------------------------------------------------ execution

    def _run(self, ctx: ExecContext):
        if not self._set_state(("built",), "running"):
            raise DeviceOpError(f"{self.label} has {self._state_text()}; a launch runs once (use .shared() to "
                                "reuse a result, or a graph to replay)")
        resolved = list(self.args)
        try:
            for i, a in enumerate(self.args):
                if isinstance(a, DeviceOp):
                    resolved[i] = a._run(ctx)
            plan = self._plan
            if plan is None:
                produced = [r for r, a in zip(resolved, self.args) if isinstance(a, DeviceOp)]
                self._take(produced, None)
                try:
                    with OWNERSHIP:  # the produced values were just taken: only duplicates can fail here
                        _check_duplicates(self.kernel, resolved)
                    plan = self._plan = prepare(self.kernel, tuple(resolved))
                except BaseException:
                    self._give_back(produced)
                    raise
            runtime = runtime_args(tuple(resolved))
            if ctx.capturing:
                ctx.recorder.record(self.label, lambda stream, p=plan, r=runtime: run_plan(p, r, stream),
                                    plan.writes, plan.reads, plan.device)
            else:
                self._execute(plan, runtime, ctx)
        except BaseException:
            self._state = "failed"
            self._give_back(resolved, ctx)
            notify_all()
            raise
        self._state = "done"
        self._give_back(resolved, ctx)
        notify_all()
        return tuple(resolved)

    def _execute(self, plan: Plan, runtime: tuple, ctx: ExecContext) -> None:
        # the terminal's in-flight entry gets this launch's memory, atomically with the conflict check:
        # conflicting work of other terminals is ordered first (work on this stream by the stream)
        entry = self._inflight = ctx.begin(self, plan, plan.writes, plan.reads)
        try:
            run_plan(plan, runtime, ctx.stream)
        finally:
            entry.set_enqueued()


def _check_duplicates(kernel: EntryKernel, values: list) -> None:
    """The same value passed twice where unsafe (values already moved into this launch)."""
    seen: dict[int, tuple[str, bool]] = {}
    for name, mut, a in zip(kernel.param_names, kernel.mut_flags, values):
        if isinstance(a, (Owned, Shared)):
            if id(a) in seen and (mut or seen[id(a)][1] or isinstance(a, Owned)):
                raise AliasError(f"kernel {kernel.__name__!r}: the same {a.label} is passed as argument "
                                 f"{seen[id(a)][0]!r} and argument {name!r}; a mutable argument must not alias "
                                 "any other argument, and a tensor moves into one parameter only")
            seen[id(a)] = (name, mut)

