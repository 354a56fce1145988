"""The ``safetile`` command line.

``safetile run PROGRAM.bas [--backend cpu|gpu] [--input NAME=VALUE ...] [--output-dir DIR] [--seed N]``
    Compile and run a BASIC program. Scalar inputs are given as ``N=1024``; array inputs as
    ``A=@file.npy`` (a NumPy file) or ``A=random`` (uniform in [-1, 1), or integers in
    [-100, 100] for integer arrays, from ``--seed``; the shape comes from the array's DIM
    and the scalar inputs). PRINT output goes to stdout and nothing else does; every
    OUTPUT array is written to ``DIR/NAME.npy``; notes and errors go to stderr.
``safetile check PROGRAM.bas [--dump tokens|ast|ir]``
    Report every error in a program (exit status 1) or confirm it is fine (0); this includes
    the errors GW-BASIC raises only when their line runs (a syntax error in a line, Type
    mismatch ...), which ``run`` reports there, after the output of the lines before.
``safetile check KERNELS.py [--args TYPES | --spec FILE] [--dump ir|triton]``,
``safetile cache info|clear``, ``safetile bench [SECTION]``
    Compile the kernels of a Python file, manage the disk cache, run the benchmarks
    (``cli_tools.py``).
``safetile generate --model DIR (--prompt TEXT | --prompt-ids 1,2,3) [--max-new-tokens N]``
    Stream a Qwen3 checkpoint's continuation of a prompt (``cli_generate.py``).

Exit status: 0 success, 1 an error in the program (compile or run time), 2 bad usage or
inputs, 3 an internal error, 141 when the reader of the output went away (``| head``).
"""
from __future__ import annotations

import argparse
import os
import sys
from typing import Any

from . import cli_generate, cli_tools
from .runtime import env


def _read(path: str) -> str:
    try:
        with open(path, encoding="utf-8") as f:
            return f.read()
    except OSError as e:
        raise _Usage(f"cannot read {path}: {e.strerror or e}") from None
    except UnicodeDecodeError as e:
        raise _Usage(f"{path} is not UTF-8 text: {e}") from None


class _Usage(Exception):
    pass


def _parse_inputs(items: list[str]) -> dict[str, Any]:
    import numpy as np
    out: dict[str, Any] = {}
    for item in items:
        if "=" not in item:
            raise _Usage(f"--input {item!r}: expected NAME=VALUE (e.g. N=1024, A=@a.npy or A=random)")
        name, value = item.split("=", 1)
        name = name.strip()
        value = value.strip()
        if not name:
            raise _Usage(f"--input {item!r}: the name is missing")
        if value.startswith("@"):
            path = value[1:]
            try:
                out[name] = np.load(path, allow_pickle=False)
            except (OSError, ValueError) as e:
                raise _Usage(f"--input {name}: cannot load {path}: {e}") from None
        elif value.lower() == "random":
            out[name] = "random"
        else:
            out[name] = value
    return out


def _cmd_check(args) -> int:
    if args.program.endswith(".py"):
        return cli_tools.check_python(args)
    if args.dump == "triton":
        raise _Usage("--dump triton is for Python kernel files; a BASIC program takes --dump tokens, ast or ir")
    from .basic import BasicError, compile_program, dump
    text = _read(args.program)
    if args.dump in ("tokens", "ast"):
        try:
            print(dump(text, args.dump, args.program))
        except BasicError as e:
            print(e, file=sys.stderr)
            return 1
        if args.dump == "tokens":
            return 0
    try:
        prog = compile_program(text, args.program)
    except BasicError as e:
        print(e, file=sys.stderr)
        n = len(e.errors)
        print(f"{args.program}: {n} error{'s' if n != 1 else ''}", file=sys.stderr)
        return 1
    if args.dump == "ir":
        print(prog.ir())
        return 0
    if prog.deferred:  # GW-BASIC stops with these when their line runs; the program runs up to them
        for err in prog.deferred:
            print(err, file=sys.stderr)
        n = len(prog.deferred)
        print(f"{args.program}: {n} error{'s' if n != 1 else ''} (raised when the line runs, as in GW-BASIC)",
              file=sys.stderr)
        return 1
    print(f"{args.program}: no errors")
    print(prog.describe())
    return 0


def _cmd_run(args) -> int:
    import numpy as np

    from .basic import BasicError, BasicInputError, compile_program
    from .errors import TileRuntimeError
    text = _read(args.program)
    inputs = _parse_inputs(args.input or [])
    try:
        prog = compile_program(text, args.program)
    except BasicError as e:
        print(e, file=sys.stderr)
        return 1
    if args.output_dir and not prog.outputs:
        print(f"note: {args.program} has no OUTPUT arrays; nothing is written to {args.output_dir}",
              file=sys.stderr)
    try:
        outputs = prog.run(inputs, backend=args.backend, seed=args.seed)
    except BasicInputError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except BasicError as e:
        print(e, file=sys.stderr)
        return 1
    except TileRuntimeError as e:
        sys.stdout.flush()
        print(f"runtime error: {e}", file=sys.stderr)
        return 1
    except RuntimeError as e:
        sys.stdout.flush()
        print(f"error: {e}", file=sys.stderr)
        return 1
    sys.stdout.flush()
    if outputs:
        if args.output_dir:
            os.makedirs(args.output_dir, exist_ok=True)
            for name, arr in outputs.items():
                path = os.path.join(args.output_dir, f"{name}.npy")
                np.save(path, arr)
                print(f"wrote {path} {arr.dtype} {tuple(arr.shape)}", file=sys.stderr)
        else:
            print(f"note: OUTPUT {', '.join(outputs)} not saved (use --output-dir DIR)", file=sys.stderr)
    return 0


def build_parser() -> argparse.ArgumentParser:
    from . import __version__
    p = argparse.ArgumentParser(prog="safetile", description="Run and check tile programs (BASIC, Python kernel "
                                                             "files), manage the cache, run the benchmarks.")
    p.add_argument("--version", action="version", version=f"safetile {__version__}")
    sub = p.add_subparsers(dest="command", metavar="COMMAND")
    r = sub.add_parser("run", help="compile and run a BASIC program",
                       description="Compile and run a BASIC program; PRINT output goes to stdout.")
    r.add_argument("program", help="the .bas file")
    r.add_argument("--backend", choices=("cpu", "gpu"), default="cpu",
                   help="cpu: NumPy (default); gpu: Triton on an NVIDIA GPU (or its interpreter with "
                        "TRITON_INTERPRET=1)")
    r.add_argument("--input", "-i", action="append", metavar="NAME=VALUE",
                   help="an INPUT value: N=1024, A=@a.npy or A=random (repeatable)")
    r.add_argument("--output-dir", "-o", metavar="DIR", help="write each OUTPUT array as DIR/NAME.npy")
    r.add_argument("--seed", type=int, default=0, help="seed for RND and for random inputs (default 0)")
    c = sub.add_parser("check", help="report the errors in a BASIC program or a Python kernel file",
                       description="Compile a BASIC program, or every kernel of a Python file, and report every "
                                   "error (exit status 1).")
    c.add_argument("program", help="the .bas file, or a .py file of kernels")
    c.add_argument("--dump", choices=("tokens", "ast", "ir", "triton"),
                   help="print the tokens, syntax tree or IR (BASIC); the IR or Triton source (kernels)")
    cli_tools.extend_check(c)
    cli_tools.add_commands(sub)
    cli_generate.add_command(sub)
    return p


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help(sys.stderr)
        return 2
    try:
        if args.command in cli_tools.COMMANDS:
            return cli_tools.COMMANDS[args.command](args)
        if args.command == "check":
            return _cmd_check(args)
        if args.command == "generate":
            return cli_generate.cmd_generate(args)
        return _cmd_run(args)
    except (_Usage, cli_tools.UsageError, cli_generate.GenerateUsageError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # whoever reads the output stopped (``safetile run p.bas | head -1``): stop quietly, as
        # a program killed by SIGPIPE would; stdout goes to /dev/null so the exit flush is quiet
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141
    except Exception as e:  # noqa: BLE001 - report, never a traceback
        if env.debug():
            raise
        print(f"internal error: {type(e).__name__}: {e} (set SAFETILE_DEBUG=1 for a traceback)", file=sys.stderr)
        return 3


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
