"""facts.json and metrics.json of a registered model's folder: what was measured from the file, never typed in."""

from __future__ import annotations

import json
from pathlib import Path

from django.conf import settings

from eqlm.manifest import precisions_of

from .models import RegisteredModel, model_folder_name

SOLVER_FIELDS = ("solver", "deq_max_iter", "deq_tol", "map_form", "spectral_norm", "residual_damping")
SHAPE_FIELDS = ("vocab_size", "d_model", "n_heads", "d_ff", "max_seq_len")


def folder_of(row: RegisteredModel) -> Path:
    return Path(settings.MEDIA_ROOT) / model_folder_name(row.sha256)


def model_facts(row: RegisteredModel) -> dict:
    """The facts a model page and facts.json show: parameters, tokenizer, solver, shapes and the file's hash."""
    provenance, config = row.provenance or {}, row.config or {}
    programme = provenance.get("format") == "programme"
    facts = {
        "slug": row.slug,
        "model_class": row.model_class,
        "format": "programme" if programme else "portal",
        "parameters": row.num_params,
        "tokenizer": "gpt2" if programme else "bytes",
        "sha256": row.sha256,
        "size_bytes": row.size_bytes,
        "shape": {k: config[k] for k in SHAPE_FIELDS if k in config},
    }
    if programme:
        facts["solver"] = {k: config[k] for k in SOLVER_FIELDS if k in config}
        facts["training_only"] = provenance.get("training_only", {})
        if provenance.get("n_layers") is not None:
            facts["n_layers"] = provenance["n_layers"]
    if provenance.get("declared"):
        facts["declared"] = provenance["declared"]
    return facts


def precision_facts(onnx_dir: str | Path | None) -> dict:
    """The precisions an export serves and its measured int8 difference (the manifest's `precisions` and `int8`);
    {} without a readable manifest."""
    if not onnx_dir:
        return {}
    try:
        manifest = json.loads((Path(onnx_dir) / "manifest.json").read_text())
    except (OSError, ValueError):
        return {}
    return {
        "precisions": precisions_of(manifest),
        "int8": manifest.get("int8") if "int8" in precisions_of(manifest) else None,
    }


def write_json(path: Path, data: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")
    tmp.replace(path)


def write_facts(row: RegisteredModel) -> dict:
    facts = model_facts(row)
    write_json(folder_of(row) / "facts.json", facts)
    return facts


def record_metric(row: RegisteredModel, key: str, value: dict) -> dict:
    """Merge one measured result (a protocol's count, a depth curve) into metrics.json and the row's metrics."""
    metrics = dict(row.metrics or {})
    metrics[key] = value
    RegisteredModel.objects.filter(pk=row.pk).update(metrics=metrics)
    row.metrics = metrics
    if row.checkpoint:  # a folder of its own (models/<sha256>/)
        write_json(folder_of(row) / "metrics.json", metrics)
    return metrics
