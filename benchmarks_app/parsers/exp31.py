"""exp31 adaptive-depth files: explicit_fixed / eqlm_uniform / eqlm_adaptive_matched and the tolerance sweep."""

from __future__ import annotations

from .base import (
    Parsed,
    _dict,
    _err,
    _int,
    _num,
    family_for,
    run_id_from_hint,
    seed_from_text,
)


def parse_exp31(obj: dict, *, path_hint: str, experiment: str | None) -> Parsed:
    checkpoint = str(obj.get("eqlm_checkpoint") or "")
    seed = _int(obj, "seed", "")
    inferred = False
    if seed is None:
        seed = seed_from_text(checkpoint)
    if seed is None:
        seed = seed_from_text(path_hint)
        inferred = seed is not None
    if seed is None:
        raise _err("The exp31 file names no seed (in the file, its checkpoint name or the path hint).", "/")
    run_id = run_id_from_hint(path_hint) or f"exp31_seed{seed}"
    base_run = {"run": run_id, "experiment": experiment or "exp31", "seed": seed, "seed_inferred": inferred}
    arms = _dict(obj.get("arms"), "/arms")
    calibration = obj.get("calibration") if isinstance(obj.get("calibration"), dict) else {}
    records = []
    families = {"explicit_fixed": "explicit", "eqlm_uniform": "tied-anytime", "eqlm_adaptive_matched": "tied-anytime"}
    for label, arm in arms.items():
        p = f"/arms/{label}"
        arm = _dict(arm, p)
        base = {**base_run, "arm": str(label), "model_family": families.get(label, family_for(label)),
                "model_name": str(label), "recipe": {k: v for k, v in arm.items() if k == "tolerance"}}  # fmt: skip
        if _num(arm, "blimp", p) is not None:
            records.append({**base, "metric": "blimp_accuracy", "value": _num(arm, "blimp", p), "unit": "fraction",
                            "pointer": f"{p}/blimp"})  # fmt: skip
        if _num(arm, "mean_depth", p) is not None:
            records.append({**base, "metric": "mean_depth", "value": _num(arm, "mean_depth", p),
                            "unit": "iterations", "pointer": f"{p}/mean_depth"})  # fmt: skip
    sweep = obj.get("tolerance_sweep") or []
    if not isinstance(sweep, list):
        raise _err("tolerance_sweep must be a list.", "/tolerance_sweep")
    matched_tol = _num(calibration, "tolerance", "/calibration") if calibration else None
    for i, point in enumerate(sweep):
        p = f"/tolerance_sweep/{i}"
        point = _dict(point, p)
        tol = _num(point, "tolerance", p, required=True)
        multiple = round(tol / matched_tol) if matched_tol else i + 1
        base = {**base_run, "arm": "eqlm_adaptive", "model_family": "tied-anytime", "model_name": "eqlm_adaptive",
                "condition": {"tolerance_multiple": multiple}}  # fmt: skip
        records.append({**base, "metric": "blimp_accuracy", "value": _num(point, "blimp", p, required=True),
                        "unit": "fraction", "pointer": f"{p}/blimp"})  # fmt: skip
        records.append({**base, "metric": "mean_depth", "value": _num(point, "mean_depth", p, required=True),
                        "unit": "iterations", "pointer": f"{p}/mean_depth"})  # fmt: skip
        records.append({**base, "metric": "tolerance", "value": tol, "unit": "", "pointer": f"{p}/tolerance"})
    config = {k: v for k, v in obj.items() if k not in ("arms", "tolerance_sweep")}
    return Parsed("exp31_depth", records, [], {run_id: config})
