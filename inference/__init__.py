"""The Django app over the eqlm library: model registry, serving, evaluation jobs, the dial and the /v1 API."""
