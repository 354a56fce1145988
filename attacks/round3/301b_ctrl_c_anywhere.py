"""301 with a real Ctrl-C. Promise (safety.md G4, "Ctrl-C"): a Ctrl-C is held back while safetile
changes shared state and raised right after, at once in waits and kernel bodies; so wherever it
lands in an ordinary life cycle (partition -> launch.sync -> unpartition -> shared -> to_numpy ->
try_unwrap -> borrow_mut), the interrupted call fails with KeyboardInterrupt (nothing else), the
interrupt arrives within milliseconds, nothing hangs, and once everything but a view `v` taken at
the start is dropped, the memory is free: v.to_numpy() returns, v can be partitioned, launched,
shared and unwrapped, and later life cycles on fresh memory run.

Fuzz: SIGINT to the main thread (signal.pthread_kill, as a terminal's Ctrl-C) from a timer thread
at a random moment of the life cycle; Python's handler after `import safetile` (safetile's)."""

from _ctrl_c import *
from _ctrl_c import fuzz_lives, late_is_broken


def life(t, xs):
    p = t.partition(256)
    z, x = fill(p, xs).sync()
    t = z.unpartition()
    s = t.shared()
    s.to_numpy()
    t = s.try_unwrap()
    with ct.borrow_mut(t) as b:
        q = b.partition(256)
        q, x = fill(q, xs).sync()
    t.to_numpy()
    return t


def body():
    fuzz_lives(life, "life cycles", warm=5)


watch_main_thread(18)
run_guarded(late_is_broken(body), "Ctrl-C anywhere")
