"""Budget sweeps: {"4": {accuracy, num_correct, num_total}, ...}."""

from __future__ import annotations

from .base import (
    Parsed,
    _dict,
    _err,
    _int,
    _num,
    experiment_from_hint,
    run_id_from_hint,
    seed_from_text,
)


def parse_budget_sweep(obj: dict, *, path_hint: str, experiment: str | None, arm: str | None) -> Parsed:
    run_id = run_id_from_hint(path_hint)
    seed = seed_from_text(path_hint)
    if not run_id or seed is None:
        raise _err(
            "A budget_sweep.json needs a path hint naming its run and seed, e.g. exp13_seed42/budget_sweep.json."
        )
    label = arm or "B1"
    base = {"run": run_id, "experiment": experiment or experiment_from_hint(path_hint), "seed": seed,
            "seed_inferred": True, "arm": label}  # fmt: skip
    records = []
    for budget, entry in obj.items():
        p = f"/{budget}"
        entry = _dict(entry, p)
        records.append({**base, "metric": "blimp_accuracy", "value": _num(entry, "accuracy", p, required=True),
                        "unit": "fraction", "n": _int(entry, "num_total", p), "condition": {"budget": int(budget)},
                        "pointer": f"{p}/accuracy"})  # fmt: skip
    notes = [f"arm {label} assumed (budget sweeps name no arm); seed {seed} from the path"]
    return Parsed("budget_sweep", records, notes, {})
