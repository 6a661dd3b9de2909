"""lm-eval-style per-task results: {model, tasks: {name: {acc, acc_norm, n}}}."""

from __future__ import annotations

from .base import (
    Parsed,
    _dict,
    _err,
    _int,
    _num,
    experiment_from_hint,
    run_id_from_hint,
)


def parse_lm_eval(obj: dict, *, path_hint: str, experiment: str | None, arm: str | None) -> Parsed:
    model = str(obj.get("model") or (obj.get("config") or {}).get("model_args") or arm or "model")[:100]
    tasks = obj.get("tasks") if isinstance(obj.get("tasks"), dict) else obj.get("results")
    tasks = _dict(tasks, "/tasks")
    seed = _int(obj, "seed", "")
    run_id = run_id_from_hint(path_hint) or f"lm_eval/{model}"
    base = {"run": run_id, "experiment": experiment or experiment_from_hint(path_hint) or "lm_eval", "seed": seed,
            "arm": arm or model, "model_name": model}  # fmt: skip
    key = "tasks" if isinstance(obj.get("tasks"), dict) else "results"
    records = []
    for task, scores in tasks.items():
        p = f"/{key}/{task}"
        scores = _dict(scores, p)
        n = _int(scores, "n", p)
        for field_name, value in scores.items():
            metric = field_name.split(",", 1)[0]
            if metric not in ("acc", "acc_norm") or value is None:
                continue
            val = _num(scores, field_name, p)
            records.append({**base, "metric": "task_accuracy" if metric == "acc" else "task_accuracy_norm",
                            "value": val, "unit": "fraction", "n": n, "condition": {"task": str(task)},
                            "pointer": f"{p}/{field_name}"})  # fmt: skip
    if not records:
        raise _err("No acc or acc_norm values found in the task results.", f"/{key}")
    return Parsed("lm_eval", records, [], {})
