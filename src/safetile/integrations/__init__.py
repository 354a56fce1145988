"""safetile in other ecosystems, above the runtime and the safe style (imported on demand).

- ``torch``: safetile kernels as ``torch.library`` custom ops (``torch.compile``, CUDA graphs).
"""
