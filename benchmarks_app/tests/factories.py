"""Test data for benchmarks: generic records and small files in each of the programme's formats."""

import json

from results.records import ingest_records


def record(**overrides) -> dict:
    base = {
        "run": "exp99/exp99_seed42",
        "experiment": "exp99",
        "arm": "A1",
        "seed": 42,
        "metric": "blimp_accuracy",
        "value": 0.7,
        "unit": "fraction",
        "n": 1000,
    }
    base.update(overrides)
    return base


def paired_rows(treatment: dict[int, float], baseline: dict[int, float], *, metric: str = "blimp_accuracy") -> int:
    """Store exp99:T and exp99:B rows per seed (one run per seed)."""
    records = [record(run=f"exp99/s{s}", seed=s, arm="T", metric=metric, value=v) for s, v in treatment.items()]
    records += [record(run=f"exp99/s{s}", seed=s, arm="B", metric=metric, value=v) for s, v in baseline.items()]
    return ingest_records(records, source_name="test factory")


def harness_b_bytes(seed: int = 42, blimp: float = 0.663, arm: str = "C1") -> bytes:
    return json.dumps(
        {
            "experiment": "exp13_contraction_at_width",
            "spec": "0010",
            "seed": seed,
            "config_hash": "abc123",
            "git_commit": "unknown",
            "control": {"note": "stale"},
            "arms": {
                arm: {
                    "arm": arm,
                    "kind": "anytime",
                    "num_params": 45785857,
                    "blimp_accuracy": blimp,
                    "blimp_num_correct": int(blimp * 1000),
                    "blimp_num_total": 1000,
                    "solver_convergence_rate": 0.0,
                    "solver_mean_iterations": 12.0,
                    "final_loss": 2.89,
                    "loss_curve": [{"step": 0, "loss": 10.8}, {"step": 200, "loss": 7.1}],
                    "peak_memory_mb": 10875.7,
                    "train_time_sec": 1084.5,
                }
            },
        }
    ).encode()
