"""Promise (safety.md G4): 'an unrun operation does not keep its arguments forever';
(safe.md) 'the terminal's result hands them back for good' / failed chains give the values
back (attack 45 covered Exception).

A then()/map()/inspect() callback raises a BaseException that is not an Exception
(KeyboardInterrupt, SystemExit, GeneratorExit, a custom BaseException) in sync(), await
and graph capture. Afterwards every argument of the chain must be usable again, and a
later launch on them must work."""
import asyncio

from _r2 import *


class Boom(BaseException):
    pass


def body():
    problems = []
    for exc in (KeyboardInterrupt, SystemExit, GeneratorExit, Boom):
        for comb in ("then", "map", "inspect"):
            for term in ("sync", "await", "graph"):
                p = ct.zeros(4096).sync().partition(512)
                x = ct.ones(4096).sync()

                def cb(r, exc=exc):
                    raise exc("from callback")

                op = getattr(fill(p, x), comb)(cb)
                try:
                    if term == "sync":
                        op.sync()
                    elif term == "await":
                        async def go():
                            return await op
                        asyncio.run(go())
                    else:
                        op.graph()
                    problems.append(f"{exc.__name__} in {comb} under {term}: swallowed")
                    continue
                except BaseException as e:  # noqa: BLE001
                    if not isinstance(e, exc):
                        pass       # wrapped: acceptable if the values come back
                try:
                    p2, x2 = fill(p, x).sync()
                    a = p2.unpartition().to_numpy()
                    if not np.all(a == 2.0):
                        problems.append(f"{exc.__name__}/{comb}/{term}: wrong values {np.unique(a)[:3]}")
                except Exception as e:  # noqa: BLE001
                    problems.append(f"{exc.__name__} in {comb}() under {term}: arguments not given back: "
                                    f"{type(e).__name__}: {str(e)[:90]}")
    if problems:
        broken(f"{len(problems)}/36 cases: " + "; ".join(problems[:4]))
    held("BaseExceptions in callbacks give the values back")


run_guarded(body, "baseexception in callback")
