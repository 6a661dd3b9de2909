"""Harness A run records: results.json, with the seed and recipe in the sibling config.yaml."""

from __future__ import annotations

from .base import (
    Parsed,
    _dict,
    _err,
    _int,
    _loss_records,
    _num,
    experiment_from_hint,
    family_for,
    run_id_from_hint,
    seed_from_text,
)

_HARNESS_A_SCALARS = [
    ("total_time_sec", "train_time_sec", "s"),
    ("peak_memory_mb", "peak_memory_mb", "MB"),
    ("total_steps", "total_steps", "steps"),
    ("solver_mean_iterations", "solver_mean_iterations", "iterations"),
    ("solver_convergence_rate", "solver_convergence_rate", "fraction"),
    ("solver_max_iterations", "solver_max_iterations", "iterations"),
    ("solver_min_iterations", "solver_min_iterations", "iterations"),
]


def parse_config_yaml(text: str) -> dict:
    import yaml

    try:
        config = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise _err(f"config.yaml is not valid YAML: {str(exc).splitlines()[0]}")
    if not isinstance(config, dict):
        raise _err("config.yaml must hold a mapping.")
    return config


def parse_harness_a(obj: dict, *, path_hint: str, config: dict | None, experiment: str | None) -> Parsed:
    run_id = run_id_from_hint(path_hint)
    if not run_id:
        raise _err("Harness A files need a path hint such as exp10_5090/exp10_seed42/results.json (it names the run).")
    notes = []
    seed, inferred = None, False
    training = (config or {}).get("training") if isinstance(config, dict) else None
    if isinstance(training, dict) and isinstance(training.get("seed"), int) and not isinstance(training["seed"], bool):
        seed = training["seed"]
    else:
        seed = seed_from_text(run_id)
        inferred = seed is not None
        if seed is None:
            raise _err(
                "The seed of a harness A run lives in its config.yaml: upload config.yaml beside results.json "
                "or give a path hint that names the seed (…_seed42/results.json).",
                "/",
            )
        notes.append(f"seed {seed} inferred from the path {path_hint!r} (no config.yaml)")
    arms = _dict(obj.get("arms"), "/arms")
    yaml_arms = (config or {}).get("arms") if isinstance(config, dict) else None
    hardware = "RTX 5090" if "5090" in path_hint else ""
    base_run = {
        "run": run_id,
        "experiment": experiment or experiment_from_hint(path_hint),
        "seed": seed,
        "seed_inferred": inferred,
        "config_hash": str(obj.get("config_hash") or ""),
        "git_commit": str(obj.get("git_commit") or ""),
        "hardware": hardware,
    }
    records: list[dict] = []
    for label, arm in arms.items():
        p = f"/arms/{label}"
        arm = _dict(arm, p)
        model_name = str(arm.get("model_name") or "")
        recipe = yaml_arms.get(label) if isinstance(yaml_arms, dict) and isinstance(yaml_arms.get(label), dict) else {}
        if not recipe and isinstance(arm.get("config"), dict):
            recipe = {"config": arm["config"], "source": "results.json (the yaml recipe was not uploaded)"}
        base = {
            **base_run,
            "arm": str(label),
            "model_family": family_for(str(label), (recipe or {}).get("name", "") or model_name),
            "model_name": str(recipe.get("name") or model_name),
            "num_params": _int(arm, "num_params", p),
            "recipe": recipe,
        }
        blimp = _num(arm, "blimp_accuracy", p)
        if blimp is not None:
            records.append(
                {
                    **base,
                    "metric": "blimp_accuracy",
                    "value": blimp,
                    "unit": "fraction",
                    "n": _int(arm, "blimp_num_total", p),
                    "pointer": f"{p}/blimp_accuracy",
                }
            )
        for key, metric, unit in _HARNESS_A_SCALARS:
            value = _num(arm, key, p)
            if value is not None:
                records.append({**base, "metric": metric, "value": value, "unit": unit, "pointer": f"{p}/{key}"})
        loss = _loss_records(base, arm.get("loss_curve"), f"{p}/loss_curve")
        if loss:
            last = loss[-1]
            records.append({**last, "metric": "final_loss", "step": None})
        records.extend(loss)
    run_config = {k: v for k, v in obj.items() if k != "arms"}
    if config:
        run_config = {"config_yaml": config, "results_header": run_config}
    return Parsed("harness_a", records, notes, {run_id: run_config})
