"""Fuzzing the BASIC front end: 3,000 programs mutated from the corpus and examples go
through ``compile_program`` (what ``safetile check`` runs). Every one must either compile
or raise a ``BasicError`` that is not an internal error, and render without failing; those
that compile and are short run on the CPU backend without an internal error."""
from __future__ import annotations

import pathlib
import random
import re
import time

from safetile.basic import BasicError, compile_program

ROOT = pathlib.Path(__file__).resolve().parent.parent
SOURCES = sorted((ROOT / "tests" / "basic_corpus").glob("*.bas")) + sorted((ROOT / "examples" / "basic").glob("*.bas"))

VOCAB = ["PRINT", "LET", "IF", "THEN", "ELSE", "ELSEIF", "ENDIF", "END", "FOR", "TO", "STEP", "NEXT", "WHILE", "WEND", "GOTO", "GOSUB", "RETURN", "ON", "DATA", "READ", "RESTORE", "STOP", "REM", "DIM", "TILE", "INPUT", "OUTPUT", "AS", "HALF", "INTEGER", "AND", "OR", "XOR", "NOT", "MOD", "BID", "MMA", "RND", "SUM", "INT", "ABS", "SQR", "TAB", "SPC", "X", "Y%", "A()", "A(1)", "A(I,J)", "C(BID)", "ACC", "N", "I", "J", "K", "0", "1", "-1", "2.5", "1E30", "1E-40", "128", "3", "10", "20", "99999", "+", "-", "*", "/", "^", "\\", "=", "<>", "<", ">", "<=", ">=", "(", ")", ",", ";", ":", "?", "'", '"', '"text"', "%", "$", "#", "@", "é", "\t"]
PROGRAMS = [p.read_text() for p in SOURCES]
SAME_KIND = [re.compile(r"(?<![A-Za-z0-9_.])\d+(\.\d+)?(?![A-Za-z0-9_.])"), re.compile(r"<>|<=|>=|[-+*/^<>=]"),
             re.compile(r"\b[A-Z][A-Z0-9]*%?(?=[^(A-Za-z0-9%]|$)")]
REPLACEMENTS = [["0", "1", "2", "-1", "0.5", "3", "128", "7", "1E6", "16"], ["+", "-", "*", "/", "^", "=", "<", ">"],
                ["X", "I", "J", "N", "K%", "ACC", "T", "S", "BID", "A"]]


def mutate(rng: random.Random, text: str) -> str:
    lines = text.splitlines()
    for _ in range(rng.randint(1, 4)):
        if not lines:
            lines = [""]
        k = rng.randrange(len(lines))
        line = lines[k]
        op = rng.randrange(13)
        if op == 0 and len(lines) > 1:
            del lines[k]
        elif op == 1:
            lines.insert(rng.randrange(len(lines) + 1), line)
        elif op == 2:
            j = rng.randrange(len(lines))
            lines[k], lines[j] = lines[j], lines[k]
        elif op in (3, 4):
            pos = rng.randint(0, len(line))
            lines[k] = line[:pos] + " " + rng.choice(VOCAB) + " " + line[pos:]
        elif op == 5 and line:
            a = rng.randrange(len(line))
            b = min(len(line), a + rng.randint(1, 8))
            lines[k] = line[:a] + line[b:]
        elif op == 6:
            words = line.split(" ")
            if words:
                words[rng.randrange(len(words))] = rng.choice(VOCAB)
            lines[k] = " ".join(words)
        elif op == 7:
            lines[k] = f"{rng.randint(0, 300)} " + line.lstrip("0123456789 ")
        elif op == 8:
            other = rng.choice(PROGRAMS).splitlines() or [""]
            lines.insert(k, rng.choice(other))
        elif op == 9:
            lines[k] = line + " : " + rng.choice(VOCAB) + " " + rng.choice(VOCAB)
        else:  # replace a number, operator or name by another of the same kind
            kind = rng.randrange(3)
            found = list(SAME_KIND[kind].finditer(line))
            if found:
                m = rng.choice(found)
                lines[k] = line[:m.start()] + rng.choice(REPLACEMENTS[kind]) + line[m.end():]
    if rng.random() < 0.75:  # usually keep line numbers increasing so later stages get exercised
        numbered = {}
        for ln in lines:
            m = re.match(r"\s*(\d+)", ln)
            numbered.setdefault(int(m.group(1)) if m else -1, ln)
        lines = [numbered[n] for n in sorted(numbered) if n >= 0]
    return "\n".join(lines) + "\n"


def test_fuzz_check_gives_only_basic_diagnostics():
    rng = random.Random(20240607)
    start = time.time()
    ok = failed = 0
    ran = 0
    for i in range(3_000):
        src = mutate(rng, rng.choice(PROGRAMS))
        try:
            prog = compile_program(src, f"fuzz{i}.bas")
            ok += 1
        except BasicError as e:
            assert not e.internal, f"internal error for program {i}:\n{src}\n{e}"
            assert str(e)
            failed += 1
            continue
        for err in prog.deferred:
            assert str(err)
        if i % 10 == 0 and not prog.analysis.inputs and "GOTO" not in src and "WHILE" not in src:
            ran += _runs_cleanly(prog, src)
    elapsed = time.time() - start
    assert ok > 600 and failed > 200 and ran > 50  # every outcome is exercised
    print(f"3,000 mutated programs checked, {ran} run, in {elapsed:.1f}s")  # wall time depends on machine load


def _runs_cleanly(prog, src: str) -> int:
    """Run a mutated program (bounded loops only) on the CPU: GW-BASIC errors are fine,
    anything else is a bug."""
    import contextlib
    import io

    from safetile.errors import TileRuntimeError
    with contextlib.redirect_stdout(io.StringIO()):
        try:
            prog.run()
        except TileRuntimeError:
            pass
        except Exception as e:
            raise AssertionError(f"{type(e).__name__}: {e} running\n{src}") from e
    return 1


if __name__ == "__main__":  # pragma: no cover - a tool: python tests/test_basic_fuzz.py [N] [SEED]
    import signal
    import sys

    def _too_long(*_):
        raise TimeoutError

    count = int(sys.argv[1]) if len(sys.argv) > 1 else 2000
    rng = random.Random(int(sys.argv[2]) if len(sys.argv) > 2 else 1)
    tally = {"compiled": 0, "refused": 0, "ran": 0, "internal": 0, "raw": 0, "over 60 s": 0}
    signal.signal(signal.SIGALRM, _too_long)
    for i in range(count):
        src = mutate(rng, rng.choice(PROGRAMS))
        signal.alarm(60)
        try:
            prog = compile_program(src, f"fuzz{i}.bas")
            tally["compiled"] += 1
            if not prog.analysis.inputs and "GOTO" not in src and "WHILE" not in src:
                tally["ran"] += _runs_cleanly(prog, src)
        except BasicError as e:
            tally["internal" if e.internal else "refused"] += 1
        except Exception as e:  # noqa: BLE001 - counted and shown: an internal failure or a long run
            long_run = isinstance(e, TimeoutError) or isinstance(e.__cause__, TimeoutError)
            tally["over 60 s" if long_run else "raw"] += 1
            print(f"{'over 60 s' if long_run else type(e).__name__ + ': ' + str(e)}\n{src}")
        finally:
            signal.alarm(0)
    print(tally)
