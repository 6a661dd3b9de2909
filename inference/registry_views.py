"""The /models/ registry page: the programme's published model cards, the local demo model, uploaded checkpoints."""

from __future__ import annotations

import csv
import io
import json
from functools import lru_cache
from pathlib import Path

from django.conf import settings
from django.http import Http404, HttpResponse, JsonResponse
from django.shortcuts import render

from .models import EvaluationRun, RegisteredModel
from .registry import DEMO_SLUG, read_demo_metrics

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
    if model is None:
        return None
    return model.evaluations.filter(status="done").order_by("-finished_at").first()


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


def models_page(request):
    metrics = read_demo_metrics()
    demo_row = RegisteredModel.objects.filter(slug=DEMO_SLUG).first()
    demo_eval = latest_evaluation(demo_row)
    uploaded = []
    for model in RegisteredModel.objects.uploaded().select_related("uploaded_by"):
        last = model.evaluations.order_by("-created_at").first()
        uploaded.append({"model": model, "last": last, "rows": blimp_rows(latest_evaluation(model))})
    samples = (metrics.get("greedy_samples") or {}).get("by_depth") or {}
    context = {
        "section": "models",
        "cards": published_cards(),
        "demo": metrics,
        "demo_bpb": bpb_rows(metrics),
        "demo_blimp": blimp_rows(demo_eval),
        "demo_eval": demo_eval,
        "demo_samples": [{"depth": int(d), **s} for d, s in sorted(samples.items(), key=lambda kv: int(kv[0]))],
        "sample_prompts": (metrics.get("greedy_samples") or {}).get("prompts", []),
        "uploaded": uploaded,
    }
    return render(request, "inference/models.html", context)


def _table(slug: str, table: str) -> tuple[list[dict], list[str]]:
    if table == "bpb" and slug == DEMO_SLUG:
        rows = bpb_rows(read_demo_metrics())
        return rows, ["depth", "held_out_bits_per_byte", "ci_slice_bits_per_byte"]
    if table == "warm" and slug == DEMO_SLUG:
        warm = read_demo_metrics().get("warm_start_decoding")
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
    if table == "samples" and slug == DEMO_SLUG:
        samples = read_demo_metrics().get("greedy_samples") or {}
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
