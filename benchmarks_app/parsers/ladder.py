"""The benchmark ladder (web-data/ladder_exp40.json: {rows: [{model, tokens, mean6, <task>...}]})."""

from __future__ import annotations

from .base import (
    Parsed,
    _dict,
    _err,
    _num,
    run_id_from_hint,
)

LADDER_TASKS = ["arc_easy", "arc_challenge", "hellaswag", "piqa", "winogrande", "sciq", "lambada_openai"]


def parse_ladder(obj: dict, *, path_hint: str, experiment: str | None) -> Parsed:
    run_id = run_id_from_hint(path_hint) or "ladder_exp40"
    rows = obj.get("rows")
    if not isinstance(rows, list):
        raise _err("rows must be a list.", "/rows")
    records = []
    for i, row in enumerate(rows):
        p = f"/rows/{i}"
        row = _dict(row, p)
        model = row.get("model")
        if not isinstance(model, str) or not model:
            raise _err("Each ladder row needs a model name.", f"{p}/model")
        tokens = str(row.get("tokens") or "")
        ours = bool(row.get("ours"))
        base = {"run": run_id, "experiment": experiment or "exp40_ladder", "arm": model[:100],
                "model_name": model[:200], "model_family": "programme" if ours else "reference",
                "recipe": {"ours": ours}}  # fmt: skip
        for key in row:
            if key in ("model", "tokens", "ours"):
                continue
            val = _num(row, key, p)
            if val is None:
                continue
            metric = "ladder_mean6" if key == "mean6" else "ladder_accuracy"
            condition = {"tokens": tokens} if key == "mean6" else {"tokens": tokens, "task": key}
            records.append({**base, "metric": metric, "value": val, "unit": "fraction", "condition": condition,
                            "pointer": f"{p}/{key}"})  # fmt: skip
    notes = []
    if obj.get("chance_note"):
        notes.append(str(obj["chance_note"]))
    return Parsed("ladder", records, notes, {run_id: {k: v for k, v in obj.items() if k != "rows"}})
