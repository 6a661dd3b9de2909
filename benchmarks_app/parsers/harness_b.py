"""Harness B run records (exp13/exp32): {experiment, seed, arms: {B1|C1: ...}}."""

from __future__ import annotations

from .base import (
    Parsed,
    _dict,
    _int,
    _loss_records,
    _num,
    experiment_from_hint,
    family_for,
    run_id_from_hint,
)


def parse_harness_b(obj: dict, *, path_hint: str, experiment: str | None) -> Parsed:
    run_id = run_id_from_hint(path_hint)
    seed = _int(obj, "seed", "")
    if not run_id:
        run_id = f"{obj.get('experiment') or 'harness_b'}_seed{seed}"
    exp = experiment or experiment_from_hint(path_hint) or str(obj.get("experiment") or "")
    arms = _dict(obj.get("arms"), "/arms")
    notes = ["the control block is not ingested (it is stale for some seeds; pair on real baseline rows)"]
    base_run = {
        "run": run_id,
        "experiment": exp,
        "seed": seed,
        "seed_inferred": False,
        "config_hash": str(obj.get("config_hash") or ""),
        "git_commit": str(obj.get("git_commit") or ""),
    }
    records = []
    for label, arm in arms.items():
        p = f"/arms/{label}"
        arm = _dict(arm, p)
        kind = str(arm.get("kind") or "")
        base = {
            **base_run,
            "arm": str(label),
            "model_family": family_for(str(label), "", kind),
            "model_name": f"{label} ({kind})" if kind else str(label),
            "num_params": _int(arm, "num_params", p),
            "recipe": {"kind": kind, "spec": obj.get("spec")},
        }
        blimp = _num(arm, "blimp_accuracy", p)
        if blimp is not None:
            n = _int(arm, "blimp_num_total", p)
            records.append({**base, "metric": "blimp_accuracy", "value": blimp, "unit": "fraction", "n": n,
                            "pointer": f"{p}/blimp_accuracy"})  # fmt: skip
        for key, unit in [
            ("final_loss", "nats"),
            ("peak_memory_mb", "MB"),
            ("train_time_sec", "s"),
            ("solver_mean_iterations", "iterations"),
            ("solver_convergence_rate", "fraction"),
        ]:
            value = _num(arm, key, p)
            if value is not None:
                records.append({**base, "metric": key, "value": value, "unit": unit, "pointer": f"{p}/{key}"})
        records.extend(_loss_records(base, arm.get("loss_curve"), f"{p}/loss_curve"))
    header = {k: v for k, v in obj.items() if k not in ("arms",)}
    return Parsed("harness_b", records, notes, {run_id: header})
