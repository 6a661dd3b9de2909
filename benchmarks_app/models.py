"""Models for benchmarks_app."""
