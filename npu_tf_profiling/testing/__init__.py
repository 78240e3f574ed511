"""Synthetic data generators for tests and benchmarks (PROF folders, clusters, graphs); not used by the product."""
