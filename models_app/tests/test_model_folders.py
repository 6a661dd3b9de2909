"""Every bundled model is one folder, models/<id>/: each is complete, and nothing else in the tree names its files."""

import hashlib
import json
import re
import subprocess
from pathlib import Path

import pytest
from django.conf import settings
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from eqlm.model_files import current_path
from eqlm.recipe import load_recipe

ROOT = Path(settings.BASE_DIR)
MODELS = ROOT / "models"
FOLDERS = sorted(p for p in MODELS.iterdir() if p.is_dir())
ALWAYS = ("checkpoint.pt", "facts.json", "metrics.json", "onnx/manifest.json")
# The places a bundled model's files had before models/<id>/ (CHANGELOG.md).
OLD_PLACES = re.compile(
    r"(?<![\w/])(inference/demo|static/models)(?!\.html)|\"inference\" / \"demo\"|\"static\" / \"models\""
)
# Files that name the old places on purpose: the history, the one resolver from old paths to new ones, the data
# migrations that moved stored rows (and their tests, which start from rows as they were), the notes of an older
# checkout's files, and this test.
NAMES_OLD_PLACES = {
    "CHANGELOG.md",
    "eqlm/model_files.py",
    "eqlm/tests/old_loop_digests.py",
    "models_app/tests/test_model_ids.py",
    "models_app/tests/test_model_folders.py",
}
SOURCE_SUFFIXES = (".py", ".js", ".cjs", ".mjs", ".html", ".md", ".txt", ".cfg", ".ini", ".yml", ".yaml", ".sh")


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_the_models_folder_holds_every_bundled_model(bundled_model_ids):
    assert [p.name for p in FOLDERS if (p / "onnx" / "manifest.json").is_file()] == sorted(bundled_model_ids)
    assert settings.MODELS_DIR == MODELS and (MODELS / settings.DEFAULT_MODEL).is_dir()


@pytest.mark.parametrize("folder", FOLDERS, ids=lambda p: p.name)
def test_each_model_folder_is_complete_and_its_export_is_its_manifests(folder):
    for name in ALWAYS:
        assert (folder / name).is_file(), f"{folder.name}: no {name}"
    assert (folder / "card.json").is_file() or (folder / "card.md").is_file(), f"{folder.name}: no card"
    manifest = json.loads((folder / "onnx" / "manifest.json").read_text())
    assert manifest["model_id"] == folder.name
    assert set(manifest["graphs"]) == set(manifest["graph_sha256"])
    for role, file in manifest["graphs"].items():
        assert sha256(folder / "onnx" / file) == manifest["graph_sha256"][role], f"{folder.name}: {file}"
    for file in manifest.get("external_data") or {}:
        assert (folder / "onnx" / file).is_file(), f"{folder.name}: {file}"
    metrics = json.loads((folder / "metrics.json").read_text())
    assert metrics["checkpoint_sha256"] == sha256(folder / "checkpoint.pt")
    sliced = (metrics.get("ci_slice") or {}).get("file")
    if sliced:  # the held-out slice its export measured, where the model has one
        assert sha256(folder / sliced) == metrics["ci_slice"]["sha256"], f"{folder.name}: {sliced}"
    facts = json.loads((folder / "facts.json").read_text())
    assert facts["served"]["checkpoint"] == f"models/{folder.name}/checkpoint.pt"
    if (folder / "recipe.toml").is_file():  # a model trained by a recipe of its own
        recipe = load_recipe(folder.name)
        assert recipe.path == folder / "recipe.toml" and facts["recipe"]["file"] == f"models/{folder.name}/recipe.toml"
    expected = {*ALWAYS, "card.json", "card.md", "recipe.toml", "heldout_slice.txt", "onnx", "candidates"}
    assert {p.name for p in folder.iterdir()} <= {name.split("/")[0] for name in expected}


def test_nothing_outside_the_models_folder_names_a_models_files_by_its_old_place():
    tracked = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    offending = []
    for name in tracked.splitlines():
        path = ROOT / name
        is_source = name.endswith(SOURCE_SUFFIXES) or path.name in ("Makefile", ".env.example")
        if not is_source or name in NAMES_OLD_PLACES or name.startswith("inference/migrations/"):
            continue
        if not path.is_file():
            continue
        for number, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
            if OLD_PLACES.search(line):
                offending.append(f"{name}:{number}: {line.strip()[:100]}")
    assert offending == []


def test_an_old_path_recorded_in_a_models_files_resolves_to_its_new_place():
    """A recipe's hashed teacher and a checkpoint's recorded provenance keep the path they were made with; each
    such path resolves to a file under models/."""
    recorded = set()
    for path in MODELS.rglob("*"):
        if path.suffix in (".toml", ".json"):
            recorded |= set(re.findall(r"inference/demo/[\w./-]+\.pt", path.read_text()))
    assert recorded, "nothing recorded by its old path"
    for old in recorded:
        new = current_path(old, ROOT)
        assert new.is_file() and new.is_relative_to(MODELS), old


def test_the_old_static_addresses_redirect_to_the_graphs_by_sha256(client):
    manifest = client.get("/static/models/eqlm-demo/manifest.json")
    assert manifest.status_code == 301 and manifest["Location"] == "/demo/models/eqlm-demo/manifest.json"
    step = client.get("/static/models/eqlm-demo/step.onnx")
    expected = json.loads((MODELS / "eqlm-demo" / "onnx" / "manifest.json").read_text())["graph_sha256"]["step"]
    assert step.status_code == 301 and step["Location"] == f"/demo/models/eqlm-demo/graphs/{expected}.onnx"
    assert client.get(step["Location"]).status_code == 200
    assert client.get("/static/models/eqlm-demo/nope.onnx").status_code == 404
    assert client.get("/static/models/nope/manifest.json").status_code == 404


def test_collectstatic_copies_no_model_file():
    from django.contrib.staticfiles import finders

    folders = [Path(d[1] if isinstance(d, (tuple, list)) else d).resolve() for d in settings.STATICFILES_DIRS]
    assert folders and not any(MODELS.resolve().is_relative_to(folder) for folder in folders)
    assert finders.find("models/eqlm-demo/manifest.json") is None
    assert finders.find("models/eqlm-demo/onnx/manifest.json") is None


def migrate(targets):
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(targets)
    return executor.loader.project_state(targets).apps


@pytest.mark.django_db(transaction=True)
def test_the_data_migration_moves_stored_paths_of_bundled_rows_to_their_folder_and_back():
    before, after = [("inference", "0009_modelimport")], [("inference", "0010_bundled_models_one_folder")]
    try:
        RegisteredModel = migrate(before).get_model("inference", "RegisteredModel")
        fields = {"kind": "demo", "model_class": "EqLM", "sha256": "ab" * 32}
        RegisteredModel.objects.create(slug="eqlm-code", name="code", checkpoint_path="inference/demo/eqlm-code.pt",
                                       onnx_dir="static/models/eqlm-code", **fields)  # fmt: skip
        RegisteredModel.objects.create(slug="up", name="up", checkpoint_path="/media/x.pt",
                                       onnx_dir="/media/models/ab/onnx", **fields)  # fmt: skip
        RegisteredModel = migrate(after).get_model("inference", "RegisteredModel")
        rows = dict(RegisteredModel.objects.values_list("slug", "checkpoint_path"))
        assert rows == {"eqlm-code": "models/eqlm-code/checkpoint.pt", "up": "/media/x.pt"}
        assert RegisteredModel.objects.get(slug="eqlm-code").onnx_dir == "models/eqlm-code/onnx"
        assert RegisteredModel.objects.get(slug="up").onnx_dir == "/media/models/ab/onnx"
        RegisteredModel = migrate(before).get_model("inference", "RegisteredModel")
        back = RegisteredModel.objects.get(slug="eqlm-code")
        assert (back.checkpoint_path, back.onnx_dir) == ("inference/demo/eqlm-code.pt", "static/models/eqlm-code")
    finally:
        executor = MigrationExecutor(connection)
        executor.loader.build_graph()
        executor.migrate(executor.loader.graph.leaf_nodes())


@pytest.mark.django_db
def test_a_row_stored_with_an_old_checkpoint_path_still_finds_its_checkpoint():
    from models_app.models import RegisteredModel

    row = RegisteredModel(slug="old", name="old", checkpoint_path="inference/demo/eqlm-demo-unrolled.pt")
    assert row.file_path() == MODELS / "eqlm-demo-unrolled" / "checkpoint.pt" and row.file_path().is_file()
