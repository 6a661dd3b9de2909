"""Pages of the inference app: the depth-dial demo (/demo/); the models registry (/models/) is model_pages.py.

The demo EqLM runs in the browser on onnxruntime-web; the server only serves files. The demo page also shows what
each notch of the dial buys: the demo model's measured quality at each depth (held-out bits per byte from its
metrics file, BLiMP accuracy by depth once an evaluation has written result rows).
"""

from __future__ import annotations

import csv
import io
import json
import logging
from pathlib import Path

from django.conf import settings
from django.http import FileResponse, Http404, HttpResponse, HttpResponsePermanentRedirect, JsonResponse
from django.shortcuts import render
from django.templatetags.static import static
from django.urls import reverse

from eqlm.limits import DEFAULT_DEPTH, DEPTH_MAX, STARTS
from eqlm.manifest import controls_of
from models_app.models import RegisteredModel
from models_app.services import DEMO_SLUG
from results.models import ResultRow

log = logging.getLogger(__name__)

# --- the depth-dial demo (/demo/) -----------------------------------------------------------------------------------

EXAMPLE_PROMPTS = [
    "In the beginning God created",
    "And the LORD said unto Moses,",
    "Blessed are the",
    "The heavens declare",
]


def onnx_dir() -> Path:
    from models_app.serving import default_onnx_dir

    return default_onnx_dir()


def read_json(path: Path) -> dict | None:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def manifest_url(model_id: str | None = None) -> str | None:
    """Where the browser reads a model's manifest; the manifest names each graph by a URL carrying its sha256."""
    from models_app.serving import UnknownModel, resolve

    try:
        card = resolve(model_id)
    except UnknownModel:
        return None
    return reverse("inference:model-manifest", args=[card.id])


def served_manifest(card) -> dict:
    """The manifest as the browser gets it: its own id, each graph's content-addressed URL, and for a bundled model
    the export's training figures labelled as the served checkpoint's last stage, beside the generated totals."""
    from models_app.bundled import bundled_model, last_stage_labelled

    manifest = dict(card.manifest)
    if card.source == "bundled":
        facts = bundled_model(card.id).facts()
        for key, totals in (("metrics", True), ("provenance", False)):
            if isinstance(manifest.get(key), dict):
                manifest[key] = last_stage_labelled(manifest[key], facts, totals=totals)
    manifest["model_id"] = card.id
    manifest["max_depth"] = card.max_depth
    manifest["graph_sha256"] = dict(card.graph_sha256)
    manifest["graph_urls"] = {
        role: reverse("inference:model-graph", args=[card.id, sha]) for role, sha in card.graph_sha256.items()
    }
    # each file's size: the dial's download progress and its estimate of the memory the model needs
    manifest["graph_bytes"] = {role: (card.onnx_dir / name).stat().st_size for role, name in card.graphs.items()}
    return manifest


def _card_or_404(model_id: str):
    from models_app.serving import UnknownModel, resolve

    try:
        card = resolve(model_id)
    except UnknownModel:
        raise Http404("No such model.") from None
    if card.error:
        raise Http404(f"The model's files cannot be served: {card.error}")
    return card


def model_manifest(request, model_id: str):
    """A servable model's manifest. Revalidated on every load (ETag = its export's version), so a new export of
    the model is seen at once; the graphs it names never change under their URLs."""
    card = _card_or_404(model_id)
    etag = f'"{card.version}"'
    if request.headers.get("If-None-Match") == etag:
        response = HttpResponse(status=304)
    else:
        response = JsonResponse(served_manifest(card))
    response["ETag"] = etag
    response["Cache-Control"] = "no-cache"
    return response


def model_graph(request, model_id: str, sha256: str):
    """One ONNX graph by its sha256: immutable, cached for a year. A hash that is not one of the model's current
    graphs is a 404, so a page holding an old manifest can never mix its graphs with a new export's."""
    path = _card_or_404(model_id).file_for_sha(sha256)
    if path is None:
        raise Http404("No such graph in this model's current export.")
    response = FileResponse(open(path, "rb"), content_type="application/octet-stream")  # noqa: SIM115
    response["Cache-Control"] = "public, max-age=31536000, immutable"
    return response


def legacy_model_file(request, model_id: str, name: str):
    """A bundled model's file at its address from when the exports were static files (STATIC_URL + models/<id>/<file>):
    a permanent redirect to the manifest or to the graph by its sha256, which the pages have used since."""
    card = _card_or_404(model_id)
    if name == "manifest.json":
        return HttpResponsePermanentRedirect(reverse("inference:model-manifest", args=[card.id]))
    role = next((role for role, file in card.graphs.items() if file == name), None)
    if role is None or role not in card.graph_sha256:
        raise Http404("No such file in this model's current export.")
    return HttpResponsePermanentRedirect(reverse("inference:model-graph", args=[card.id, card.graph_sha256[role]]))


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


def held_out_bits_per_byte(model_id: str | None = None) -> dict[int, float]:
    """Held-out bits/byte by depth, as measured on the ONNX files and stored with the model (manifest, metrics)."""
    from models_app.bundled import bundled_model
    from models_app.serving import DEFAULT_MODEL_ID, UnknownModel, resolve

    model_id = model_id or DEFAULT_MODEL_ID
    try:
        folder = resolve(model_id).onnx_dir
    except UnknownModel:
        folder = bundled_model(model_id).onnx_dir
    sources = [folder / "manifest.json", bundled_model(model_id).metrics_path]
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


def blimp_by_depth(model_id: str | None = None) -> dict[int, float]:
    """BLiMP accuracy by depth for a model, from result rows its evaluations wrote (empty until then)."""
    try:
        return ResultRow.objects.local_blimp_by_depth(model_id or DEMO_SLUG)
    except Exception:  # the chart is optional; the dial must still work
        log.exception("could not read BLiMP rows for the demo chart")
        return {}


def quality_table(model_id: str | None = None) -> list[dict]:
    bpb, blimp = held_out_bits_per_byte(model_id), blimp_by_depth(model_id)
    return [
        {"depth": d, "held_out_bits_per_byte": bpb.get(d), "blimp_accuracy": blimp.get(d)}
        for d in sorted(set(bpb) | set(blimp))
    ]


def training_facts(model_id: str | None = None) -> dict:
    """The training summary of a bundled model from its generated facts (models/<id>/facts.json)."""
    from models_app.bundled import bundled_model, training_summary
    from models_app.serving import DEFAULT_MODEL_ID

    return training_summary(bundled_model(model_id or DEFAULT_MODEL_ID).facts())


DEPTH_MARKS = (4, 8, 12, 16, 32, 64, 128)


def depth_marks(max_depth: int, min_depth: int = 1) -> list[dict]:
    """The dial's labelled notches from min_depth to max_depth, each with its position along the slider (percent);
    none when the depth is fixed."""
    if max_depth <= min_depth:
        return []
    span = max_depth - min_depth
    return [
        {"value": v, "left": f"{(v - min_depth) / span * 100:.2f}"} for v in DEPTH_MARKS if min_depth <= v <= max_depth
    ]


def dial_models() -> list[dict]:
    """Every model the dial can load: id and name, the default first."""
    from models_app.bundled import bundled_model
    from models_app.serving import model_cards

    names = dict(RegisteredModel.objects.values_list("slug", "name"))
    models = []
    for card in model_cards().values():
        if card.error:
            continue
        name = names.get(card.id) or (bundled_model(card.id).name() if card.source == "bundled" else card.name)
        models.append({"id": card.id, "name": name})
    return models


def selected_model(request) -> dict:
    """The model the page shows (?model=<id>, default eqlm-demo): id, name, depths, card, its generated figures by
    depth; 404 for an unknown id."""
    from models_app.bundled import bundled_model, measured_table
    from models_app.serving import DEFAULT_MODEL_ID, UnknownModel, resolve

    model_id = request.GET.get("model") or DEFAULT_MODEL_ID
    try:
        card = resolve(model_id)
    except UnknownModel:
        if model_id != DEFAULT_MODEL_ID:
            raise Http404("No such model.") from None
        card = None
    if card is not None and card.id != model_id:  # a configuration (`@depth=12`) is an API id, not a page
        raise Http404("No such model.")
    bundled = bundled_model(model_id)
    story = bundled.card()
    controls = controls_of(card.manifest) if card and not card.error else {}
    return {
        "id": model_id,
        "anchor": "local-demo" if bundled.is_default else f"local-{model_id}",
        "name": bundled.name(),
        "default_depth": card.default_depth if card else DEFAULT_DEPTH,
        "max_depth": card.max_depth if card else DEPTH_MAX,
        "min_depth": controls.get("min_depth", 1),
        # what the model takes (eqlm.manifest.controls_of): an explicit transformer's depth is fixed, with a note
        "controls": controls,
        "fixed_depth": bool(controls) and controls["min_depth"] == controls["max_depth"],
        "manifest": card.manifest if card else None,
        "card": story,
        "summary": story.get("shows") or story.get("summary", ""),
        "measured": measured_table(bundled.facts()),
    }


def demo(request):
    model = selected_model(request)
    manifest = model["manifest"]
    quality = quality_table(model["id"])
    context = {
        "section": "demo",
        "manifest_url": manifest_url(model["id"]),
        "model": model,
        "models": dial_models(),
        "depth_marks": depth_marks(model["max_depth"], model["min_depth"]),
        "model_available": manifest is not None,
        "manifest": manifest or {},
        "quality": quality,
        "has_blimp": any(row["blimp_accuracy"] is not None for row in quality),
        "training": training_facts(model["id"]),
        "examples": EXAMPLE_PROMPTS,
        "start_choices": [(start, start.title()) for start in STARTS],
        "page_config": {
            "manifestUrl": manifest_url(model["id"]),
            "completionsUrl": reverse("inference:v1-completions"),  # server-side generation (demo-server.js)
            "model": {"id": model["id"], "defaultDepth": model["default_depth"], "maxDepth": model["max_depth"]},
            "ortWasm": static("vendor/ort/ort-wasm-simd-threaded.wasm"),
            "ortMjs": reverse("inference:demo-ort", args=["ort-wasm-simd-threaded.mjs"]),
            "memoryLimit": settings.DIAL_BROWSER_MEMORY_MB * 1_000_000,
            "requireKey": settings.API_REQUIRE_KEY,
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
    model_id = selected_model(request)["id"]
    rows = quality_table(model_id)
    if fmt == "json":
        response = JsonResponse({"model": model_id, "rows": rows})
    else:
        buffer = io.StringIO()
        writer = csv.DictWriter(buffer, fieldnames=["depth", "held_out_bits_per_byte", "blimp_accuracy"])
        writer.writeheader()
        writer.writerows(rows)
        response = HttpResponse(buffer.getvalue(), content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{model_id}-quality-by-depth.{fmt}"'
    return response
