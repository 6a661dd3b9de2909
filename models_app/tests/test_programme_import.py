"""The programme's checkpoint files import through the command, the staff API and the admin into a folder named by
their sha256; they are exported, served and carded there; bad files are refused with no row and no file left."""

import hashlib
import io
import json
import pickle
from dataclasses import asdict, replace
from pathlib import Path

import numpy as np
import pytest
import torch
from django.core.management import CommandError, call_command

from eqlm.programme.checkpoint import save_programme_checkpoint
from eqlm.programme.config import published_config
from eqlm.programme.model import build_programme_model
from models_app import serving
from models_app.models import ModelImport, RegisteredModel

pytestmark = pytest.mark.django_db

SMALL = published_config("anytime", d_model=16, n_heads=2, d_ff=32, max_seq_len=32, deq_max_iter=4)


@pytest.fixture
def programme_models(shared_dir) -> Path:
    folder = Path(shared_dir) / "programme-models"
    if not (folder / "eqlm-postln.pt").exists():
        pytest.skip("the programme's reference checkpoints (../shared/programme-models) are not here")
    return folder


@pytest.fixture(autouse=True)
def fresh_serving():
    serving.reset()
    yield
    serving.reset()


def small_checkpoint(tmp_path: Path, name: str = "small.pt", **overrides) -> Path:
    torch.manual_seed(0)
    model = build_programme_model(replace(SMALL, **overrides), "EqLM")
    return save_programme_checkpoint(model, tmp_path / name)


def media_files(settings) -> list[Path]:
    root = Path(settings.MEDIA_ROOT) / "models"
    return [p for p in root.rglob("*") if p.is_file()] if root.exists() else []


def run_command(*args) -> dict:
    out = io.StringIO()
    call_command("import_model", *map(str, args), stdout=out)
    return json.loads(out.getvalue().strip().splitlines()[-1])


@pytest.mark.slow  # the checkpoint probe's child process and an ONNX export per file
@pytest.mark.parametrize(
    "name, model_class", [("eqlm-postln", "EqLM"), ("eqlm-residual-nosn", "EqLM"), ("explicit-2layer", "ExplicitLM")]
)
def test_each_reference_checkpoint_imports_into_a_folder_named_by_its_hash(
    programme_models, settings, name, model_class
):
    path = programme_models / f"{name}.pt"
    card = programme_models / "kinetic-eqlm-anytime-121m-babylm.md"
    line = run_command(path, "--slug", name, "--card", card)
    row = RegisteredModel.objects.get(slug=name)
    assert line == {"slug": name, "model_class": model_class, "parameters": row.num_params, "tokenizer": "gpt2",
                    "sha256": row.sha256}  # fmt: skip
    folder = Path(settings.MEDIA_ROOT) / "models" / row.sha256
    assert (folder / "checkpoint.pt").read_bytes() == path.read_bytes()
    assert (folder / "card.md").read_text() == card.read_text()
    facts = json.loads((folder / "facts.json").read_text())
    assert facts["tokenizer"] == "gpt2" and facts["parameters"] == row.num_params and facts["format"] == "programme"
    manifest = json.loads((folder / "onnx" / "manifest.json").read_text())
    assert manifest["tokenizer"] == "gpt2" and manifest["model_class"] == model_class
    assert Path(row.onnx_dir) == folder / "onnx" and ModelImport.objects.get(model=row).status == "done"
    tied = row.config["vocab_size"] * row.config["d_model"] * 4
    assert (folder / "onnx" / "tied.bin").stat().st_size == tied  # the tied matrix, once for embed and head
    assert sum(p.stat().st_size for p in (folder / "onnx").glob("*.onnx")) < tied
    assert not (Path(settings.MEDIA_ROOT) / "models" / "incoming").exists() or not any(
        (Path(settings.MEDIA_ROOT) / "models" / "incoming").iterdir()
    )


@pytest.mark.slow
@pytest.mark.parametrize("name", ["eqlm-postln", "eqlm-residual-nosn"])
def test_the_served_export_scores_like_the_programme_at_each_picard_depth(programme_models, name):
    from eqlm.scoring import score_prompt

    run_command(programme_models / f"{name}.pt", "--slug", name)
    expected = json.loads((programme_models / f"{name}.expected.json").read_text())
    runtime = serving.resolve(name).runtime()
    worst = 0.0
    for text in expected["texts"]:
        for depth, want in text["picard_next_token_logprobs"].items():
            got = score_prompt(runtime.model, text["ids"], int(depth), None, "picard").token_logprobs()
            worst = max(worst, float(np.abs(np.array(got) - np.array(want)).max()))
    assert worst < 1e-5, worst


@pytest.mark.slow
def test_the_tied_matrix_is_served_by_its_hash_beside_the_graphs(programme_models, client):
    run_command(programme_models / "eqlm-postln.pt", "--slug", "eqlm-postln")
    manifest = client.get("/demo/models/eqlm-postln/manifest.json").json()
    assert manifest["external_data"] == {"tied.bin": ["embed", "head"]} and manifest["tokenizer"] == "gpt2"
    response = client.get(manifest["graph_urls"]["tied.bin"])
    data = b"".join(response.streaming_content)
    assert response.status_code == 200 and hashlib.sha256(data).hexdigest() == manifest["graph_sha256"]["tied.bin"]


@pytest.mark.slow
def test_the_served_explicit_export_scores_like_the_programme(programme_models):
    from eqlm.scoring import score_prompt

    run_command(programme_models / "explicit-2layer.pt", "--slug", "explicit-2layer")
    expected = json.loads((programme_models / "explicit-2layer.expected.json").read_text())
    runtime = serving.resolve("explicit-2layer").runtime()
    for text in expected["texts"]:
        got = score_prompt(runtime.model, text["ids"], 2, None, "picard").token_logprobs()
        assert np.abs(np.array(got) - np.array(text["next_token_logprobs"])).max() < 1e-5


@pytest.mark.slow
def test_staff_upload_through_the_api_imports_the_programme_format_with_progress(
    staff_client, tmp_path, django_capture_on_commit_callbacks
):
    path = small_checkpoint(tmp_path)
    card = io.BytesIO(
        b"---\nlicense: apache-2.0\ndatasets:\n- BabyLM-strict-small\n---\n"
        b"# Small\n\nA small model. <script>alert(1)</script>"
    )
    card.name = "card.md"
    with path.open("rb") as upload, django_capture_on_commit_callbacks(execute=True):
        fields = {"checkpoint": upload, "name": "Small programme model", "card": card, "declares": "exp13:B1:42"}
        response = staff_client.post("/api/models/", fields, format="multipart")
    assert response.status_code == 201, response.content
    body = response.json()
    assert body["model_class"] == "EqLM" and body["provenance"]["format"] == "programme"
    assert body["import"]["status"] == "queued"  # the worker's half runs once the request's transaction commits
    polled = staff_client.get(f"/api/models/imports/{body['import_id']}/").json()
    assert polled["status"] == "done" and polled["progress"] == 1.0 and polled["model"] == body["slug"]
    page = staff_client.get(f"/models/{body['slug']}/").content.decode()
    assert "A small model." in page and "<script>alert" not in page and "exp13" in page
    assert "<dd>apache-2.0</dd>" in page and "BabyLM-strict-small" in page and "license:" not in page


def test_an_upload_over_the_checkpoint_limit_is_refused_on_its_content_length(staff_client, settings):
    settings.CHECKPOINT_MAX_BYTES = 1024
    before = media_files(settings)
    response = staff_client.post(
        "/api/models/", {"checkpoint": io.BytesIO(b"x" * 3 * 1024 * 1024), "name": "big"}, format="multipart"
    )
    assert response.status_code == 413
    assert "CHECKPOINT_MAX_BYTES" in response.json()["error"]["message"]
    assert media_files(settings) == before and not RegisteredModel.objects.exists()


class Exploit:
    def __reduce__(self):
        return (print, ("unpickled",))


def bad_files(tmp_path: Path) -> dict[str, tuple[Path, str]]:
    """Each bad file and a word its refusal must name."""
    good = small_checkpoint(tmp_path, "good.pt")
    blob = torch.load(good, weights_only=True)

    def variant(name: str, change) -> Path:
        data = {**blob, "config_dict": dict(blob["config_dict"]), "state_dict": dict(blob["state_dict"])}
        change(data)
        torch.save(data, tmp_path / name)
        return tmp_path / name

    code = tmp_path / "code.pt"
    code.write_bytes(pickle.dumps({"state_dict": Exploit(), "config_dict": asdict(SMALL), "model_class": "EqLM"}))
    truncated = tmp_path / "truncated.pt"
    truncated.write_bytes(good.read_bytes()[: good.stat().st_size // 2])
    nan_key = "block.fc1.parametrizations.weight.original"
    return {
        "code": (code, "pickl"),
        "class": (variant("class.pt", lambda d: d.update(model_class="GPT")), "model_class"),
        "unknown field": (variant("field.pt", lambda d: d["config_dict"].update(n_experts=4)), "n_experts"),
        "ill-typed": (variant("typed.pt", lambda d: d["config_dict"].update(d_model="16")), "d_model"),
        "shape": (variant("shape.pt", lambda d: d["state_dict"].update({nan_key: torch.zeros(3, 3)})), "shape"),
        "nan": (
            variant("nan.pt", lambda d: d["state_dict"].update({nan_key: torch.full((32, 16), float("nan"))})),
            "NaN",
        ),  # fmt: skip
        "huge": (variant("huge.pt", lambda d: d["config_dict"].update(vocab_size=10**9)), "MODEL_MAX_BYTES"),
        "truncated": (truncated, "truncated"),
    }


@pytest.mark.slow  # one probe child process per file
def test_each_bad_file_is_refused_naming_its_problem_and_leaves_nothing(staff_client, tmp_path, settings):
    before = media_files(settings)
    for label, (path, word) in bad_files(tmp_path).items():
        with path.open("rb") as fh:
            response = staff_client.post("/api/models/", {"checkpoint": fh, "name": label}, format="multipart")
        assert response.status_code == 400, (label, response.content)
        message = response.json()["error"]["message"]
        assert word.lower() in message.lower(), (label, message)
        with pytest.raises(CommandError, match="refused"):
            run_command(path)
    assert not RegisteredModel.objects.exists() and not ModelImport.objects.exists()
    assert media_files(settings) == before


@pytest.mark.slow
def test_the_programme_protocol_runs_from_the_command_with_hash_device_and_dtype_on_its_rows(
    programme_models, settings
):
    from results.models import ResultRow

    settings.BLIMP_DIR = Path(programme_models).parent / "blimp"
    run_command(programme_models / "eqlm-postln.pt", "--slug", "eqlm-postln", "--no-export")
    out = io.StringIO()
    call_command("evaluate_blimp", "--model", "eqlm-postln", "--protocol", "programme", "--limit", "4", stdout=out)
    line = json.loads(out.getvalue().strip().splitlines()[-1])
    assert line["num_total"] == 20 and line["device"] in ("cpu", "cuda") and line["seconds"] > 0
    assert line["accuracy"] == pytest.approx(line["num_correct"] / 20)
    row = ResultRow.objects.get(experiment="local", arm_label="eqlm-postln")
    sha = RegisteredModel.objects.get(slug="eqlm-postln").sha256
    assert row.condition == {"protocol": "programme", "sha256": sha, "device": line["device"], "dtype": "float32"}


def test_a_byte_model_is_refused_the_programme_protocol(staff_client):
    row = RegisteredModel.objects.create(slug="byte-model", name="b", model_class="EqLM", sha256="0" * 64)
    response = staff_client.post(f"/api/models/{row.slug}/evaluations/", {"kind": "blimp", "protocol": "programme"},
                                 content_type="application/json")  # fmt: skip
    assert response.status_code == 400 and "GPT-2" in response.json()["error"]["message"]


@pytest.mark.slow
def test_the_admin_upload_takes_the_programme_format_and_queues_its_import(
    staff_client, tmp_path, django_capture_on_commit_callbacks
):
    path = small_checkpoint(tmp_path)
    with path.open("rb") as upload, django_capture_on_commit_callbacks(execute=True):
        fields = {"name": "From the admin", "notes": "", "upload": upload, "declares": "", "depths": "1,2",
                  "pair_limit": 5}  # fmt: skip
        response = staff_client.post("/admin/inference/registeredmodel/add/", fields, follow=True)
    assert response.status_code == 200
    row = RegisteredModel.objects.get(name="From the admin")
    assert "import #" in response.content.decode() and row.provenance["format"] == "programme"
    assert ModelImport.objects.get(model=row).status == "done" and row.imports.first().facts["tokenizer"] == "gpt2"


def test_the_admin_refuses_an_oversized_checkpoint_on_its_content_length(staff_client, settings):
    settings.CHECKPOINT_MAX_BYTES = 1024
    response = staff_client.post(
        "/admin/inference/registeredmodel/add/", {"name": "big", "upload": io.BytesIO(b"x" * 2 * 1024 * 1024)}
    )
    assert response.status_code == 413 and "CHECKPOINT_MAX_BYTES" in response.content.decode()
    assert not RegisteredModel.objects.exists()


def test_a_declared_run_finds_its_published_figure_by_the_programme_name():
    from models_app.programme_eval import beside_published, published_figure
    from results.records import ingest_records

    record = {
        "run": "exp13_contraction_at_width/seed42", "experiment": "exp13_contraction_at_width", "arm": "B1",
        "seed": 42, "metric": "blimp_accuracy", "value": 0.662, "unit": "fraction", "n": 1000, "step": None,
        "condition": {}, "model_family": "tied-anytime", "model_name": "B1", "num_params": 120696016,
        "config_hash": "", "git_commit": "",
    }  # fmt: skip
    ingest_records([record], source_name="published")
    published = published_figure({"experiment": "exp13", "arm": "B1", "seed": 42})
    assert published["accuracy"] == 0.662 and published["n"] == 1000
    beside = beside_published(650, 1000, published)
    assert beside["difference_pairs"] == -12 and round(beside["binomial_se_pairs"], 1) == 15.0
