"""A registered checkpoint exported to ONNX on a worker is served under its slug, like the bundled models."""

import hashlib
import json
import time
from pathlib import Path

import pytest

from eqlm.checkpoint import save_checkpoint
from eqlm.generation import GenerationRequest, Generator
from eqlm.testing import tiny_explicit_model, tiny_model
from models_app import serving
from models_app.models import RegisteredModel

GREEDY = GenerationRequest(prompt="In the beginning", max_tokens=10, depth=4)


def registered(folder: Path, slug: str, seed: int, model_class: str = "EqLM") -> RegisteredModel:
    folder.mkdir(parents=True, exist_ok=True)
    model = tiny_model(seed=seed) if model_class == "EqLM" else tiny_explicit_model(seed=seed)
    path = save_checkpoint(model, folder / f"{slug}.pt", {"seed": seed, "config_hash": "x"})
    return RegisteredModel.objects.create(
        slug=slug,
        name=f"{slug} (uploaded)",
        model_class=model_class,
        checkpoint_path=str(path),
        sha256=hashlib.sha256(path.read_bytes()).hexdigest(),
    )


@pytest.fixture(autouse=True)
def fresh_serving():
    serving.reset()
    yield
    serving.reset()


@pytest.mark.django_db
def test_the_admin_action_exports_a_checkpoint_that_then_generates_under_its_slug(
    staff_client, tmp_path, tiny_onnx_export, django_capture_on_commit_callbacks
):
    row = registered(tmp_path, "tiny-upload", seed=1)
    with django_capture_on_commit_callbacks(execute=True):
        response = staff_client.post(
            "/admin/inference/registeredmodel/",
            {"action": "queue_onnx_export", "_selected_action": [row.pk]},
            follow=True,
        )
    assert "Queued 1 export(s)" in response.content.decode()
    row.refresh_from_db()
    folder = Path(row.onnx_dir)
    assert folder.name == "onnx" and folder.parent.name == row.sha256 and (folder / "manifest.json").exists()
    assert not list(folder.parent.glob("*.partial-*"))
    assert json.loads((folder / "manifest.json").read_text())["model_id"] == "tiny-upload"

    card = serving.resolve("tiny-upload")
    runtime = card.runtime()
    assert card.source == "registry" and card.name == "tiny-upload (uploaded)"
    assert runtime.generate(GREEDY).text == Generator(tiny_onnx_export(1)).generate(GREEDY).text
    body = staff_client.post("/v1/completions", {"model": "tiny-upload", "prompt": "In the", "max_tokens": 3},
                             content_type="application/json").json()  # fmt: skip
    assert body["model"] == "tiny-upload" and body["usage"]["completion_tokens"] == 3


@pytest.mark.django_db
def test_exporting_twice_keeps_the_first_export(tmp_path):
    from models_app.exports import export_registered_model

    row = export_registered_model(registered(tmp_path, "tiny-twice", seed=2).pk)
    manifest = Path(row.onnx_dir) / "manifest.json"
    written = manifest.stat().st_mtime_ns
    assert export_registered_model(row.pk).onnx_dir == row.onnx_dir
    assert manifest.stat().st_mtime_ns == written


@pytest.mark.django_db
def test_explicit_checkpoints_are_exported_and_served_too(staff_client, tmp_path, django_capture_on_commit_callbacks):
    row = registered(tmp_path, "explicit-one", seed=3, model_class="ExplicitLM")
    with django_capture_on_commit_callbacks(execute=True):
        response = staff_client.post(
            "/admin/inference/registeredmodel/",
            {"action": "queue_onnx_export", "_selected_action": [row.pk]},
            follow=True,
        )
    assert "Queued 1 export(s)." in response.content.decode()
    row.refresh_from_db()
    manifest = json.loads((Path(row.onnx_dir) / "manifest.json").read_text())
    assert manifest["model_class"] == "ExplicitLM"
    body = staff_client.post("/v1/completions", {"model": "explicit-one", "prompt": "In the", "max_tokens": 3},
                             content_type="application/json").json()  # fmt: skip
    assert body["model"] == "explicit-one" and body["usage"]["completion_tokens"] == 3


@pytest.mark.worker
@pytest.mark.django_db(transaction=True)
def test_a_real_worker_exports_a_registered_checkpoint(live_celery, settings):
    from models_app.exports import queue_export

    row = registered(Path(settings.MEDIA_ROOT) / "export-worker-test", "tiny-worker-export", seed=4)
    queue_export(row)  # outside a transaction: sent at once
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        row.refresh_from_db()
        if row.onnx_dir:
            break
        time.sleep(0.5)
    assert row.onnx_dir, "the worker did not export the checkpoint within 90 s"
    assert serving.resolve("tiny-worker-export").runtime().generate(GREEDY).completion_tokens == 10
