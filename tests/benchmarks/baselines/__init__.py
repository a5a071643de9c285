"""Comparison implementations the benchmarks measure the product against (not shipped)."""
