"""What an attack of rounds 6 onwards prints and how it exits (sequential_runner.py reads it), and its
watchdog: a hang or a deadlock is reported as broken instead of running into the runner's timeout.
A round's helper module starts the watchdog (``watchdog(seconds)``) and re-exports these."""
import faulthandler
import os
import sys
import threading


def _out(kind, msg, code):
    sys.stdout.write(f"{kind}: {msg}\n")
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def held(msg=""): _out("HELD", msg, 0)
def broken(msg): _out("BROKEN", msg, 1)
def broke(msg): _out("BROKE", msg, 1)
def outside(msg): _out("OUTSIDE", msg, 0)
def inconclusive(msg): _out("INCONCLUSIVE", msg, 3)


def watchdog(timeout, word="BROKEN"):
    """Exit as broken, with every thread's traceback, once ``timeout`` seconds have passed."""
    def fire():
        sys.stdout.write(f"{word}: watchdog fired after {timeout:.0f}s (hang/deadlock)\n")
        sys.stdout.flush()
        faulthandler.dump_traceback(all_threads=True)
        os._exit(1)
    t = threading.Timer(timeout, fire)
    t.daemon = True
    t.start()


def is_st(e):
    return type(e).__module__.startswith("safetile")
