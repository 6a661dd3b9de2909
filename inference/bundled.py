"""The bundled models: the ones committed with the portal (ONNX under MODELS_DIR, checkpoints in inference/demo/).

Each id has an ONNX folder `MODELS_DIR/<id>/`, a checkpoint `inference/demo/<id>.pt`, its measured metrics
`inference/demo/<id>.metrics.json`, its training facts `inference/demo/<id>.facts.json` (generated from the
checkpoints' provenance by `manage.py write_card_facts`, never edited by hand) and optionally a hand-written card
`inference/demo/<id>.card.json` that says qualitatively what the model shows. The default model (`eqlm-demo`)
keeps the settings' paths: DEMO_MODEL_ONNX_DIR, DEMO_MODEL_CHECKPOINT and the metrics.json beside it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from django.conf import settings

from .models import RegisteredModel
from .serving import DEFAULT_MODEL_ID

DEFAULT_NAME = "EqLM demo (KJV, byte-level)"


def _read_json(path: Path) -> dict:
    try:
        data = json.loads(Path(path).read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _relative(path: Path) -> str:
    """A repository-relative path when the file is inside the repository (rows stay valid if it moves)."""
    try:
        return str(Path(path).resolve().relative_to(Path(settings.BASE_DIR).resolve()))
    except ValueError:
        return str(path)


@dataclass(frozen=True)
class BundledModel:
    id: str
    onnx_dir: Path
    checkpoint: Path
    metrics_path: Path
    card_path: Path
    facts_path: Path

    @property
    def is_default(self) -> bool:
        return self.id == DEFAULT_MODEL_ID

    def metrics(self) -> dict:
        return _read_json(self.metrics_path)

    def facts(self) -> dict:
        """The generated training facts ({} when there are none): recipe, stages, totals, held-out check."""
        return _read_json(self.facts_path)

    def card(self) -> dict:
        """The hand-written card ({} when there is none), with each measured row's cells formatted for a table."""
        card = _read_json(self.card_path)
        measured = card.get("measured") or {}
        for row in measured.get("rows") or []:
            unit, values = row.get("unit"), row.get("values") or []
            row["cells"] = [f"{v:.1%}" if unit == "fraction" else f"{v:g}" for v in values]
        return card

    def name(self) -> str:
        card, metrics = self.card(), self.metrics()
        return card.get("name") or metrics.get("name") or (DEFAULT_NAME if self.is_default else self.id)


def bundled_model(model_id: str) -> BundledModel:
    """Where a bundled id's files are (they may not exist)."""
    demo_dir = Path(settings.DEMO_MODEL_CHECKPOINT).parent
    if model_id == DEFAULT_MODEL_ID:
        return BundledModel(
            id=model_id,
            onnx_dir=Path(settings.DEMO_MODEL_ONNX_DIR),
            checkpoint=Path(settings.DEMO_MODEL_CHECKPOINT),
            metrics_path=demo_dir / "metrics.json",
            card_path=demo_dir / f"{model_id}.card.json",
            facts_path=demo_dir / f"{model_id}.facts.json",
        )
    return BundledModel(
        id=model_id,
        onnx_dir=Path(settings.MODELS_DIR) / model_id,
        checkpoint=demo_dir / f"{model_id}.pt",
        metrics_path=demo_dir / f"{model_id}.metrics.json",
        card_path=demo_dir / f"{model_id}.card.json",
        facts_path=demo_dir / f"{model_id}.facts.json",
    )


def bundled_models() -> list[BundledModel]:
    """The default model, then every other folder of MODELS_DIR with a manifest, by id."""
    ids = [DEFAULT_MODEL_ID]
    root = Path(settings.MODELS_DIR)
    if root.is_dir():
        ids += sorted(p.name for p in root.iterdir() if p.is_dir() and (p / "manifest.json").is_file())
    return [bundled_model(model_id) for model_id in dict.fromkeys(ids)]


def register_bundled(model: BundledModel) -> tuple[RegisteredModel | None, bool]:
    """Upsert one bundled model's registry row from its committed files (idempotent); (row, created).

    Nothing is registered for an id whose checkpoint or metrics file is missing.
    """
    metrics = model.metrics()
    if not model.checkpoint.exists() or not metrics:
        return None, False
    card, facts = model.card(), model.facts()
    stored = {k: metrics[k] for k in ("held_out_bits_per_byte", "training", "held_out") if k in metrics}
    if facts.get("totals"):  # every stage of the recipe, not only the last one's checkpoint
        stored["training"] = {"recipe": (facts.get("recipe") or {}).get("name"), **facts["totals"]}
    values = {
        "name": model.name(),
        "kind": RegisteredModel.Kind.DEMO,
        "model_class": metrics.get("model_class", "EqLM"),
        "checkpoint_path": _relative(model.checkpoint),
        "onnx_dir": _relative(model.onnx_dir) if (model.onnx_dir / "manifest.json").exists() else "",
        "sha256": metrics.get("checkpoint_sha256", ""),
        "size_bytes": model.checkpoint.stat().st_size,
        "num_params": metrics.get("num_params"),
        "config": metrics.get("config") or {},
        "provenance": metrics.get("provenance") or {},
        "metrics": stored,
        "notes": card.get("summary", ""),
    }
    row = RegisteredModel.objects.filter(slug=model.id).first()
    if row is None:
        return RegisteredModel.objects.create(slug=model.id, **values), True
    changed = [k for k, v in values.items() if getattr(row, k) != v]
    for key in changed:
        setattr(row, key, values[key])
    if changed:
        row.save(update_fields=changed)
    return row, False


def register_bundled_models() -> list[tuple[RegisteredModel, bool]]:
    """Register every bundled model that has its files; [(row, created)] in bundled order."""
    results = []
    for model in bundled_models():
        row, created = register_bundled(model)
        if row is not None:
            results.append((row, created))
    return results
