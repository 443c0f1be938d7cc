"""Executing benchmarks: the registry, the supervised process and the runner."""
