"""The programme's models at full size: build random-weight checkpoints of the anytime EqLM (120,696,016 parameters)
and the explicit baseline (123,760,908), then import, export, serve and evaluate each through the portal's own path.

    .venv/bin/python bench/programme_model.py [--models anytime explicit] [--pairs 4] [--tokens 16] [--json]

For each model it prints the seconds to build and save the file, to import it (stream, hash, validate in a child
process), to export it to ONNX and to measure its depth curve; the peak RSS of this process and of the validating
child; /v1/completions tokens/s at depth 12 (greedy, over real HTTP to an in-process server); and the programme
BLiMP protocol's pairs/s on CPU (`--pairs` per paradigm, five paradigms), and on CUDA when torch sees a GPU.
Everything runs in a throw-away folder (SQLite, MEDIA_ROOT) that is removed at the end.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

PROMPT = "The cat that the dogs chased"


def published_parameters(name: str) -> int:
    from eqlm.programme.config import PUBLISHED_SIZES

    return PUBLISHED_SIZES[name][3]


def peak_rss_mb(who: int = resource.RUSAGE_SELF) -> float:
    return resource.getrusage(who).ru_maxrss / 1024


def set_up_django(folder: Path) -> None:
    os.environ.update(
        DJANGO_SETTINGS_MODULE="portal.settings",
        VAR_DIR=str(folder),
        MEDIA_ROOT=str(folder / "media"),
        DATABASE_URL=f"sqlite:///{folder / 'bench.sqlite3'}",
        WARM_UP_MODEL="0",
        API_REQUIRE_KEY="0",
    )
    for name in ("CELERY_BROKER_URL", "CELERY_RESULT_BACKEND"):
        os.environ.pop(name, None)
    import django
    from django.core.management import call_command

    django.setup()
    call_command("migrate", verbosity=0)


def build(name: str, folder: Path) -> tuple[Path, float]:
    """A random-weight checkpoint of the published shape, saved in the programme's format; (path, seconds)."""
    import torch

    from eqlm.programme.checkpoint import save_programme_checkpoint
    from eqlm.programme.config import PUBLISHED_SIZES, published_config
    from eqlm.programme.model import build_programme_model

    model_class, _, n_layers, params = PUBLISHED_SIZES[name]
    started = time.perf_counter()
    torch.manual_seed(0)
    model = build_programme_model(published_config(name), model_class, n_layers)
    assert model.num_params() == params, (name, model.num_params())
    path = save_programme_checkpoint(model, folder / f"{name}.pt")
    del model
    return path, time.perf_counter() - started


def serve_http():
    from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

    from django.core.wsgi import get_wsgi_application

    class Quiet(WSGIRequestHandler):
        def log_message(self, *args):
            pass

    server = make_server("127.0.0.1", 0, get_wsgi_application(), server_class=WSGIServer, handler_class=Quiet)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def v1_tokens_per_second(server, slug: str, tokens: int, depth: int = 12) -> float:
    """Greedy /v1/completions over HTTP; the best of two runs after one warm-up (tokens over wall-clock seconds)."""
    import httpx

    url = f"http://127.0.0.1:{server.server_port}/v1/completions"
    body = {"model": slug, "prompt": PROMPT, "max_tokens": tokens, "temperature": 0, "depth": depth}
    best = 0.0
    with httpx.Client(timeout=600) as client:
        for i in range(3):
            started = time.perf_counter()
            response = client.post(url, json=body)
            response.raise_for_status()
            rate = response.json()["usage"]["completion_tokens"] / (time.perf_counter() - started)
            best = max(best, rate) if i else best
    return best


def protocol_pairs_per_second(slug: str, per_paradigm: int, device: str) -> tuple[float, int]:
    from django.conf import settings

    from models_app.models import RegisteredModel
    from models_app.programme_eval import create_protocol_run, run_protocol_evaluation

    settings.EVALUATION_DEVICE = device
    run = create_protocol_run(RegisteredModel.objects.get(slug=slug), "programme", None, per_paradigm)
    run = run_protocol_evaluation(run.pk)
    return run.results["pairs_per_second"], run.results["num_total"]


def measure(name: str, folder: Path, per_paradigm: int, tokens: int, server) -> dict:
    from models_app import serving
    from models_app.exports import export_registered_model
    from models_app.imports import register_checkpoint
    from models_app.programme_curve import measure_depth_curve

    path, built_s = build(name, folder)
    row = {"model": name, "parameters": published_parameters(name), "file_mb": round(path.stat().st_size / 1e6, 1)}
    row["build_s"] = round(built_s, 1)
    started = time.perf_counter()
    model, _ = register_checkpoint(path, slug=f"bench-{name}")
    row["import_s"] = round(time.perf_counter() - started, 1)
    started = time.perf_counter()
    model = export_registered_model(model.pk)
    row["export_s"] = round(time.perf_counter() - started, 1)
    row["onnx_mb"] = round(sum(p.stat().st_size for p in Path(model.onnx_dir).iterdir()) / 1e6, 1)
    started = time.perf_counter()
    measure_depth_curve(model, windows=1)
    row["depth_curve_s"] = round(time.perf_counter() - started, 1)
    serving.reset()
    row["v1_tokens_per_s_depth12"] = round(v1_tokens_per_second(server, model.slug, tokens), 2)
    row["cpu_pairs_per_s"], row["pairs"] = protocol_pairs_per_second(model.slug, per_paradigm, "cpu")
    import torch

    if torch.cuda.is_available():
        row["cuda_pairs_per_s"], _ = protocol_pairs_per_second(model.slug, per_paradigm, "cuda")
    row["peak_rss_mb"] = round(peak_rss_mb(), 0)
    row["child_peak_rss_mb"] = round(peak_rss_mb(resource.RUSAGE_CHILDREN), 0)
    path.unlink()
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="+", default=["anytime", "explicit"], choices=["anytime", "explicit"])
    parser.add_argument("--pairs", type=int, default=4, help="pairs per paradigm of the protocol (5 paradigms)")
    parser.add_argument("--tokens", type=int, default=16, help="tokens generated per /v1 request")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="eqlm-programme-bench-"))
    try:
        set_up_django(folder)
        server = serve_http()
        rows = [measure(name, folder, args.pairs, args.tokens, server) for name in args.models]
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    load = os.getloadavg()
    if args.json:
        print(json.dumps({"rows": rows, "load": load}))
        return
    print(f"load average at the end: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} on {os.cpu_count()} CPUs")
    keys = list(rows[0])
    print("| " + " | ".join(keys) + " |")
    print("|" + "---|" * len(keys))
    for row in rows:
        print("| " + " | ".join(str(row.get(k, "")) for k in keys) + " |")


if __name__ == "__main__":
    main()
