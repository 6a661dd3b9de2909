"""Pages of the inference app: the depth-dial demo (/demo/) and the models registry (/models/).

The demo EqLM runs in the browser on onnxruntime-web; the server only serves files. The demo page also shows what
each notch of the dial buys: the demo model's measured quality at each depth (held-out bits per byte from its
metrics file, BLiMP accuracy by depth once an evaluation has written result rows). The registry page shows the
programme's published model cards, the local demo model and uploaded checkpoints.
"""

from __future__ import annotations

import csv
import io
import json
import logging
from functools import lru_cache
from pathlib import Path

from django.conf import settings
from django.http import FileResponse, Http404, HttpResponse, JsonResponse
from django.shortcuts import render
from django.templatetags.static import static
from django.urls import reverse

from .models import EvaluationRun, RegisteredModel
from .services import DEMO_SLUG, read_demo_metrics

log = logging.getLogger(__name__)

# --- the depth-dial demo (/demo/) -----------------------------------------------------------------------------------

EXAMPLE_PROMPTS = [
    "In the beginning God created",
    "And the LORD said unto Moses,",
    "Blessed are the",
    "The heavens declare",
]


def onnx_dir() -> Path:
    return Path(settings.DEMO_MODEL_ONNX_DIR)


def read_json(path: Path) -> dict | None:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def manifest_url() -> str | None:
    """Where the browser reads the manifest (the graphs sit beside it).

    Inside the static folder (the committed demo model) the files are static files; a DEMO_MODEL_ONNX_DIR
    elsewhere is served by `model_file` below.
    """
    folder = onnx_dir()
    if not (folder / "manifest.json").exists():
        return None
    try:
        relative = folder.resolve().relative_to((settings.BASE_DIR / "static").resolve())
    except ValueError:
        return reverse("inference:demo-model-file", args=["manifest.json"])
    return static(f"{relative.as_posix()}/manifest.json")


def model_file(request, name: str):
    """The manifest or one of the graphs it names, from DEMO_MODEL_ONNX_DIR (nothing else in that folder)."""
    manifest = read_json(onnx_dir() / "manifest.json")
    allowed = {"manifest.json", *((manifest or {}).get("graphs") or {}).values()}
    if manifest is None or name not in allowed:
        raise Http404("No such model file.")
    content_type = "application/json" if name.endswith(".json") else "application/octet-stream"
    response = FileResponse(open(onnx_dir() / name, "rb"), content_type=content_type)  # noqa: SIM115
    response["Cache-Control"] = "public, max-age=3600"
    return response


def _depth_series(mapping) -> dict[int, float]:
    """{depth: value} from a {"1": x, ...} mapping or a [{"depth": d, "value"/...: x}] list."""
    series: dict[int, float] = {}
    if isinstance(mapping, dict):
        for key, value in mapping.items():
            if str(key).isdigit() and isinstance(value, (int, float)):
                series[int(key)] = float(value)
    elif isinstance(mapping, list):
        for row in mapping:
            if isinstance(row, dict) and "depth" in row:
                value = next((row[k] for k in ("bits_per_byte", "bpb", "value") if k in row), None)
                if isinstance(value, (int, float)):
                    series[int(row["depth"])] = float(value)
    return dict(sorted(series.items()))


def held_out_bits_per_byte() -> dict[int, float]:
    """Held-out bits/byte by depth, as measured on the ONNX files and stored with the demo model."""
    sources = [onnx_dir() / "manifest.json", Path(settings.DEMO_MODEL_CHECKPOINT).parent / "metrics.json"]
    for path in sources:
        data = read_json(path) or {}
        for holder in (data, data.get("metrics") or {}):
            if not isinstance(holder, dict):
                continue
            for key in ("bits_per_byte", "held_out_bits_per_byte", "heldout_bits_per_byte", "bpb_by_depth"):
                series = _depth_series(holder.get(key))
                if series:
                    return series
    return {}


def blimp_by_depth() -> dict[int, float]:
    """BLiMP accuracy by depth for the demo model, from result rows its evaluations wrote (empty until then).

    Evaluations of different pair subsets may coexist; per depth the one that scored the most pairs is shown.
    """
    try:
        from benchmarks_app.models import ResultRow

        from .services import DEMO_SLUG
    except ImportError:
        return {}
    try:
        rows = ResultRow.objects.filter(experiment="local", metric="blimp_accuracy", arm_label=DEMO_SLUG)
        best: dict[int, tuple[int, float]] = {}
        for condition, value, n in rows.values_list("condition", "value", "n"):
            depth = (condition or {}).get("depth")
            if isinstance(depth, int) and (depth not in best or (n or 0) > best[depth][0]):
                best[depth] = (n or 0, value)
        return {depth: value for depth, (_, value) in sorted(best.items())}
    except Exception:  # the chart is optional; the dial must still work
        log.exception("could not read BLiMP rows for the demo chart")
        return {}


def quality_table() -> list[dict]:
    bpb, blimp = held_out_bits_per_byte(), blimp_by_depth()
    return [
        {"depth": d, "held_out_bits_per_byte": bpb.get(d), "blimp_accuracy": blimp.get(d)}
        for d in sorted(set(bpb) | set(blimp))
    ]


def training_facts(manifest: dict | None) -> dict:
    """Bytes seen and training time, from the manifest's metrics or the demo model's metrics file."""
    metrics = (manifest or {}).get("metrics") or {}
    stored = read_json(Path(settings.DEMO_MODEL_CHECKPOINT).parent / "metrics.json") or {}
    training = stored.get("training") or {}
    tokens = metrics.get("tokens_seen") or training.get("tokens_seen")
    seconds = metrics.get("train_seconds") or training.get("train_seconds")
    return {"tokens_seen": tokens, "train_minutes": round(seconds / 60) if seconds else None}


def demo(request):
    manifest = read_json(onnx_dir() / "manifest.json")
    quality = quality_table()
    context = {
        "section": "demo",
        "manifest_url": manifest_url(),
        "model_available": manifest is not None,
        "manifest": manifest or {},
        "quality": quality,
        "has_blimp": any(row["blimp_accuracy"] is not None for row in quality),
        "training": training_facts(manifest),
        "examples": EXAMPLE_PROMPTS,
        "page_config": {
            "manifestUrl": manifest_url(),
            "ortWasm": static("vendor/ort/ort-wasm-simd-threaded.wasm"),
            "ortMjs": reverse("inference:demo-ort", args=["ort-wasm-simd-threaded.mjs"]),
            "quality": quality,
        },
    }
    response = render(request, "inference/demo.html", context)
    response.csp_extra = {"script-src": "'wasm-unsafe-eval'"}
    response.cross_origin_isolated = True
    return response


ORT_WORKER_SCRIPTS = {"ort-wasm-simd-threaded.mjs"}


def ort_worker_script(request, name: str):
    """onnxruntime-web's wasm loader, which also runs as the script of its worker threads.

    A worker under the page's cross-origin isolation must be served with COEP itself, and it compiles
    WebAssembly under its own CSP; static files carry neither, so this one file is served through the
    middleware with the same headers as the page (the file itself is the vendored static one).
    """
    from django.contrib.staticfiles import finders
    from django.contrib.staticfiles.storage import staticfiles_storage

    if name not in ORT_WORKER_SCRIPTS:
        raise Http404("No such file.")
    path = finders.find(f"vendor/ort/{name}")
    if not path:
        try:
            path = staticfiles_storage.path(f"vendor/ort/{name}")
        except NotImplementedError:
            path = None
    if not path or not Path(path).exists():
        raise Http404("onnxruntime-web is not installed (make vendor).")
    response = FileResponse(open(path, "rb"), content_type="text/javascript; charset=utf-8")  # noqa: SIM115
    response["Cache-Control"] = "public, max-age=86400"
    response.csp_extra = {"script-src": "'wasm-unsafe-eval'"}
    response.cross_origin_isolated = True
    return response


def quality_download(request, fmt: str):
    rows = quality_table()
    if fmt == "json":
        response = JsonResponse({"model": "eqlm-demo", "rows": rows})
    else:
        buffer = io.StringIO()
        writer = csv.DictWriter(buffer, fieldnames=["depth", "held_out_bits_per_byte", "blimp_accuracy"])
        writer.writeheader()
        writer.writerows(rows)
        response = HttpResponse(buffer.getvalue(), content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="eqlm-demo-quality-by-depth.{fmt}"'
    return response


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
