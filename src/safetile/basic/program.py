"""A compiled BASIC program: metadata, the kernel, and running it on a backend.

The program is one kernel. Its parameters are, in order: the ``INPUT`` items (scalars are
int32 unless declared ``AS SINGLE``; arrays have the element type of their ``DIM``), the
``OUTPUT`` arrays that are not also inputs, then hidden ones the host fills in: the
``DATA`` table (float64), one scratch array per local ``DIM`` array (one row per block,
zero-filled, so uninitialised elements read 0) and the ``RND`` seed. The grid is
∏ ceil(size / tile) over the axes of the first ``OUTPUT`` array, flattened to one
dimension (``BID`` is the linear block index); a program without ``OUTPUT`` runs as one
block.
"""
from __future__ import annotations

import keyword
import os
from dataclasses import dataclass
from typing import Any

import numpy as np

from .. import dtypes as dt
from ..frontend.kernel import ArraySpec, ScalarSpec
from ..runtime.kernel import Kernel
from ..ir.core import Function
from ..ir.printer import format_function
from . import ast as A
from .analyzer import Analysis, ArrayInfo, ScalarInput, analyze
from .errors import BasicError
from .lexer import Source, dump_tokens, tokenize
from .lower import Lowerer, lower
from .parser import parse


class BasicInputError(ValueError):
    """The inputs given to a run do not fit the program (missing, wrong shape ...)."""


@dataclass(frozen=True)
class Parameter:
    """One kernel parameter as the host sees it."""

    name: str  # BASIC name (or __data / __local_X / __seed for hidden ones)
    kind: str  # 'scalar' | 'array'
    role: str  # 'input' | 'output' | 'inout' | 'data' | 'local' | 'seed'
    dtype: dt.DType
    ndim: int = 0


class BasicKernel(Kernel):
    """A ``Kernel`` whose IR comes from a BASIC program (launchable with ``ct.launch``)."""

    def __init__(self, program: "BasicProgram"):
        names = []
        seen: set[str] = set()
        for p in program.function.params:
            n = p.name if p.name.isidentifier() and not keyword.iskeyword(p.name) else f"p_{len(names)}"
            while n in seen:
                n += "_"
            seen.add(n)
            names.append(n)
        stem = "".join(c if c.isalnum() else "_" for c in os.path.splitext(os.path.basename(program.filename))[0])
        fname = "basic_" + (stem or "program")
        if not fname.isidentifier():
            fname = "basic_program"
        ns: dict[str, Any] = {}
        exec(f"def {fname}({', '.join(names)}):\n    pass\n", ns)  # noqa: S102 - generated signature only
        super().__init__(ns[fname])
        self.program = program
        self.expected_specs = tuple(
            ArraySpec(p.dtype, p.ndim) if p.kind == "array" else ScalarSpec(p.dtype) for p in program.parameters)

    def specialize(self, specs):
        if tuple(specs) != self.expected_specs:
            raise TypeError(f"BASIC kernel {self.__name__}: arguments {specs} do not match its parameters "
                            f"{self.expected_specs}")
        return self.program.function


class BasicProgram:
    """A BASIC program compiled to one tile kernel."""

    def __init__(self, source: str, filename: str, lines, program: A.Program, analysis: Analysis,
                 function: Function, lowerer: Lowerer):
        self.source = source
        self.filename = filename
        self.token_lines = lines
        self.ast = program
        self.analysis = analysis
        self.function = function
        self.lowerer = lowerer
        self.parameters: list[Parameter] = []
        for p in function.params:
            role = lowerer.param_names[p.name]
            if p.kind == "scalar":
                if role == "seed":
                    self.parameters.append(Parameter("__seed", "scalar", "seed", dt.int32))
                else:
                    self.parameters.append(Parameter(role, "scalar", "input", p.value.type.dtype))
                continue
            t = p.value.type
            if role == "DATA":
                self.parameters.append(Parameter("__data", "array", "data", t.dtype, t.ndim))
            elif role.startswith("local "):
                self.parameters.append(Parameter(role[6:], "array", "local", t.dtype, t.ndim))
            else:
                self.parameters.append(Parameter(role, "array", analysis.arrays[role].kind, t.dtype, t.ndim))
        self._kernel: BasicKernel | None = None

    # ------------------------------------------------------------------ metadata

    @property
    def inputs(self) -> list[ScalarInput | ArrayInfo]:
        """The INPUT items in order (``ScalarInput`` or ``ArrayInfo``)."""
        return list(self.analysis.inputs)

    @property
    def scalar_inputs(self) -> dict[str, ScalarInput]:
        return dict(self.analysis.scalar_inputs)

    @property
    def arrays(self) -> dict[str, ArrayInfo]:
        return dict(self.analysis.arrays)

    @property
    def outputs(self) -> list[str]:
        return [a.name for a in self.analysis.outputs]

    @property
    def tiles(self) -> dict[str, tuple[int, ...]]:
        """Tile shapes of tiled arrays and tile variables."""
        out = {n: a.tile for n, a in self.analysis.arrays.items() if a.tile is not None}
        out.update({n: v[0] for n, v in self.analysis.tile_vars.items()})
        return out

    @property
    def kernel(self) -> BasicKernel:
        if self._kernel is None:
            self._kernel = BasicKernel(self)
        return self._kernel

    def ir(self) -> str:
        return format_function(self.function)

    def dims(self, name: str) -> list[str]:
        """The DIM size expressions of an array, as text."""
        return [A.expr_text(e) for e in self.analysis.arrays[name].sizes]

    def array_shape(self, name: str, scalars: dict[str, Any]) -> tuple[int, ...]:
        """The shape of an INPUT/OUTPUT array (``DIM A(N)`` is N elements) or of a local
        array (``DIM A(N)`` is N + 1 elements, indices 0 to N) for these scalar inputs."""
        arr = self.analysis.arrays[name]
        shape = []
        for e in arr.sizes:
            v = self.analysis.host_eval(e, scalars, line=arr.line)
            if not float(v).is_integer() or v < 0:
                raise BasicInputError(f"DIM {name}: size {A.expr_text(e)} = {v} is not a non-negative integer")
            shape.append(int(v) + (1 if arr.is_local else 0))
        return tuple(shape)

    def grid(self, scalars: dict[str, Any]) -> int:
        """The number of blocks: ∏ ceil(size / tile) of the first OUTPUT array (1 without OUTPUT)."""
        if not self.analysis.outputs:
            return 1
        arr = self.analysis.outputs[0]
        shape = self.array_shape(arr.name, scalars)
        n = 1
        for size, t in zip(shape, arr.tile):
            n *= -(-size // t)
        return max(n, 1)

    def describe(self) -> str:
        """A human-readable summary of the program's interface."""
        rows = [f"program {self.filename}"]
        for item in self.analysis.inputs:
            if isinstance(item, ScalarInput):
                rows.append(f"  INPUT {item.name}: {item.dtype.name} scalar")
            else:
                tile = f", tile {item.tile}" if item.tile else ""
                rows.append(f"  INPUT {item.name}({', '.join(self.dims(item.name))}): {item.dtype.name}{tile}")
        for arr in self.analysis.outputs:
            rows.append(f"  OUTPUT {arr.name}({', '.join(self.dims(arr.name))}): {arr.dtype.name}, tile {arr.tile}")
        return "\n".join(rows)

    # ------------------------------------------------------------------ running

    def prepare(self, inputs: dict[str, Any] | None = None, seed: int = 0) -> tuple[tuple, int, dict]:
        """Host arguments for a launch: (args, number of blocks, output arrays by name).

        ``inputs`` maps INPUT names to numbers (scalars) and arrays; an array may also be
        the string ``"random"`` (filled from ``seed``). Scalars that size an array given as
        data are taken from its shape when not given.
        """
        inputs = dict(inputs or {})
        an = self.analysis
        rng = np.random.default_rng(seed)
        unknown = [k for k in inputs if k not in an.scalar_inputs and not (k in an.arrays and an.arrays[k].is_input)]
        if unknown:
            names = ", ".join([s.name for s in an.inputs if isinstance(s, ScalarInput)] +
                              [a.name for a in an.inputs if isinstance(a, ArrayInfo)])
            raise BasicInputError(f"unknown input {unknown[0]!r}; the program's INPUTs are: {names or 'none'}")
        scalars: dict[str, Any] = {}
        for name, si in an.scalar_inputs.items():
            if name in inputs:
                scalars[name] = self._scalar(name, si.dtype, inputs[name])
        # scalars implied by the shapes of arrays given as data
        for arr in an.inputs:
            if isinstance(arr, ArrayInfo) and arr.name in inputs and not isinstance(inputs[arr.name], str):
                data = np.asarray(inputs[arr.name])
                if data.ndim != arr.ndim:
                    raise BasicInputError(f"input {arr.name} must have {arr.ndim} dimension(s) (DIM "
                                          f"{arr.name}({', '.join(self.dims(arr.name))})), got shape {data.shape}")
                for axis, e in enumerate(arr.sizes):
                    if isinstance(e, A.Var) and e.name in an.scalar_inputs and e.name not in scalars:
                        scalars[e.name] = self._scalar(e.name, an.scalar_inputs[e.name].dtype, data.shape[axis])
        missing = [n for n in an.scalar_inputs if n not in scalars]
        if missing:
            raise BasicInputError(f"missing input {missing[0]} (give it as {missing[0]}=VALUE)")
        args: list[Any] = []
        outputs: dict[str, np.ndarray] = {}
        grid = self.grid(scalars)
        for p in self.parameters:
            if p.role == "seed":
                args.append(np.int32((int(seed) + 2 ** 31) % 2 ** 32 - 2 ** 31))
            elif p.kind == "scalar":
                args.append(scalars[p.name])
            elif p.role == "data":
                vals = [float(v) for v, _ in an.data] or [0.0]
                args.append(np.array(vals, dtype=np.float64))
            elif p.role == "local":
                shape = self.array_shape(p.name, scalars)
                args.append(np.zeros((grid,) + shape, dtype=p.dtype.np_dtype))
            else:
                shape = self.array_shape(p.name, scalars)
                if p.role in ("input", "inout"):
                    if p.name not in inputs:
                        raise BasicInputError(f"missing input array {p.name} (give it as {p.name}=@file.npy or "
                                              f"{p.name}=random)")
                    value = inputs[p.name]
                    if isinstance(value, str):
                        if value != "random":
                            raise BasicInputError(f"input {p.name}: expected an array or 'random', got {value!r}")
                        data = _random(rng, shape, p.dtype)
                    else:
                        data = np.asarray(value)
                        if data.shape != shape:
                            raise BasicInputError(f"input {p.name} has shape {data.shape} but DIM "
                                                  f"{p.name}({', '.join(self.dims(p.name))}) is {shape}")
                        data = np.ascontiguousarray(data.astype(p.dtype.np_dtype, copy=p.role == "inout"))
                    args.append(data)
                    if p.role == "inout":
                        outputs[p.name] = data
                else:
                    out = np.zeros(shape, dtype=p.dtype.np_dtype)
                    args.append(out)
                    outputs[p.name] = out
        return tuple(args), grid, outputs

    def _scalar(self, name: str, dtype: dt.DType, value: Any):
        if isinstance(value, str):
            try:
                value = float(value) if dtype.is_float else int(value, 0)
            except ValueError:
                raise BasicInputError(f"input {name} must be {'a number' if dtype.is_float else 'an integer'}, "
                                      f"got {value!r}") from None
        if dtype.is_float:
            return float(np.float32(value))
        if isinstance(value, (float, np.floating)) and not float(value).is_integer():
            raise BasicInputError(f"input {name} is an integer, got {value}")
        v = int(value)
        if not -(2 ** 31) <= v < 2 ** 31:
            raise BasicInputError(f"input {name} = {v} does not fit in int32")
        return v

    def run(self, inputs: dict[str, Any] | None = None, backend: str = "cpu", seed: int = 0) -> dict[str, np.ndarray]:
        """Run the program; PRINT output goes to ``sys.stdout``. Returns the OUTPUT arrays."""
        args, grid, outputs = self.prepare(inputs, seed)
        launch(self.kernel, grid, args, backend)
        return outputs


def _random(rng: np.random.Generator, shape: tuple, dtype: dt.DType) -> np.ndarray:
    if dtype.is_int:
        return rng.integers(-100, 101, size=shape).astype(dtype.np_dtype)
    return rng.uniform(-1.0, 1.0, size=shape).astype(dtype.np_dtype)


def launch(kernel: BasicKernel, grid: int, args: tuple, backend: str = "cpu") -> None:
    """Run a BASIC kernel over ``grid`` blocks on the CPU backend or the GPU (Triton) backend."""
    from ..runtime.args import arg_specs
    from ..runtime.launch import normalize_grid
    grid3 = normalize_grid((grid,))
    if backend == "cpu":
        from ..runtime.launch import run_cpu
        fn = kernel.specialize(arg_specs(kernel, args))
        run_cpu(fn, grid3, kernel, args)
        return
    if backend not in ("gpu", "triton"):
        raise ValueError(f"unknown backend {backend!r}; use 'cpu' or 'gpu'")
    try:
        from ..backends.triton.launcher import interpreting, launch_gpu
    except ImportError as e:  # pragma: no cover - depends on the installation
        raise RuntimeError(f"the GPU backend is not available: {e}") from None
    host = tuple(a.item() if isinstance(a, np.generic) else a for a in args)
    specs = arg_specs(kernel, host)
    fn = kernel.specialize(specs)
    if interpreting():
        launch_gpu(None, grid3, kernel, fn, specs, host)
        return
    try:
        import torch
    except ImportError:  # pragma: no cover
        raise RuntimeError("the GPU backend needs torch (pip install 'safetile[gpu]')") from None
    if not torch.cuda.is_available():
        raise RuntimeError("the GPU backend needs an NVIDIA GPU (torch.cuda.is_available() is False); "
                           "set TRITON_INTERPRET=1 to run Triton's interpreter on the CPU")
    from ..backends.triton.launcher import _numpy_to_torch
    dev = [(_numpy_to_torch(a).cuda() if isinstance(a, np.ndarray) else a) for a in host]
    launch_gpu(None, grid3, kernel, fn, specs, tuple(dev))
    torch.cuda.synchronize()
    for a, d in zip(host, dev):
        if isinstance(a, np.ndarray):
            back = d.cpu()
            if a.dtype.name == "bfloat16":
                import torch as _t
                back = back.view(_t.int16)
            a[...] = back.numpy().view(a.dtype)


def compile_program(source: str, filename: str = "<basic>") -> BasicProgram:
    """Compile BASIC source into a ``BasicProgram``; raises ``BasicError`` listing every problem."""
    import sys
    src = Source(source, filename)
    errors: list[BasicError] = []
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 20000))
    try:
        lines = tokenize(src, errors)
        program = parse(src, errors, lines)
        if errors:
            raise BasicError.collect(errors)
        an = analyze(program, src, errors)
        if errors:
            raise BasicError.collect(errors)
        fn, low = lower(an, _kernel_name(filename))
    except BasicError:
        raise
    except RecursionError:
        raise BasicError("the program is nested too deeply to compile") from None
    except Exception as e:  # noqa: BLE001 - never a raw traceback for a bad program
        raise BasicError(f"internal compiler error: {type(e).__name__}: {e}", internal=True) from e
    finally:
        sys.setrecursionlimit(limit)
    return BasicProgram(source, filename, lines, program, an, fn, low)


def _kernel_name(filename: str) -> str:
    stem = "".join(c if c.isalnum() else "_" for c in os.path.splitext(os.path.basename(filename))[0])
    return "basic_" + (stem or "program")


def compile_file(path: str) -> BasicProgram:
    with open(path, encoding="utf-8") as f:
        return compile_program(f.read(), path)


def dump(source: str, what: str, filename: str = "<basic>") -> str:
    """``tokens``, ``ast`` or ``ir`` of a program (as ``safetile check --dump`` shows)."""
    src = Source(source, filename)
    if what == "tokens":
        return dump_tokens(tokenize(src))
    if what == "ast":
        return A.dump(parse(src))
    if what == "ir":
        return compile_program(source, filename).ir()
    raise ValueError(f"unknown dump {what!r}; use tokens, ast or ir")
