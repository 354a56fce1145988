"""Shared driver for error-quality attacks: each case must raise a safetile error."""
from _common import *


def run_cases(cases, what):
    fails = []
    for name, f in cases:
        try:
            r = f()
        except Exception as e:  # noqa: BLE001
            if not is_safetile_error(e):
                fails.append(f"{name}: {type(e).__module__}.{type(e).__name__}: {str(e)[:70]}")
            continue
        fails.append(f"{name}: accepted -> {str(r)[:50]}")
    if fails:
        broken(f"{len(fails)}/{len(cases)} {what} not refused with a safetile error: " + " | ".join(fails))
    held(f"all {len(cases)} {what} refused with safetile errors")
