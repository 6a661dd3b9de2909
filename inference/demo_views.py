"""The depth-dial page (/demo/): the demo EqLM runs in the browser on onnxruntime-web; the server only serves files.

The page also shows what each notch of the dial buys: the demo model's measured quality at each depth (held-out
bits per byte from its metrics file, BLiMP accuracy by depth once an evaluation has written result rows).
"""

import csv
import io
import json
import logging
from pathlib import Path

from django.conf import settings
from django.http import FileResponse, Http404, HttpResponse, JsonResponse
from django.shortcuts import render
from django.templatetags.static import static
from django.urls import reverse

log = logging.getLogger(__name__)

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

        from .registry import DEMO_SLUG
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
