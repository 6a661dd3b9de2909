"""The programme's published sizes go through the whole path: a random-weight anytime EqLM (120,696,016 parameters)
and explicit baseline (123,760,908) are imported, exported, served on /v1 and scored on 20 protocol pairs."""

import io
import json
from pathlib import Path

import pytest
import torch
from django.core.management import call_command
from django.db import connection

from eqlm.programme.checkpoint import save_programme_checkpoint
from eqlm.programme.config import PUBLISHED_SIZES, published_config
from eqlm.programme.model import build_programme_model
from models_app import serving
from models_app.models import RegisteredModel

pytestmark = [pytest.mark.slow, pytest.mark.django_db]

SIZES = ["anytime", "explicit"]


@pytest.fixture(autouse=True)
def once_and_fresh(settings, shared_dir):
    if connection.vendor != "sqlite":
        pytest.skip("the full-size round trip runs once, on the SQLite pass")
    if not (Path(shared_dir) / "blimp" / "adjunct_island.jsonl").exists():
        pytest.skip("the BLiMP files (../shared/blimp) are not here")
    settings.BLIMP_DIR = Path(shared_dir) / "blimp"
    serving.reset()
    yield
    serving.reset()


@pytest.mark.parametrize("name", SIZES)
def test_a_published_size_imports_exports_serves_and_evaluates(tmp_path, staff_client, name):
    model_class, _, n_layers, parameters = PUBLISHED_SIZES[name]
    torch.manual_seed(0)
    model = build_programme_model(published_config(name), model_class, n_layers)
    path = save_programme_checkpoint(model, tmp_path / f"{name}.pt")
    del model
    assert path.stat().st_size < parameters * 4 * 1.01  # the tied matrix is stored once

    out = io.StringIO()
    call_command("import_model", str(path), "--slug", name, stdout=out)
    line = json.loads(out.getvalue().strip().splitlines()[-1])
    assert line["parameters"] == parameters and line["model_class"] == model_class and line["tokenizer"] == "gpt2"
    row = RegisteredModel.objects.get(slug=name)
    onnx_dir = Path(row.onnx_dir)
    sizes = {p.name: p.stat().st_size for p in onnx_dir.iterdir()}  # each weight stored once per precision
    assert sum(size for name, size in sizes.items() if ".int8." not in name) < parameters * 4 * 1.05
    assert sum(size for name, size in sizes.items() if ".int8." in name) < parameters * 1.05  # int8, over 10M
    assert row.metrics["depth_curve"]

    body = {"model": name, "prompt": "The cat", "max_tokens": 4, "temperature": 0}
    if model_class == "EqLM":
        body["depth"] = 12
    response = staff_client.post("/v1/completions", body, content_type="application/json")
    assert response.status_code == 200, response.content
    assert response.json()["usage"]["completion_tokens"] == 4

    out = io.StringIO()
    call_command("evaluate_blimp", "--model", name, "--protocol", "programme", "--limit", "4", stdout=out)
    result = json.loads(out.getvalue().strip().splitlines()[-1])
    assert result["num_total"] == 20 and 0 <= result["num_correct"] <= 20
