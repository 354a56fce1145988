"""Benchmark sections: each ``bench_<name>(args, res)`` checks its cases against torch, times
them and stores rows under ``res[<name>]``."""
