"""The ping-pong lowering's tests on the CPU: the facts of an sm_90 launch, the matcher's plan
and the Gluon build for sm_90a (no GPU needed), shared by the test files that attack it."""
from __future__ import annotations


def sm90_facts(args, narrays: int, target: int = 90):
    """The launch facts of ``args`` (the first ``narrays`` are arrays) on ``target`` with TMA,
    PDL, 3 loop stages and the hints ``warp_specialize`` and (on sm_90) ``"pingpong"``."""
    from safetile.backends.triton.codegen import Facts
    from safetile.backends.triton.launcher import array_facts, array_parts
    return Facts(tuple(array_facts(*array_parts(a)[:3]) for a in args[:narrays]), False, target, True, True, 3,
                 True, target == 90)


def plan_of(kern, args, narrays: int, target: int = 90):
    """``pingpong.plan`` of ``kern`` specialised for ``args`` (None: not the schedule's shape)."""
    from safetile.backends.triton.pingpong import plan
    from safetile.runtime.args import arg_specs
    return plan(kern.specialize(arg_specs(kern, args)), sm90_facts(args, narrays, target))


def generated(kern, args, narrays: int):
    """(the specialised function, its generated source) for an sm_90 launch of ``args``."""
    from safetile.backends.triton.codegen import generate
    from safetile.runtime.args import arg_specs
    fn = kern.specialize(arg_specs(kern, args))
    return fn, generate(fn, sm90_facts(args, narrays))


def build_sm90(kern, args, narrays: int):
    """The Gluon kernel of ``kern`` compiled for sm_90a (asserts the ping-pong form was generated).
    Cached by source and signature: two kernels that differ only in a vector's dtype have the
    same source and facts."""
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.experimental.gluon._runtime import GluonASTSource

    from safetile.backends.triton import cache
    from safetile.backends.triton.launcher import compile_options
    fn, made = generated(kern, args, narrays)
    assert made.gluon, "the matcher accepted the kernel but the Gluon generation fell back"
    facts = sm90_facts(args, narrays)
    key = cache.digest(made.source + repr(sorted(made.signature.items())), facts)
    jitfn, gen = cache.load(key, lambda: made, False)
    return triton.compile(GluonASTSource(jitfn, gen.signature, {}, gen.attrs), target=GPUTarget("cuda", 90, 32),
                          options=compile_options(fn, gen, facts))
