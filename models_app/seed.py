"""Demo seed of the model registry: register the committed (bundled) models (idempotent)."""

from .bundled import register_bundled_models
from .local_results import load_fixture


def seed() -> str:
    results = register_bundled_models()
    rows = load_fixture()  # the committed models' quality-and-convergence rows (fixtures/local_results.json)
    if not results:
        return "no bundled model present (no models/eqlm-demo/ checkpoint and metrics); nothing registered"
    done = ", ".join(f"{row.slug} ({'registered' if created else 'already registered'})" for row, created in results)
    return f"bundled models {done}; {rows} new quality-and-convergence rows"
