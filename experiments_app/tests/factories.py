"""Test data for the experiments: a tiny two-arm experiment over the tiny recipe file, and its result rows."""

from pathlib import Path

from experiments_app.services import register_experiment
from results.records import ingest_records

TINY_RECIPE = str(Path(__file__).resolve().parent / "recipes" / "tiny-experiment.toml")
DEPTHS = [1, 2, 4]


def tiny_spec(slug: str = "tiny", seeds=(1, 2), **changes) -> dict:
    """Two arms of the tiny recipe (the second with a higher learning rate), judged by bits/byte at depth 4."""
    spec = {
        "slug": slug,
        "title": "A tiny experiment",
        "hypothesis": "A higher learning rate does not make the tiny model worse at depth 4.",
        "arms": [
            {"label": "base", "recipe": TINY_RECIPE, "overrides": []},
            {"label": "fast", "recipe": TINY_RECIPE, "overrides": ["schedule.lr=1e-2"]},
        ],
        "seeds": list(seeds),
        "evaluation": {"depths": DEPTHS, "starts": ["zero", "noise"], "text": "slice", "windows": 2, "window": 33},
        "criterion": {
            "op": "ratio",
            "label": "no worse",
            "of": {"arm": "fast", "metric": "heldout_bits_per_byte", "where": {"depth": 4, "start": "zero"}},
            "over": {"arm": "base", "metric": "heldout_bits_per_byte", "where": {"depth": 4, "start": "zero"}},
            "stat": "ci_high",
            "cmp": "<=",
            "value": 1.05,
        },
    }
    spec.update(changes)
    return spec


def tiny_experiment(slug: str = "tiny", **changes):
    return register_experiment(tiny_spec(slug, **changes))


def write_rows(experiment, arm: str, seed: int, values: dict[int, float], start: str = "zero") -> int:
    """Rows as the evaluation writes them: bits/byte by depth for one arm, seed and start."""
    records = [
        {
            "run": f"experiment:{experiment.slug}:{arm}:seed{seed}",
            "experiment": experiment.slug,
            "arm": arm,
            "seed": seed,
            "metric": "heldout_bits_per_byte",
            "value": value,
            "condition": {"depth": depth, "start": start, "seed": seed},
        }
        for depth, value in values.items()
    ]
    return ingest_records(records, source_name=f"test:{experiment.slug}:{arm}:{seed}:{start}")
