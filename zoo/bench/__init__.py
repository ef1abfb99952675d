"""Benchmarks run by `zoo bench <name>`; each module has `main(argv) -> int`."""
