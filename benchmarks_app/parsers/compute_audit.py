"""The compute audit (scale/exp31_compute_audit.json)."""

from __future__ import annotations

from .base import (
    Parsed,
    _dict,
    _err,
    _num,
    run_id_from_hint,
)


def parse_compute_audit(obj: dict, *, path_hint: str, experiment: str | None) -> Parsed:
    run_id = run_id_from_hint(path_hint) or "exp31_compute_audit"
    params = _dict(obj.get("params"), "/params")
    compute = _dict(obj.get("compute"), "/compute")
    base = {"run": run_id, "experiment": experiment or "exp31_audit"}
    spec = [
        ("eqlm", "params_total_M", params, "eqlm_total_M", "/params"),
        ("eqlm", "params_embeddings_M", params, "eqlm_embeddings_M", "/params"),
        ("eqlm", "params_block_M", params, "eqlm_block_M", "/params"),
        ("explicit", "params_total_M", params, "explicit_total_M", "/params"),
        ("explicit", "params_embeddings_M", params, "explicit_embeddings_M", "/params"),
        ("explicit", "params_block_M", params, "explicit_layers_M", "/params"),
        ("eqlm", "compute_units_per_block_M", compute, "eqlm_units_per_iteration_M", "/compute"),
        ("explicit", "compute_units_per_block_M", compute, "explicit_units_per_layer_M", "/compute"),
    ]
    records = []
    for arm, metric, source, key, pointer in spec:
        value = _num(source, key, pointer)
        if value is not None:
            family = "explicit" if arm == "explicit" else "tied-anytime"
            records.append({**base, "arm": arm, "model_family": family, "metric": metric, "value": value,
                            "unit": "M", "pointer": f"{pointer}/{key}"})  # fmt: skip
    if not records:
        raise _err("The compute audit holds none of the expected params/compute numbers.", "/compute")
    config = {k: v for k, v in obj.items() if k != "seeds"}
    notes = ["the per-seed block repeats the exp31 seed files and is not ingested twice"]
    return Parsed("compute_audit", records, notes, {run_id: config})
