"""Environment variables read on the launch path.

``os.environ.get`` encodes the name and decodes the value on every call (about 1 us); a
launch reads ``SAFETILE_BACKEND`` each time (tests switch it at run time), so this reads
the environment's underlying mapping with a pre-encoded name instead.
"""
from __future__ import annotations

import os

_data = getattr(os.environ, "_data", None)
_encode = getattr(os.environ, "encodekey", None)
_decode = getattr(os.environ, "decodevalue", None)
_BACKEND_KEY = _encode("SAFETILE_BACKEND") if _encode is not None else None


def backend_override() -> str | None:
    """The value of ``SAFETILE_BACKEND`` ('cpu', 'triton'), or None when unset."""
    if _BACKEND_KEY is None or _data is None or _decode is None:
        return os.environ.get("SAFETILE_BACKEND")
    v = _data.get(_BACKEND_KEY)
    return None if v is None else _decode(v)
