"""Benchmarks computed live from stored result rows."""
