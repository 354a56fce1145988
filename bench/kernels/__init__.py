"""Benchmark kernels written with safetile's public API, as a user would write them."""
