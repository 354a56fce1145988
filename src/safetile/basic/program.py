"""A compiled BASIC program: metadata, the kernel, and running it on a backend.

The program is one kernel. Its parameters are, in order: the ``INPUT`` items (scalars are
int32 unless declared ``AS SINGLE``/``AS DOUBLE``; a string is a 256-byte array and a
length; arrays have the element type of their ``DIM``), the ``OUTPUT`` arrays that are not
also inputs, then hidden ones the host fills in: the ``DATA`` table (float64 rows: the item
as a number or NaN, and its length as text), one scratch array per local array (one row
per block, zero-filled, so uninitialised elements read 0; a string array has a second one
for its lengths), the ``RND`` seed and the table of string bytes (DATA items, then string
constants; a row of 256 bytes each). The grid is ∏ ceil(size / tile) over the axes of the
first ``OUTPUT`` array, flattened to one dimension (``BID`` is the linear block index); a
program without ``OUTPUT`` runs as one block.

Names are case-insensitive: the host API takes ``A`` or ``a`` for the array ``A``.
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
from ..errors import SafetileError
from .errors import BasicError
from .lexer import Source, dump_tokens, tokenize
from .lowering import Lowerer, lower
from .parser import parse
from .vtypes import STRING, STRING_CAPACITY


class BasicInputError(SafetileError, ValueError):
    """The inputs given to a run do not fit the program (missing, wrong shape ...)."""


@dataclass(frozen=True)
class Parameter:
    """One kernel parameter as the host sees it."""

    name: str  # BASIC name as written (or __data / __text / __seed for hidden ones)
    kind: str  # 'scalar' | 'array'
    role: str  # input | output | inout | string | string length | data | text | local | lengths | seed
    dtype: dt.DType
    ndim: int = 0
    key: str = ""  # the canonical name (with its sigil: A!, N%, S$)


class BasicKernel(Kernel):
    """A ``Kernel`` whose IR comes from a BASIC program (launchable with ``ct.launch``)."""

    def __init__(self, program: BasicProgram):
        names: list[str] = []
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
        self.parameters = [self._parameter(lowerer.param_names[p.name], p) for p in function.params]
        self._kernel: BasicKernel | None = None

    def _parameter(self, role: str, p) -> Parameter:
        an = self.analysis
        t = p.value.type
        if role == "seed":
            return Parameter("__seed", "scalar", "seed", dt.int32)
        if role in ("DATA", "TEXT"):
            return Parameter("__" + role.lower(), "array", role.lower(), t.dtype, t.ndim)
        for prefix, what in (("local ", "local"), ("lengths ", "lengths"), ("length ", "string length")):
            if role.startswith(prefix):
                key = role[len(prefix):]
                return Parameter(an.show(key), p.kind, what, t.dtype, getattr(t, "ndim", 0), key)
        if p.kind == "scalar":
            return Parameter(an.show(role), "scalar", "input", t.dtype, 0, role)
        what = "string" if role in an.scalar_inputs else an.arrays[role].kind
        return Parameter(an.show(role), "array", what, t.dtype, t.ndim, role)

    # ------------------------------------------------------------------ metadata

    @property
    def inputs(self) -> list[ScalarInput | ArrayInfo]:
        """The INPUT items in order (``ScalarInput`` or ``ArrayInfo``; names canonical)."""
        return list(self.analysis.inputs)

    @property
    def scalar_inputs(self) -> dict[str, ScalarInput]:
        return dict(self.analysis.scalar_inputs)

    @property
    def arrays(self) -> dict[str, ArrayInfo]:
        return dict(self.analysis.arrays)

    @property
    def outputs(self) -> list[str]:
        return [self.analysis.show(a.name) for a in self.analysis.outputs]

    @property
    def tiles(self) -> dict[str, tuple[int, ...]]:
        """Tile shapes of tiled arrays and tile variables (names as written)."""
        show = self.analysis.show
        out = {show(n): a.tile for n, a in self.analysis.arrays.items() if a.tile is not None}
        out.update({show(n): v[0] for n, v in self.analysis.tile_vars.items()})
        return out

    @property
    def deferred(self) -> list[BasicError]:
        """Errors GW-BASIC raises when their statement runs (Syntax error, Type mismatch ...):
        the program runs up to them; ``safetile check`` reports them."""
        return [d.error for d in self.analysis.deferred.values()] + list(self.analysis.expr_errors)

    @property
    def kernel(self) -> BasicKernel:
        if self._kernel is None:
            self._kernel = BasicKernel(self)
        return self._kernel

    def ir(self) -> str:
        return format_function(self.function)

    def key(self, name: str) -> str:
        """The canonical form of a name given by the host (``a`` and ``A()`` are ``A!``)."""
        name = name.strip()
        name = name.removesuffix("()")
        return self.analysis.canon(name.upper())

    def dims(self, name: str) -> list[str]:
        """The DIM size expressions of an array, as text."""
        return [A.expr_text(e, self.analysis.show) for e in self.analysis.arrays[self.key(name)].sizes]

    def array_shape(self, name: str, scalars: dict[str, Any]) -> tuple[int, ...]:
        """The shape of an INPUT/OUTPUT array (``DIM A(N)`` is N elements) or of a local
        array (``DIM A(N)`` is N + 1 elements, indices 0 to N) for these scalar inputs."""
        arr = self.analysis.arrays[self.key(name)]
        scalars = {self.key(k): v for k, v in scalars.items()}
        shape = []
        for e in arr.sizes:
            v = self.analysis.host_eval(e, scalars, line=arr.line)
            if arr.is_local:
                v = int(np.floor(abs(v) + 0.5)) * (1 if v >= 0 else -1)
            if not float(v).is_integer() or v < 0:
                raise BasicInputError(f"DIM {self.analysis.show(arr.name)}: size {A.expr_text(e)} = {v} is not a "
                                      "non-negative integer")
            shape.append(int(v) + (1 if arr.is_local else 0))
        return tuple(shape)

    def grid(self, scalars: dict[str, Any]) -> int:
        """The number of blocks: ∏ ceil(size / tile) of the first OUTPUT array (1 without OUTPUT)."""
        if not self.analysis.outputs:
            return 1
        arr = self.analysis.outputs[0]
        shape = self.array_shape(arr.name, scalars)
        assert arr.tile is not None  # the analyzer refuses an OUTPUT array without TILE
        n = 1
        for size, t in zip(shape, arr.tile):
            n *= -(-size // t)
        return max(n, 1)

    def describe(self) -> str:
        """A human-readable summary of the program's interface."""
        show = self.analysis.show
        rows = [f"program {self.filename}"]
        for item in self.analysis.inputs:
            if isinstance(item, ScalarInput):
                kind = "string" if item.dtype is STRING else f"{item.dtype.name} scalar"
                rows.append(f"  INPUT {show(item.name)}: {kind}")
            else:
                tile = f", tile {item.tile}" if item.tile else ""
                rows.append(f"  INPUT {show(item.name)}({', '.join(self.dims(item.name))}): {item.dtype.name}{tile}")
        for arr in self.analysis.outputs:
            rows.append(f"  OUTPUT {show(arr.name)}({', '.join(self.dims(arr.name))}): {arr.dtype.name}, "
                        f"tile {arr.tile}")
        return "\n".join(rows)

    # ------------------------------------------------------------------ running

    def prepare(self, inputs: dict[str, Any] | None = None, seed: int = 0) -> tuple[tuple, int, dict]:
        """Host arguments for a launch: (args, number of blocks, output arrays by name).

        ``inputs`` maps INPUT names to numbers (scalars), text (string scalars) and arrays;
        an array may also be the string ``"random"`` (filled from ``seed``). Scalars that
        size an array given as data are taken from its shape when not given.
        """
        an = self.analysis
        given = {self.key(k): v for k, v in (inputs or {}).items()}
        rng = np.random.default_rng(seed)
        unknown = [k for k in given if k not in an.scalar_inputs and not (k in an.arrays and an.arrays[k].is_input)]
        if unknown:
            names = ", ".join(an.show(i.name) for i in an.inputs)
            raise BasicInputError(f"unknown input {an.show(unknown[0])!r}; the program's INPUTs are: {names or 'none'}")
        scalars: dict[str, Any] = {}
        for name, si in an.scalar_inputs.items():
            if name in given:
                scalars[name] = self._scalar(name, si.dtype, given[name])
        for arr in an.inputs:  # scalars implied by the shapes of arrays given as data
            if isinstance(arr, ArrayInfo) and arr.name in given and not isinstance(given[arr.name], str):
                data = np.asarray(given[arr.name])
                if data.ndim != arr.ndim:
                    raise BasicInputError(f"input {an.show(arr.name)} must have {arr.ndim} dimension(s) (DIM "
                                          f"{an.show(arr.name)}({', '.join(self.dims(arr.name))})), got shape "
                                          f"{data.shape}")
                for axis, e in enumerate(arr.sizes):
                    if isinstance(e, A.Var) and e.name in an.scalar_inputs and e.name not in scalars:
                        scalars[e.name] = self._scalar(e.name, an.scalar_inputs[e.name].dtype, data.shape[axis])
        missing = [n for n in an.scalar_inputs if n not in scalars]
        if missing:
            shown = an.show(missing[0])
            raise BasicInputError(f"missing input {shown} (give it as {shown}=VALUE)")
        grid = self.grid(scalars)
        args: list[Any] = []
        outputs: dict[str, np.ndarray] = {}
        for p in self.parameters:
            args.append(self._argument(p, scalars, given, grid, seed, rng, outputs))
        return tuple(args), grid, outputs

    def _argument(self, p: Parameter, scalars, given, grid: int, seed: int, rng, outputs: dict):
        an = self.analysis
        if p.role == "seed":
            return np.int32((int(seed) + 2 ** 31) % 2 ** 32 - 2 ** 31)
        if p.role == "string":
            chars = np.zeros(STRING_CAPACITY, np.uint8)
            data = scalars[p.key]
            chars[:len(data)] = np.frombuffer(data, np.uint8)
            return chars
        if p.role == "string length":
            return np.int32(len(scalars[p.key]))
        if p.kind == "scalar":
            return scalars[p.key]
        if p.role == "data":
            errors = self.lowerer.data_errors
            rows = [(np.nan if d.number is None else float(d.number), -1 if d.text is None else len(d.text),
                     0 if d.number is not None else errors.index(d.error) + 1,
                     0 if d.text is not None else errors.index(d.error) + 1) for d in an.data] or [(0.0, 0, 0, 0)]
            return np.array(rows, dtype=np.float64)
        if p.role == "text":
            table = np.zeros((max(len(self.lowerer.text_rows), 1), STRING_CAPACITY), np.uint8)
            for k, row in enumerate(self.lowerer.text_rows):
                table[k, :len(row)] = np.frombuffer(row, np.uint8)
            return table
        if p.role in ("local", "lengths"):
            shape = self.array_shape(p.key, scalars)
            if p.role == "local" and an.arrays[p.key].is_string:
                shape = shape + (STRING_CAPACITY,)
            return np.zeros((grid,) + shape, dtype=p.dtype.np_dtype)
        shape = self.array_shape(p.key, scalars)
        if p.role not in ("input", "inout"):
            out = np.zeros(shape, dtype=p.dtype.np_dtype)
            outputs[p.name] = out
            return out
        if p.key not in given:
            raise BasicInputError(f"missing input array {p.name} (give it as {p.name}=@file.npy or {p.name}=random)")
        value = given[p.key]
        if isinstance(value, str):
            if value != "random":
                raise BasicInputError(f"input {p.name}: expected an array or 'random', got {value!r}")
            data = _random(rng, shape, p.dtype)
        else:
            data = np.asarray(value)
            if data.shape != shape:
                raise BasicInputError(f"input {p.name} has shape {data.shape} but DIM "
                                      f"{p.name}({', '.join(self.dims(p.key))}) is {shape}")
            data = np.ascontiguousarray(data.astype(p.dtype.np_dtype, copy=p.role == "inout"))
        if p.role == "inout":
            outputs[p.name] = data
        return data

    def _scalar(self, name: str, dtype, value: Any):
        shown = self.analysis.show(name)
        if dtype is STRING:
            data = str(value).encode("cp437", "replace")
            if len(data) > STRING_CAPACITY - 1:
                raise BasicInputError(f"input {shown} is longer than 255 characters")
            return data
        if isinstance(value, str):
            try:
                value = float(value) if dtype.is_float else int(value, 0)
            except ValueError:
                raise BasicInputError(f"input {shown} must be {'a number' if dtype.is_float else 'an integer'}, "
                                      f"got {value!r}") from None
        if dtype.is_float:
            return float(dtype.np_dtype.type(value))
        if isinstance(value, (float, np.floating)) and not float(value).is_integer():
            raise BasicInputError(f"input {shown} is an integer, got {value}")
        v = int(value)
        if not -(2 ** 31) <= v < 2 ** 31:
            raise BasicInputError(f"input {shown} = {v} does not fit in int32")
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
        program = parse(src, errors, lines, broken=[])
        if errors:
            raise BasicError.collect(errors)
        an = analyze(program, src, errors)
        if errors:  # with the errors GW-BASIC would raise at run time, so all are reported
            raise BasicError.collect(errors + [d.error for d in an.deferred.values()] + an.expr_errors)
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
