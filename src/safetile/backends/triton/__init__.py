"""The GPU backend: safetile IR → Triton source → CUDA kernels.

``codegen.generate`` turns one specialised ``ir.core.Function`` into the source of one
``@triton.jit`` kernel (one emitter per catalogue op, organised by family like the CPU
backend); ``launcher.launch_gpu`` compiles each specialisation once (in-memory and on-disk
caches, see ``cache.py``) and launches it on CUDA tensors. Set ``SAFETILE_BACKEND=triton``
to route launches on CPU torch tensors here too (with ``TRITON_INTERPRET=1``, Triton's
interpreter runs the generated kernels on the CPU), ``SAFETILE_DUMP_SOURCE=1`` to print
generated sources, ``SAFETILE_TMA=0`` to disable tensor descriptors, ``SAFETILE_PIPELINE_LOOPS=0``
to leave tile-streaming loops unpipelined and ``SAFETILE_PDL=0`` to launch without programmatic
dependent launch. ``fastpath.py`` is ``ct.launch``'s one-pass path, ``direct.py`` the warm start
without importing Triton.
"""

