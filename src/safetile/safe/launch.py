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
import math
import weakref
import warnings
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, NoReturn

import numpy as np

from ..errors import ArgumentError
from ..frontend.kernel import const_signature
from ..runtime.env import backend_override
from .checks import Junk, Plan, check_memory, check_types
from .deviceop import DeviceOp, ExecContext
from .entry import EntryKernel
from .errors import AliasError, DeviceOpError, LaunchDroppedWarning, LaunchTypeError
from .facts import SCALARS, ArgFacts, facts_of, scalar_type_key, tensor_facts
from .memory import REGISTRY, moved_message, notify_all, own_alias, untraced, wait_until
from .ownership import OWNERSHIP, LazyText, Owned, Unique, caller_location, format_location
from .streams import current_context
from .partition import MappedPartition, Partition, Shared, base_partition
from .tensor import Tensor, check_torch_kind, torch_alias

if TYPE_CHECKING:
    from .memory import InFlight

_op_ids = itertools.count(1)
acquire, release = OWNERSHIP.acquire, OWNERSHIP.release  # the hot paths' lock calls, without `with`
try:
    from torch import Tensor as _TorchTensor
except ImportError:  # pragma: no cover - torch is optional on the CPU
    class _TorchTensor:  # type: ignore[no-redef]
        """Stands for torch.Tensor where torch is missing (no argument has this type)."""
_FACT_TYPES = (Partition, Shared, Tensor, MappedPartition)
_VALUE_TYPES = frozenset({int, float, bool})


def _arg_fact(is_const: bool, a: Any) -> Any:
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
    before touching anything. Ownership is not checked here (see ``LaunchOp._take``)."""
    return prepare_runtime(kernel, args)[0]


@untraced
def prepare_runtime(kernel: EntryKernel, args: tuple) -> tuple[Plan, tuple]:
    """``prepare``, and the launch's runtime arguments (read in the same pass). A raw NumPy array or
    torch tensor is replaced by safetile's own alias of it first (``memory.own_alias``): the checks
    read the alias's facts and the backend gets the alias, so re-pointing the raw array afterwards
    (or from inside the checks: a precondition, a ``__hash__``) cannot change what runs."""
    names = kernel.param_names
    if len(args) != len(names):
        raise LaunchTypeError(f"kernel {kernel.__name__!r} takes {len(names)} argument(s) ({', '.join(names)}), "
                              f"got {len(args)}")
    parts: list[Any] = []  # the key's per-argument part
    runtime = []
    checked: list | None = None  # the arguments as the checks see them (raw arrays: their aliases), if any raw
    for i, a in enumerate(args):
        ta = type(a)
        if ta is Partition or ta is Shared or ta is MappedPartition:
            f = a._facts
            t = a._tensor
            d = t._data
            if f is None or (t._torch and d.data_ptr() != f.extent.ptr):
                f = facts_of(a)
            parts.append(f)
            runtime.append(d)
        elif ta is Tensor:
            parts.append(tensor_facts(a))
            runtime.append(a._data)
        elif ta in _VALUE_TYPES:
            # 1, 1.0 and True are equal as dict keys: the type keeps them apart; 0.0 and -0.0 too: the
            # sign (a plan bakes its scalars into its GPU launch, and Constants compile into the kernel)
            parts.append((ta, a) if ta is not float or a != 0.0 else (ta, a, math.copysign(1.0, a)))
            runtime.append(a)
        elif ta is _TorchTensor:  # raw torch tensor (a Ref): its alias's facts, read on every launch
            al = torch_alias(a, f"argument {names[i]!r} of kernel {kernel.__name__!r}")
            parts.append((al.data_ptr(), al.dtype, al.shape, al.stride(), al.get_device()))
            runtime.append(al)
            if checked is None:
                checked = list(args)
            checked[i] = al
        elif isinstance(a, _FACT_TYPES):
            parts.append(facts_of(a))
            runtime.append(a._data if isinstance(a, Tensor) else a._tensor._data)
        else:
            al = own_alias(a)
            if al is None:
                parts.append(_fact_key(a))
                runtime.append(a)
            else:
                if not isinstance(al, np.ndarray):  # a torch tensor subclass's alias
                    check_torch_kind(al, f"argument {names[i]!r} of kernel {kernel.__name__!r}")
                parts.append(facts_of(al))
                runtime.append(al)
                if checked is None:
                    checked = list(args)
                checked[i] = al
    key = (kernel.config_key, backend_override(), tuple(parts))
    caches = kernel.caches
    if not caches.captured.check():  # Python state the compiled code folded in: unchanged?
        caches.refresh()
    runtime_t = tuple(runtime)
    seen, plan = caches.last  # the latest plan: its key compared (identity per fact), not hashed
    if key != seen:
        plan = caches.plans.get(key)
        if plan is None:  # checked on the aliases; runs the callable preconditions too
            plan = _check(kernel, args if checked is None else tuple(checked), key, runtime_t)
            caches.last = (key, plan)
            return plan, runtime_t
        caches.last = (key, plan)
    if kernel.callable_preconditions:  # a reused plan: the callables may read state that changed
        for pc in kernel.callable_preconditions:
            pc.check(plan.precondition_values)
    return plan, runtime_t


def _fact_key(a: Any) -> Any:
    """The key part of an argument that is not a safetile value, an array, a plain scalar or a torch
    tensor (a Constant's tuple or dataclass): its value, and what == ignores about it."""
    try:
        hash(a)
        return (type(a), a, const_signature(a))
    except (TypeError, ArgumentError):
        return Junk(type(a).__name__)


def _check(kernel: EntryKernel, args: tuple, key: tuple, runtime: tuple) -> Plan:
    """Run the checks (the type-level part cached separately) and store the plan under ``key``."""
    facts = tuple(_arg_fact(c, a) for c, a in zip(kernel.const_flags, args))
    tkey = (key[0], key[1], tuple(f.type_key if type(f) is ArgFacts else
                                  scalar_type_key(f) if isinstance(f, SCALARS) and not c else
                                  (type(f), f, const_signature(f))  # a Constant compiles in: what == ignores too
                                  for f, c in zip(facts, kernel.const_flags)))
    caches = kernel.caches
    tc = caches.types.get(tkey)  # pragma: no mutate (a cache: checking the types again gives the same)
    if tc is None:
        tc = caches.store(caches.types, tkey, check_types(kernel, facts))
    plan = check_memory(kernel, tc, facts)
    # torch memory the launch was checked on: its storage can still be reallocated under the alias
    plan.pins = tuple((i, name, f.extent.ptr) for i, (name, f, r) in enumerate(zip(kernel.param_names, facts, runtime))
                      if type(f) is ArgFacts and not isinstance(r, np.ndarray))
    return caches.store(caches.plans, key, plan)


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


class _OpRef(weakref.ref):
    """A weak reference to a launch that formats as what a moved argument's error names."""

    __slots__ = ()

    def __str__(self) -> str:
        op = self()
        if op is None:
            return "a launch that no longer exists"
        return (f"{op.label}; it is given back by that launch's result (e.g. `z, x, y = op.sync()`) or by "
                "op.cancel()")


# ------------------------------------------------------------------------------ running

@untraced
def check_pins(plan: Plan, runtime: tuple) -> None:
    """Refuse a launch whose torch memory moved (a storage reallocated) since it was checked."""
    for i, name, ptr in plan.pins:
        if runtime[i].data_ptr() != ptr:
            raise AliasError(moved_message(name, "the launch was checked"))


def run_plan(plan: Plan, runtime: tuple, stream=None) -> None:
    """Run a checked launch on its backend (no ownership bookkeeping), if its torch memory has not
    moved since it was checked."""
    check_pins(plan, runtime)
    c = plan.compiled
    if plan.backend == "cpu":
        if plan.device != "cpu":
            raise LaunchTypeError("the CPU backend runs on host memory; these arguments live on "
                                  f"{plan.device}")
        from ..runtime.launch import run_cpu
        run_cpu(c.fn, plan.grid3, c.shim, runtime)
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


class LaunchOp(DeviceOp, Unique):
    """A lazy launch of an entry kernel; running it returns the arguments, same kinds in as out.

    States: new (being made) → built (arguments moved in) → running → done / failed; or built →
    cancelled (``cancel()``, dropped unrun, or its borrow ended); or new → rejected (a borrow ended
    while it was being made). Transitions happen under ``OWNERSHIP``."""

    __slots__ = ("_state", "kernel", "args", "arity", "id", "_site", "_plan", "_runtime", "_inflight", "_ref",
                 "_into")

    def __init__(self, kernel: EntryKernel, args: tuple):
        self._state = "new"  # not holding anything yet (a failing constructor gives nothing back)
        self.kernel = kernel
        self.args = args = tuple(args)
        self.arity = len(args)
        self.id = next(_op_ids)
        self._site = caller_location(3)  # past this constructor and EntryKernel.__call__
        self._plan: Plan | None = None
        self._runtime: tuple = ()
        self._inflight: InFlight | None = None  # its in-flight entry, once it runs on a stream
        # what moved arguments point back to, weakly (a dropped op is freed), and what their
        # use-after-move errors name
        self._ref = self._into = _OpRef(self)
        for a in args:
            if isinstance(a, DeviceOp):  # resolved when the op runs
                values = [a for a in args if not isinstance(a, DeviceOp)]
                self._take(values, None)
                self._built(values)
                return
        self._take(args, kernel)
        try:
            self._plan, self._runtime = prepare_runtime(kernel, args)
        except BaseException:  # still "new": the op never reaches the caller
            self._give_back(args)
            raise
        self._built(args)

    @property
    def site(self) -> str:
        """``file:line`` where the launch was created."""
        return format_location(self._site)

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
        """Check every value usable and move it in, as one step (a value passed twice is found
        moved at its second place). Optimistic: values are moved while checked; at the first
        refusal the moves are undone and the worded check (``check_ownership``) raises."""
        ref = self._ref
        into = self._into
        acquire()
        try:
            moved = []
            for a in values:
                ta = type(a)
                if ta is Shared:
                    if a._unwrapped is not None:
                        break
                    a._holders += 1
                elif ta is Partition or ta is Tensor:
                    if a._moved is not None or (a._released if ta is Partition else a._borrow is not None):
                        break
                    lent = a._lent  # given back to a running terminal: only that terminal's code may use it
                    if lent is not None and lent is not current_context():
                        break
                    a._moved = into
                    a._holder = ref
                elif isinstance(a, (Owned, Shared)):
                    break  # anything rarer: the worded check decides
                else:
                    continue  # pragma: no mutate (break: a plain value passes the worded checks below too)
                moved.append(a)
            else:
                # a tensor or partition passed twice was refused above (moved at its first place); a
                # Shared handle may be read through several parameters (never written: it is no partition)
                return
            self._undo(moved)
            if kernel is not None:
                check_ownership(kernel, tuple(values))
            for a in values:
                if isinstance(a, (Owned, Shared)):
                    a._check("passed to a launch")
            for a in values:  # every check passed (a rare kind of value): move them
                if isinstance(a, Shared):
                    a._holders += 1
                elif isinstance(a, Owned):
                    a._moved = into
                    a._holder = ref
        finally:
            release()

    def _built(self, values) -> None:
        """Become "built", unless a borrow of a value moved in has ended meanwhile: its exit, on
        another thread, found this op unbuilt (so neither cancelled it nor waited for a run) and
        went on; then refused, everything given back. Decided under OWNERSHIP, where the exit
        marks its partitions released before it looks at their holder."""
        acquire()
        try:
            ended = next((a for a in values if (p := base_partition(a)) is not None and p._released), None)
            self._state = "built" if ended is None else "rejected"
        finally:
            release()
        if ended is not None:
            self._give_back(values)
            ended._check(f"passed to {self.label}")  # raises: the borrow ended

    def _undo(self, moved: list) -> None:
        for a in moved:
            if type(a) is Shared:
                a._holders -= 1
            elif a._holder is self._ref:
                a._moved = None
                a._holder = None

    def _give_back(self, values, ctx: ExecContext | None = None) -> None:
        ref = self._ref
        acquire()
        try:
            for a in values:
                ta = type(a)
                if ta is Shared:
                    a._holders -= 1
                elif isinstance(a, Owned) and a._holder is ref:
                    a._moved = None
                    a._holder = None
                    if ctx is not None and a._lent is not ctx:
                        a._lent = ctx
                        ctx.lent.append(a)
        finally:
            release()

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
                "rejected": "been rejected", "cancelled": "been cancelled",
                "abandoned": "been abandoned"}.get(self._state, self._state)  # "dropped": no one holds it to ask

    def __del__(self):  # pragma: no mutate block (a finalizer: mutmut cannot trace inside one)
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

    def _reconfigure(self, kernel: EntryKernel) -> LaunchOp:
        if self._state != "built":
            raise DeviceOpError(f"{self.label} has {self._state_text()}; configure the kernel before launching")
        try:
            if self._plan is not None:  # checked again on fresh aliases: the plan and its runtime go together
                self._plan, self._runtime = prepare_runtime(kernel, self.args)
        except Exception:
            if self._set_state(("built",), "rejected"):
                self._give_back(self.args)
            raise
        self.kernel = kernel
        return self

    def _configure(self, make) -> LaunchOp:
        try:
            k = make()
        except Exception:
            if self._set_state(("built",), "rejected"):
                self._give_back(self.args)
            raise
        return self._reconfigure(k)

    def grid(self, grid) -> LaunchOp:
        """Set an explicit grid (checked against the partitions; a rejected launch gives its arguments back)."""
        return self._configure(lambda: self.kernel.grid(grid))

    def generics(self, mapping=None, **values) -> LaunchOp:
        """Set explicit const generics (a rejected launch gives its arguments back)."""
        return self._configure(lambda: self.kernel.generics(mapping, **values))

    # ------------------------------------------------------------------ execution

    def _run(self, ctx: ExecContext):
        # the Python path: while the C twin is loaded, a C method in this name runs the common case
        # (``FAST.run``) and calls this for the rest (safe/native_methods.py)
        acquire()
        try:  # (zero cost)
            state = self._state
            if state == "built":
                self._state = "running"
        finally:
            release()
        if state != "built":
            raise DeviceOpError(f"{self.label} has {self._state_text()}; a launch runs once (use .shared() "
                                "to reuse a result, or a graph to replay)")
        return self._execute(ctx)

    def _execute(self, ctx: ExecContext):
        """The launch, once it is ``running``: claim its memory, submit it, give the arguments back."""
        args = self.args
        try:
            plan = self._plan
            if plan is None:
                args, plan = self._resolve(ctx)
            if ctx.capturing:
                runtime = self._runtime
                ctx.recorder.record(self.label, lambda stream, p=plan, r=runtime: run_plan(p, r, stream),
                                    plan.writes, plan.reads, plan.device, args,
                                    zip(self.kernel.param_names, args),
                                    [(name, runtime[i], ptr) for i, name, ptr in plan.pins])
            else:
                # the terminal's in-flight entry gets this launch's memory, atomically with the conflict
                # check: conflicting work of other terminals is ordered first (this stream's by the stream)
                entry = ctx.entry
                stream = ctx.stream
                device = plan.checked.device
                if entry is None or device != stream.device or not REGISTRY.reclaim(entry, plan):
                    entry = ctx.begin(self, plan, plan.writes, plan.reads, device)
                    stream = ctx.stream  # begin may have moved the terminal to a stream of the device
                self._inflight = entry
                if stream.is_cuda:  # the arguments' memory outlives this op until the terminal's work is over
                    ctx.keep_runtime(self._runtime)
                try:
                    bound = plan.bound  # set only for GPU plans: run_plan's common case, inline
                    if bound and stream.device_index == bound.device:
                        check_pins(plan, self._runtime)
                        bound(stream.handle)
                    else:
                        run_plan(plan, self._runtime, stream)
                finally:
                    entry.set_enqueued()
        except BaseException as e:
            self._fail(ctx, e)
        self._give_back(args, ctx)
        self._state = "done"
        notify_all()
        return args

    def _fail(self, ctx: ExecContext, exc: BaseException | None = None) -> NoReturn:
        """The launch failed after it started: give the arguments back and raise ``exc`` (None: the
        torch memory of its plan moved since it was checked; the C path leaves the wording here)."""
        self._give_back(self.args, ctx)
        self._state = "failed"
        notify_all()
        if exc is None:
            if self._plan is not None:
                check_pins(self._plan, self._runtime)
            exc = AliasError(f"{self.label}: its torch memory moved since the launch was checked")
        raise exc

    def _resolve(self, ctx: ExecContext) -> tuple[tuple, Plan]:
        """Run the DeviceOp arguments, take what they produced, check the launch."""
        results = list(self.args)
        for i, a in enumerate(self.args):
            if isinstance(a, DeviceOp):
                results[i] = a._run(ctx)
        resolved = tuple(results)
        produced = [r for r, a in zip(resolved, self.args) if isinstance(a, DeviceOp)]
        self._take(produced, None)
        try:
            with OWNERSHIP:  # the produced values were just taken: only duplicates can fail here
                _check_duplicates(self.kernel, resolved)
            self._plan, self._runtime = prepare_runtime(self.kernel, resolved)
        except BaseException:
            self._give_back(produced, ctx)
            raise
        self.args = resolved
        return resolved, self._plan


def _check_duplicates(kernel: EntryKernel, values: Sequence[Any]) -> None:
    """The same value passed twice where unsafe (values already moved into this launch)."""
    seen: dict[int, str] = {}
    for name, a in zip(kernel.param_names, values):
        if isinstance(a, Owned):  # a Shared handle may be read by several parameters (never a mutable one:
            if id(a) in seen:     # the launch's type check refuses that)
                raise AliasError(f"kernel {kernel.__name__!r}: the same {a.label} is passed as argument "
                                 f"{seen[id(a)]!r} and argument {name!r}; a mutable argument must not alias "
                                 "any other argument, and a tensor moves into one parameter only")
            seen[id(a)] = name

