"""The Hugging Face-shaped sections every model page carries (licence, data, intended use, training, evaluation,
limitations, how to load, provenance), from what is recorded for each kind of model: a published card, a bundled
model's generated facts, or an uploaded or imported checkpoint's file."""

from __future__ import annotations

from .facts import model_facts
from .models import RegisteredModel

INTENDED_USE = (
    "Research on equilibrium language models: reading what the programme measured, turning the depth dial and "
    "re-measuring. Not for deployment: none of these models was built or checked for safety or factual use."
)
PORTAL_LOAD = (
    "from eqlm.checkpoint import load_checkpoint\n"
    'model, data = load_checkpoint("{path}")  # weights_only=True; data["provenance"] says how it was made\n'
    '# without torch, its ONNX export on the portal: POST /v1/completions {{"model": "{id}"}}'
)
PROGRAMME_LOAD = (
    "import torch\n"
    'blob = torch.load("checkpoint.pt", map_location="cpu", weights_only=True)  # config_dict, model_class\n'
    "# on the portal: manage.py import_model checkpoint.pt --slug {id}\n"
    '# then POST /v1/completions {{"model": "{id}"}}'
)


def published_sections(card: dict, load_example: str) -> dict:
    return {
        "licence": card.get("licence")
        or "Not stated in the record for this model (the programme's seed model card "
        "publishes its anytime model under Apache-2.0).",
        "data": card.get("data"),
        "intended_use": INTENDED_USE,
        "training": card.get("training"),
        "evaluation": "The recorded figures above, each with the finding that records it.",
        "limitations": card.get("non_claims") or [],
        "how_to_load": load_example,
        "provenance": [("Findings", ", ".join(card.get("findings") or [])), ("Weights", card.get("weights", ""))],
    }


def bundled_sections(entry: dict) -> dict:
    facts, card = entry.get("facts") or {}, entry.get("card") or {}
    served, recipe = facts.get("served") or {}, facts.get("recipe") or {}
    training = entry.get("training") or {}
    trained = recipe.get("title") or "not recorded"
    if training.get("minutes"):
        trained += f"; {training['minutes']} minutes of recorded training"
    return {
        "licence": "Trained by this portal for its own demos; no separate licence accompanies the weights.",
        "data": served.get("corpus") or training.get("corpus") or "not recorded",
        "intended_use": INTENDED_USE,
        "training": trained,
        "evaluation": "The measured tables above, generated from the served checkpoint and its export.",
        "limitations": [
            "A small byte-level model (tens of thousands of parameters) trained on one corpus: it writes "
            "corpus-like text, not answers, and is not one of the programme's published models.",
            *([card["halting_and_warm_start"]] if card.get("halting_and_warm_start") else []),
        ],
        "how_to_load": PORTAL_LOAD.format(path=served.get("checkpoint", ""), id=entry["id"]),
        "provenance": [
            ("Checkpoint sha256", served.get("sha256", "not recorded")),
            ("Stage", served.get("stage", "not recorded")),
            ("Corpus sha256", served.get("corpus_sha256", "not recorded")),
            ("Recipe", recipe.get("file", "not recorded")),
        ],
    }


def registered_sections(row: RegisteredModel, meta: dict | None = None) -> dict:
    """The sections of an uploaded or imported checkpoint; `meta` is its card's front matter (licence, datasets)."""
    meta = meta or {}
    facts = model_facts(row)
    programme = facts["format"] == "programme"
    provenance = [("sha256", row.sha256), ("Registered", row.created_at.strftime("%Y-%m-%d %H:%M UTC"))]
    if row.uploaded_by_id:
        provenance.append(("Uploaded by", row.uploaded_by.get_username()))
    if facts.get("declared"):
        d = facts["declared"]
        provenance.append(("Declared as", f"{d['experiment']} arm {d['arm']}, seed {d['seed']}"))
    return {
        "licence": str(meta.get("license") or "Not stated in the uploaded card; the portal records none of its own."),
        "data": ", ".join(map(str, meta["datasets"]))
        if isinstance(meta.get("datasets"), list)
        else "Not stated in the uploaded card; the file itself does not record its training data."
        if programme
        else str((row.provenance or {}).get("corpus") or "not recorded in the file"),
        "intended_use": INTENDED_USE,
        "training": "Training-only settings recorded in the file: "
        + ", ".join(f"{k}={v}" for k, v in (facts.get("training_only") or {}).items())
        if programme
        else f"{(row.provenance or {}).get('steps', 'unrecorded')} steps (the file's provenance)",
        "evaluation": "The protocol result and the depth curve above, measured here on the file.",
        "limitations": [],
        "how_to_load": (PROGRAMME_LOAD if programme else PORTAL_LOAD).format(path="checkpoint.pt", id=row.slug),
        "provenance": provenance,
    }
