"""Demo seed for the inference app: register the committed demo checkpoint in the model registry (idempotent)."""

from .services import register_demo_model


def seed() -> str:
    row, created = register_demo_model()
    if row is None:
        return "inference: demo model not present (no inference/demo/eqlm-demo.pt + metrics.json); nothing registered"
    return f"inference: demo model {row.slug} {'registered' if created else 'already registered'}"
