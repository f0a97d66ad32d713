"""Benchmark scripts: each runs as a file (`python benchmarks/decode.py`) or as a module
(`python -m benchmarks.decode`)."""
