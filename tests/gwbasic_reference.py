"""PC-BASIC (a GW-BASIC emulator, ``pip install pcbasic``) as the reference interpreter.

``run_reference(source)`` runs a program the way GW-BASIC runs it and returns what it
printed, normalised as safetile prints it: CRLF as LF, and without the ``\\xa0`` PC-BASIC
writes after an error message (the cursor cell of GW-BASIC's screen). ``None`` means the
program ran past ``max_steps`` statements or ``seconds`` (PC-BASIC itself can loop forever,
e.g. printing some huge numbers). ``available()`` says whether PC-BASIC is
importable (the corpus goldens are committed, so tests need it only for fuzzing).
"""
from __future__ import annotations

import contextlib
import importlib.util
import signal
import threading


class _TooLong(Exception):
    pass


def available() -> bool:
    return importlib.util.find_spec("pcbasic") is not None


@contextlib.contextmanager
def _deadline(seconds: float):
    """Raise _TooLong in this (main) thread after ``seconds``."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def expire(*_):
        raise _TooLong()
    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def run_reference(source: str, max_steps: int = 200_000, seconds: float = 20.0) -> str | None:
    try:
        with _deadline(seconds):
            return _run(source, max_steps)
    except _TooLong:
        return None


def _run(source: str, max_steps: int) -> str | None:
    import warnings
    with warnings.catch_warnings():  # its resource loading uses deprecated importlib calls
        warnings.simplefilter("ignore", DeprecationWarning)
        import pcbasic
    with pcbasic.Session(output_streams=None, input_streams=None) as session:
        session.execute("NEW")
        for line in source.splitlines():
            if line.strip():
                session.execute(line)
        parser = session._impl.interpreter.parser  # count statements (a loop may sit in one line)
        statement = parser.parse_statement
        steps = [0]

        def counted(ins):
            steps[0] += 1
            if steps[0] > max_steps:
                raise _TooLong()
            return statement(ins)

        parser.parse_statement = counted
        try:
            out = session.execute("RUN")
        except _TooLong:
            return None
    return out.replace("\r\n", "\n").replace("\xa0", "")


if __name__ == "__main__":  # pragma: no cover - a tool: python tests/gwbasic_reference.py PROGRAM.bas
    import sys
    with open(sys.argv[1], encoding="utf-8") as f:
        result = run_reference(f.read())
    sys.stdout.write("<ran too long>\n" if result is None else result)
