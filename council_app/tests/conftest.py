"""Council test fixtures: the committed record loaded into the test database, and two tiny members to serve."""

import json
import shutil

import pytest

from council_app import seed as council_seed


@pytest.fixture(scope="session")
def council_data():
    return json.loads(council_seed.FIXTURE.read_text())


@pytest.fixture
def council(db, council_data):
    """The full council record (reference data) as `manage.py seed` loads it."""
    council_seed.load(council_data)
    return council_data


@pytest.fixture(scope="session")
def council_models_dir(tmp_path_factory, tiny_onnx_export):
    """A MODELS_DIR with eqlm-demo-anytime and eqlm-code as two tiny random EqLMs (seeds 1 and 2), like the council's
    default members, beside the default model eqlm-demo (seed 0), which is not one (read-only: the folders are copies
    of the run's shared exports)."""
    root = tmp_path_factory.mktemp("council-models")
    shutil.copytree(tiny_onnx_export(0), root / "eqlm-demo" / "onnx")
    shutil.copytree(tiny_onnx_export(1), root / "eqlm-demo-anytime" / "onnx")
    shutil.copytree(tiny_onnx_export(2), root / "eqlm-code" / "onnx")
    return root


@pytest.fixture
def council_models_served(serve_models, council_models_dir):
    """The two tiny members are what this process serves, with fresh runtimes and an empty cache around the test."""
    return serve_models(council_models_dir)
