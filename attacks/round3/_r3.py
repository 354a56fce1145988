"""Round-3 helpers: attacks/_common.py (through sys.path), and the interrupt fuzzers' shared parts."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from _common import *  # noqa: E402,F401,F403
from _common import _hang  # noqa: E402,F401
import threading  # noqa: E402


# ----------------------------------------------------------------------------- interrupt fuzzing (301, 306)

class Boom(KeyboardInterrupt):
    pass


def handler(signum, frame):
    raise Boom()


def check_free(v, xs, where):
    done = []
    errs = []

    def probe():
      try:
        v.to_numpy()
        p = v.partition(256)
        p, _ = fill(p, xs).sync()
        s = p.unpartition().shared()
        w = s.try_unwrap()
        done.append(w)
      except Exception as e:  # noqa: BLE001
        errs.append(f"{type(e).__name__}: {str(e)[:150]}")
    th = threading.Thread(target=probe, daemon=True)
    th.start()
    th.join(4)
    if th.is_alive():
        return f"HANG (a view's read/launch waits forever: leaked in-flight entry) after a KeyboardInterrupt {where}"
    if not done:
        return f"memory stayed claimed ({errs[-1]}) after a KeyboardInterrupt {where}"
    return None


def landing(e):
    """(where a Boom landed, as 'in f > g at file:line (fn)'; whether any frame is safetile's)."""
    tb = e.__traceback__
    frames = []
    while tb:
        frames.append(tb)
        tb = tb.tb_next
    tb = frames[-2] if len(frames) > 1 else frames[-1]
    in_lib = any("/safetile/" in f.tb_frame.f_code.co_filename for f in frames)
    chain = " > ".join(f.tb_frame.f_code.co_name for f in frames[1:-1])
    return (f"in {chain} at {tb.tb_frame.f_code.co_filename.split('/')[-1]}:{tb.tb_lineno} "
            f"({tb.tb_frame.f_code.co_name})", in_lib)


LAST = ["?"]


def _main_thread_hang():
    import faulthandler
    print("BROKEN: the main thread hangs in a later ordinary call (no interrupt pending) after an earlier "
          f"KeyboardInterrupt ({LAST[0]}) left safetile's state locked; stack:")
    sys.stdout.flush()
    faulthandler.dump_traceback(all_threads=True)
    os._exit(1)


def watch_main_thread(seconds=16):
    """Report a hang of the main thread (a later call blocked on state an interrupt left locked)."""
    wd = threading.Timer(seconds, _main_thread_hang)
    wd.daemon = True
    wd.start()
