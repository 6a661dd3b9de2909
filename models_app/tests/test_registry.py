"""The model registry: staff-only checkpoint upload (validated with weights_only), /models/ cards, seed, API."""

import io
from pathlib import Path

import pytest
import torch

from eqlm.checkpoint import save_checkpoint
from eqlm.testing import tiny_config, tiny_model
from models_app.models import EvaluationRun, RegisteredModel
from models_app.tests.model_pages import every_model_page

FIXTURE = Path(__file__).parent / "fixtures" / "blimp"
MARKER = Path("/tmp/eqlm-malicious-upload-ran")


class Exploit:
    def __reduce__(self):
        import os

        return (os.system, (f"touch {MARKER}",))


def checkpoint_bytes(tmp_path) -> bytes:
    path = save_checkpoint(tiny_model(seed=11), tmp_path / "tiny.pt", {"seed": 1, "config_hash": "h"})
    return path.read_bytes()


def upload(client, data: bytes, name="tiny upload", **extra):
    fh = io.BytesIO(data)
    fh.name = "whatever.pt"
    return client.post("/api/models/", {"checkpoint": fh, "name": name, **extra}, format="multipart")


@pytest.fixture(autouse=True)
def fixture_blimp(settings):
    settings.BLIMP_DIR = FIXTURE


@pytest.mark.django_db
@pytest.mark.parametrize("persona", ["client", "member_client"])
def test_outsiders_cannot_upload_a_checkpoint(request, persona, tmp_path):
    response = upload(request.getfixturevalue(persona), b"anything")
    assert response.status_code == 403
    assert response.json()["error"]["message"]
    assert not RegisteredModel.objects.exists()


@pytest.mark.django_db
@pytest.mark.slow  # checkpoint probe subprocess
def test_staff_upload_is_validated_registered_and_its_evaluation_queued(
    staff_client, tmp_path, django_capture_on_commit_callbacks
):
    data = checkpoint_bytes(tmp_path)
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        response = upload(staff_client, data, depths="1,4", limit="2")
    assert response.status_code == 201, response.content
    body = response.json()
    assert body["model_class"] == "EqLM" and body["num_params"] == tiny_model().num_params()
    model = RegisteredModel.objects.get(slug=body["slug"])
    assert model.uploaded_by.username == "staff"
    assert model.file_path().exists() and "whatever" not in model.checkpoint.name
    run = EvaluationRun.objects.get(pk=body["evaluation_id"])
    assert run.status == "queued" and run.depths == [1, 4] and run.pair_limit == 2
    assert len(callbacks) == 1
    again = upload(staff_client, data)
    assert again.status_code == 409
    assert RegisteredModel.objects.count() == 1


@pytest.mark.django_db
@pytest.mark.slow  # checkpoint probe subprocess
def test_malicious_checkpoint_upload_is_refused_leaves_nothing_and_never_runs(staff_client, tmp_path, settings):
    MARKER.unlink(missing_ok=True)
    path = tmp_path / "evil.pt"
    torch.save({"model_class": "EqLM", "config_dict": tiny_config().to_dict(), "state_dict": {}, "x": Exploit()}, path)
    media = Path(settings.MEDIA_ROOT)
    before = {p for p in media.rglob("*") if p.is_file()}
    response = upload(staff_client, path.read_bytes())
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["param"] == "checkpoint" and "unpickling" in error["message"]
    assert not MARKER.exists()
    assert not RegisteredModel.objects.exists() and not EvaluationRun.objects.exists()
    assert {p for p in media.rglob("*") if p.is_file()} == before


@pytest.mark.django_db
@pytest.mark.parametrize("extra, param", [({"depths": "0,99"}, "depths"), ({"paradigms": "nope"}, "paradigms")])
def test_bad_upload_parameters_get_a_clear_error(staff_client, tmp_path, extra, param):
    response = upload(staff_client, b"not read", **extra)
    assert response.status_code == 400
    assert response.json()["error"]["param"] == param


@pytest.mark.django_db
def test_models_page_shows_the_four_published_cards_and_the_local_demo_model(client):
    response = client.get("/models/")
    assert response.status_code == 200
    html = every_model_page(client)
    for slug in ("eqlm-anytime-120m", "tied-same-width-45m", "tied-twin-1b", "recursive-qwen3-1-7b"):
        assert f'id="card-{slug}"' in html
    assert html.count("not available in this deployment") >= 4
    assert "0.971 / 1.033 / 0.970" in html and "0.354" in html and "0.457 to 0.017" in html
    assert 'id="demo-bpb-table"' in html
    assert "not one of the programme" in html


@pytest.mark.django_db
def test_demo_metric_tables_download_as_csv_and_json(client):
    csv = client.get("/models/eqlm-demo/bpb.csv")
    assert csv.status_code == 200 and csv.content.decode().startswith("depth,held_out_bits_per_byte")
    data = client.get("/models/eqlm-demo/bpb.json").json()
    assert [r["depth"] for r in data["rows"]] == [*range(1, 13), 16, 24, 32, 48, 64, 96, 128]
    samples = client.get("/models/eqlm-demo/samples.csv")
    assert samples.status_code == 200 and samples.content.decode().startswith("depth,prompt,real_word_share,text")
    assert client.get("/models/nothing/blimp.json").status_code == 404


@pytest.mark.django_db
def test_seed_registers_each_bundled_model_once(bundled_model_ids, settings):
    from models_app.seed import seed

    first = seed()
    second = seed()
    assert "registered" in first and "already" in second
    row = RegisteredModel.objects.get(slug="eqlm-demo")
    assert row.kind == "demo" and row.file_path().exists()
    unrolled = RegisteredModel.objects.get(slug="eqlm-demo-unrolled")
    assert unrolled.file_path().relative_to(settings.BASE_DIR).as_posix() == "models/eqlm-demo-unrolled/checkpoint.pt"
    assert unrolled.onnx_dir == "models/eqlm-demo-unrolled/onnx"
    assert "collapses past 12" in unrolled.notes
    assert list(RegisteredModel.objects.order_by("slug").values_list("slug", flat=True)) == sorted(bundled_model_ids)


@pytest.mark.django_db
def test_anyone_can_list_registered_models(client, bundled_model_ids):
    from models_app.seed import seed

    seed()
    response = client.get("/api/models/")
    assert response.status_code == 200
    assert sorted(m["slug"] for m in response.json()) == sorted(bundled_model_ids)


@pytest.mark.worker
@pytest.mark.django_db(transaction=True)
def test_a_real_worker_runs_a_small_blimp_evaluation_and_its_rows_reach_the_benchmarks_api(
    live_celery, client, settings, wait_for_job
):
    from models_app.services import queue_evaluation

    folder = Path(settings.MEDIA_ROOT) / "worker-test"
    folder.mkdir(exist_ok=True)
    path = save_checkpoint(tiny_model(seed=2), folder / "tiny.pt", {"seed": 2, "config_hash": "w", "git_commit": "g"})
    model = RegisteredModel.objects.create(
        slug="tiny-worker",
        name="tiny worker model",
        model_class="EqLM",
        checkpoint_path=str(path),
        sha256="f" * 64,
        num_params=tiny_model().num_params(),
        provenance={"seed": 2, "config_hash": "w"},
    )
    run = queue_evaluation(model, [1, 3], [], 2, None, blimp_dir=str(FIXTURE))
    run = wait_for_job(run, timeout=90)
    assert run.status == "done", run.error
    assert run.device in ("cpu", "cuda") and run.rows_written == 2
    body = client.get("/api/results/?experiment=local&metric=blimp_accuracy&arm=tiny-worker").json()
    mine = body["results"] if isinstance(body, dict) else body
    assert sorted(r["condition"]["depth"] for r in mine) == [1, 3]
    assert all(r["n"] == 4 for r in mine)


@pytest.mark.django_db
@pytest.mark.slow  # checkpoint probe subprocess
def test_staff_can_register_a_checkpoint_through_the_admin(staff_client, tmp_path, django_capture_on_commit_callbacks):
    data = checkpoint_bytes(tmp_path)
    fh = io.BytesIO(data)
    fh.name = "admin.pt"
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        response = staff_client.post(
            "/admin/inference/registeredmodel/add/",
            {"name": "via admin", "notes": "", "upload": fh, "depths": "2,4", "pair_limit": 3},
        )
    assert response.status_code == 302, response.content.decode()[:2000]
    model = RegisteredModel.objects.get(name="via admin")
    assert model.evaluations.get().depths == [2, 4]
    assert len(callbacks) == 1
    assert staff_client.get("/admin/inference/registeredmodel/").status_code == 200
    assert staff_client.get("/admin/inference/evaluationrun/").status_code == 200


@pytest.mark.django_db
@pytest.mark.slow  # checkpoint probe subprocess
def test_admin_refuses_a_file_that_is_not_a_checkpoint(staff_client):
    fh = io.BytesIO(b"plain text, not a checkpoint")
    fh.name = "notes.pt"
    response = staff_client.post(
        "/admin/inference/registeredmodel/add/", {"name": "junk", "upload": fh, "depths": "1", "pair_limit": 1}
    )
    assert response.status_code == 200
    assert "rejected checkpoint" in response.content.decode()
    assert not RegisteredModel.objects.exists()
