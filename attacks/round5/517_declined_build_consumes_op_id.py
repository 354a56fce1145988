"""Promise (safety.md G8, "The common case in C"): "Anything else, including every refusal, answers
'not my case' *before anything is changed*, and the Python path then runs in full (its checks
and its worded errors): the C code decides nothing the Python path would decide differently";
G4/G7: refusals name the holder ("moved into launch 'k' (op #5, created at app.py:12)").

Attack: after a few repeated launches (the C twin's plan is the latest), build a launch (op #n),
then try the same launch again with the now-moved arguments (refused: UseAfterMoveError), then
build another. The C twin numbers its launch before it tries to take the arguments, so a refusal
it declines has already consumed a launch number: with the C twin on, the next launch and every
later error message name another op number than with it off (the same program, the same
messages expected). Run with the C twin on and off; the op numbers must be identical.
"""
from _r5 import *


def scenario(rec):
    @ct.entry
    def k(z: ct.Mut[ct.f32, "B"], x: ct.Ref[ct.f32, -1]):
        z.store(ct.load_tile_like(x, z) + 1.0)
    z = ct.from_dlpack(np.zeros(64, np.float32)).partition(16)
    x = ct.from_dlpack(np.ones(64, np.float32))
    for _ in range(3):
        z, x = k(z, x).sync()
    op = k(z, x)
    rec("first op", repr(op))
    for i in range(3):
        try:
            k(z, x)
            rec(f"refusal {i}", "ACCEPTED")
        except ct.UseAfterMoveError as e:
            rec(f"refusal {i}", str(e)[:160])
    z, x = op.sync()
    op2 = k(z, x)
    rec("next op", repr(op2))
    op2.cancel()


def check(log):
    return [f"{k_}: {v}" for k_, v in log if v == "ACCEPTED" or k_ == "SCENARIO-RAISED"]


def main():
    problems, on, off = differential(__file__, scenario, check, "op ids")
    if problems:
        d_on, d_off = dict(on), dict(off)
        broken(f"op numbers differ with the C twin on/off after 3 refused builds: next op is "
               f"{d_on.get('next op', '?')[:60]} (on) vs {d_off.get('next op', '?')[:60]} (off)")
    held("op numbering identical with the C twin on and off")


run_guarded(main, "517")
