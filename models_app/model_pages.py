"""The models registry page (/models/): the programme's published model cards, the bundled models (their cards,
generated training and evaluation facts, stage tables and downloads) and uploaded checkpoints."""

from __future__ import annotations

import csv
import io
import json
import logging
from functools import lru_cache
from pathlib import Path

from django.conf import settings
from django.http import Http404, HttpResponse, JsonResponse
from django.shortcuts import render

from .models import EvaluationRun, RegisteredModel

log = logging.getLogger(__name__)

# --- the models registry page (/models/) ----------------------------------------------------------------------------

CARDS_PATH = Path(settings.BASE_DIR) / "fixtures" / "model_cards.json"


@lru_cache(maxsize=4)
def _cards(mtime: float) -> dict:
    return json.loads(CARDS_PATH.read_text())


def published_cards() -> dict:
    """The published models' cards (reference data in fixtures/model_cards.json)."""
    try:
        return _cards(CARDS_PATH.stat().st_mtime)
    except (OSError, json.JSONDecodeError):
        return {"models": []}


def bpb_rows(metrics: dict) -> list[dict]:
    full = metrics.get("held_out_bits_per_byte") or {}
    ci = (metrics.get("ci_slice") or {}).get("bits_per_byte") or {}
    depths = sorted({int(d) for d in full} | {int(d) for d in ci})
    return [
        {"depth": d, "held_out_bits_per_byte": full.get(str(d)), "ci_slice_bits_per_byte": ci.get(str(d))}
        for d in depths
    ]


def latest_evaluation(model: RegisteredModel | None) -> EvaluationRun | None:
    """The model's newest finished BLiMP evaluation."""
    if model is None:
        return None
    blimp = model.evaluations.filter(kind=EvaluationRun.Kind.BLIMP)  # convergence runs have their own panel
    blimp = blimp.exclude(options__has_key="protocol")  # a protocol's count is not a curve by depth
    return blimp.filter(status="done").order_by("-finished_at").first()


def blimp_rows(run: EvaluationRun | None) -> list[dict]:
    if run is None:
        return []
    rows = []
    for depth, summary in sorted(run.results.items(), key=lambda kv: int(kv[0])):
        o = summary["overall"]
        rows.append(
            {
                "depth": int(depth),
                "accuracy": o["accuracy"],
                "se": o["se"],
                "ties": o["ties"],
                "pairs": o["n"],
                "paradigms": o["paradigms"],
            }
        )
    return rows


def bundled_metrics(slug: str) -> dict | None:
    """A bundled model's metrics file ({} when missing), or None when slug is not a bundled model."""
    from .bundled import bundled_models

    for model in bundled_models():
        if model.id == slug:
            return model.metrics()
    return None


def bundled_entry(model) -> dict:
    """What /models/ shows for one bundled model: its card, facts, tables and latest BLiMP evaluation."""
    from .bundled import measured_table, training_summary

    metrics, facts = model.metrics(), model.facts()
    run = latest_evaluation(RegisteredModel.objects.filter(slug=model.id).first())
    samples = (metrics.get("greedy_samples") or {}).get("by_depth") or {}
    return {
        "id": model.id,
        "prefix": "demo" if model.is_default else model.id,
        "is_default": model.is_default,
        "explicit": metrics.get("model_class") == "ExplicitLM",  # one depth, its layer count; nothing converges
        "name": model.name(),
        "card": model.card(),
        "metrics": metrics,
        "metrics_path": model.metrics_path.name,
        "facts": facts,
        "measured": measured_table(facts),
        "halting": [
            {**h, "converged_percent": None if h.get("converged") is None else 100 * h["converged"]}
            for h in (facts.get("evaluation") or {}).get("halting") or []
        ],
        "training": training_summary(facts),
        "check_has_converged": any(
            row.get("converged") is not None for row in (facts.get("evaluation") or {}).get("heldout_check") or []
        ),
        "bpb": bpb_rows(metrics),
        "blimp": blimp_rows(run),
        "eval": run,
        "samples": [{"depth": int(d), **s} for d, s in sorted(samples.items(), key=lambda kv: int(kv[0]))],
        "sample_prompts": (metrics.get("greedy_samples") or {}).get("prompts", []),
    }


def listing_rows() -> list[dict]:
    """One row per model for /models/: the programme's published ones, the bundled ones, then uploaded or imported
    checkpoints; each links its own page."""
    from .bundled import bundled_models
    from .serving import model_cards

    served = set(model_cards())
    rows = [
        {"slug": c["slug"], "name": c["name"], "kind": "published by the programme", "model_class": c["architecture"]
         .split(",")[0], "parameters": c["parameters"], "tokens": "GPT-2 BPE", "served": False}
        for c in published_cards().get("models", [])
    ]  # fmt: skip
    for model in bundled_models():
        metrics = model.metrics()
        rows.append({"slug": model.id, "name": model.name(), "kind": "bundled (trained by this portal)",
                     "model_class": metrics.get("model_class", "EqLM"), "parameters": metrics.get("num_params"),
                     "tokens": "UTF-8 bytes", "served": model.id in served})  # fmt: skip
    for row in RegisteredModel.objects.uploaded():
        programme = (row.provenance or {}).get("format") == "programme"
        rows.append({"slug": row.slug, "name": row.name, "kind": "imported (the programme's format)" if programme
                     else "uploaded", "model_class": row.model_class, "parameters": row.num_params,
                     "tokens": "GPT-2 BPE" if programme else "UTF-8 bytes", "served": row.slug in served})  # fmt: skip
    return rows


def models_page(request):
    uploaded = []
    for model in RegisteredModel.objects.uploaded().select_related("uploaded_by"):
        last = model.evaluations.order_by("-created_at").first()
        uploaded.append({"model": model, "last": last, "rows": blimp_rows(latest_evaluation(model))})
    context = {"section": "models", "cards": published_cards(), "rows": listing_rows(), "uploaded": uploaded}
    return render(request, "models_app/models.html", context)


def published_page(request, card: dict):
    from .model_cards import published_sections

    hf = published_sections(card, published_cards().get("load_example", ""))
    return render(request, "models_app/model_published.html", {"section": "models", "card": card, "hf": hf})


def bundled_page(request, model):
    from .facts import precision_facts
    from .model_cards import bundled_sections

    entry = bundled_entry(model)
    context = {
        "section": "models",
        "m": entry,
        "hf": bundled_sections(entry),
        "precision": precision_facts(model.onnx_dir),
    }
    return render(request, "models_app/model_bundled.html", context)


STAGE_COLUMNS = [
    "stage",
    "from",
    "planned_steps",
    "planned_bytes",
    "steps",
    "bytes_seen",
    "seconds",
    "objective",
    "checkpoint",
    "sha256",
    "git_commit",
    "run_hash",
    "corpus_sha256",
    "created",
]


def stage_rows(facts: dict) -> list[dict]:
    """The training stages as flat rows (a stage no bundled checkpoint records has empty recorded cells)."""
    rows = []
    for stage in facts.get("stages") or []:
        recorded = stage.get("recorded") or {}
        row = {"stage": stage["name"], "from": stage["from"], "objective": stage["objective"]}
        row.update({k: stage.get(k) for k in ("planned_steps", "planned_bytes")})
        row.update({k: recorded.get(k) for k in STAGE_COLUMNS if k not in row})
        rows.append(row)
    return rows


HALTING_COLUMNS = ["solver", "tol", "cap", "mean_iterations", "bits_per_byte", "converged", "fixed_cap_bits_per_byte"]


def measured_rows(table: dict) -> tuple[list[dict], list[str]]:
    """The generated figures by depth as one row per depth, a column per measured series."""
    keys = [row["key"] for row in table.get("rows") or []]
    rows = [
        {"depth": depth, **{row["key"]: row["values"][i] for row in table["rows"]}}
        for i, depth in enumerate(table.get("depths") or [])
    ]
    return rows, ["depth", *keys]


def _table(slug: str, table: str) -> tuple[list[dict], list[str]]:
    metrics = bundled_metrics(slug)
    if table in ("stages", "check", "measured", "halting") and metrics is not None:
        from .bundled import bundled_model

        facts = bundled_model(slug).facts()
        evaluation = facts.get("evaluation") or {}
        if table == "stages":
            return stage_rows(facts), STAGE_COLUMNS
        if table == "measured":
            return measured_rows(evaluation.get("by_depth") or {})
        if table == "halting":
            return evaluation.get("halting") or [], HALTING_COLUMNS
        return evaluation.get("heldout_check") or [], ["depth", "bits_per_byte", "converged"]
    if table == "bpb" and metrics is not None:
        rows = bpb_rows(metrics)
        return rows, ["depth", "held_out_bits_per_byte", "ci_slice_bits_per_byte"]
    if table == "warm" and metrics is not None:
        warm = metrics.get("warm_start_decoding")
        if warm:
            columns = [
                "prompts",
                "tokens_per_prompt",
                "tol",
                "cap",
                "solver",
                "cold_mean_iterations",
                "warm_mean_iterations",
                "iteration_change",
                "greedy_token_agreement",
                "exact_sequences",
            ]
            return [{k: warm.get(k) for k in columns}], columns
    if table == "samples" and metrics is not None:
        samples = metrics.get("greedy_samples") or {}
        rows = [
            {"depth": int(d), "prompt": prompt, "real_word_share": s.get("real_word_share"), "text": text}
            for d, s in sorted((samples.get("by_depth") or {}).items(), key=lambda kv: int(kv[0]))
            for prompt, text in zip(samples.get("prompts", []), s.get("texts", []), strict=False)
        ]
        return rows, ["depth", "prompt", "real_word_share", "text"]
    if table == "blimp":
        model = RegisteredModel.objects.filter(slug=slug).first()
        if model is not None:
            return blimp_rows(latest_evaluation(model)), ["depth", "accuracy", "se", "ties", "pairs", "paradigms"]
    raise Http404("no such table")


def recipe_file(request, name: str):
    """A training recipe as plain text (a bundled model's models/<name>/recipe.toml, or eqlm/recipes/<name>.toml), so
    that a card can link the file it was made from."""
    from eqlm.model_files import recipe_file as recipe_path

    path = recipe_path(name)
    if not path.is_file():
        raise Http404("No such recipe.")
    return HttpResponse(path.read_text(), content_type="text/plain; charset=utf-8")


def table_download(request, slug: str, table: str, fmt: str):
    rows, columns = _table(slug, table)
    if fmt == "json":
        return JsonResponse({"model": slug, "table": table, "rows": rows})
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=columns)
    writer.writeheader()
    writer.writerows(rows)
    response = HttpResponse(buffer.getvalue(), content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{slug}-{table}.csv"'
    return response
