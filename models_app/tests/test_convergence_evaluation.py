"""The quality-and-convergence evaluation: staff queue it (API, admin), a real worker writes its rows, charts read."""

from pathlib import Path

import pytest

from eqlm.checkpoint import save_checkpoint
from eqlm.testing import tiny_model
from models_app.models import EvaluationRun, RegisteredModel

SMALL = {"solvers": ["picard", "anderson"], "max_depth": 6, "tolerances": [0.05, 0.02], "cap": 6, "windows": 2}


def tiny_registered(folder: Path, slug: str = "tiny-conv", model_class: str = "EqLM") -> RegisteredModel:
    folder.mkdir(parents=True, exist_ok=True)
    path = save_checkpoint(
        tiny_model(seed=3), folder / f"{slug}.pt", {"seed": 3, "config_hash": "c", "git_commit": "g"}
    )
    return RegisteredModel.objects.create(
        slug=slug,
        name=f"{slug} model",
        model_class=model_class,
        checkpoint_path=str(path),
        sha256=(slug.encode().hex() * 8)[:64],
        num_params=tiny_model().num_params(),
        provenance={"seed": 3, "config_hash": "c"},
    )


def queue(client, slug: str, **body):
    return client.post(f"/api/models/{slug}/evaluations/", body, content_type="application/json")


@pytest.mark.django_db
def test_staff_queue_a_convergence_evaluation_through_the_api(
    staff_client, tmp_path, django_capture_on_commit_callbacks
):
    model = tiny_registered(tmp_path)
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        response = queue(staff_client, model.slug, windows=3, tolerances=[0.01, 0.1], solvers=["picard"])
    assert response.status_code == 201, response.content
    body = response.json()
    assert body["kind"] == "convergence" and body["status"] == "queued"
    assert body["options"]["windows"] == 3 and body["options"]["solvers"] == ["picard"]
    assert body["options"]["tolerances"] == [0.1, 0.01] and body["options"]["max_depth"] == 128  # past serving caps
    assert body["options"]["cap"] == 64 and body["options"]["starts"] == ["noise", "warm"]
    assert len(callbacks) == 1
    assert EvaluationRun.objects.get(pk=body["id"]).kind == EvaluationRun.Kind.CONVERGENCE


@pytest.mark.django_db
def test_blimp_by_depth_is_queued_through_the_same_endpoint(staff_client, tmp_path):
    model = tiny_registered(tmp_path)
    response = queue(staff_client, model.slug, kind="blimp", depths="2,4", limit=3)
    assert response.status_code == 201, response.content
    run = EvaluationRun.objects.get(pk=response.json()["id"])
    assert run.kind == "blimp" and run.depths == [2, 4] and run.pair_limit == 3


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("body", "param"),
    [
        ({"windows": 0}, "windows"),
        ({"max_depth": 129}, "max_depth"),
        ({"starts": ["zero"]}, "starts"),
        ({"solvers": ["newton"]}, "solvers"),
        ({"tolerances": [2]}, "tolerances"),
        ({"text": "elsewhere"}, "text"),
    ],
)
def test_bad_options_answer_400_naming_the_field_and_queue_nothing(staff_client, tmp_path, body, param):
    model = tiny_registered(tmp_path)
    response = queue(staff_client, model.slug, **body)
    assert response.status_code == 400
    assert param in str(response.json()["error"].get("param") or response.json()["error"])
    assert not EvaluationRun.objects.exists()


@pytest.mark.django_db
def test_only_staff_may_queue_and_an_unknown_model_is_404(member_user, staff_user, tmp_path):
    from django.test import Client

    model = tiny_registered(tmp_path)
    member, staff = Client(), Client()
    member.force_login(member_user)
    staff.force_login(staff_user)
    assert queue(Client(), model.slug).status_code in (401, 403)
    assert queue(member, model.slug).status_code == 403
    assert queue(staff, "no-such-model").status_code == 404
    assert not EvaluationRun.objects.exists()


@pytest.mark.django_db
def test_a_model_without_depths_is_refused(staff_client, tmp_path):
    model = tiny_registered(tmp_path, slug="stack", model_class="ExplicitLM")
    response = queue(staff_client, model.slug)
    assert response.status_code == 400 and response.json()["error"]["param"] == "model"


@pytest.mark.django_db
def test_staff_queue_it_from_the_admin_and_rerun_keeps_its_kind(staff_client, tmp_path):
    model = tiny_registered(tmp_path)
    changelist = "/admin/inference/registeredmodel/"
    response = staff_client.post(
        changelist, {"action": "queue_convergence_evaluation", "_selected_action": [model.pk]}, follow=True
    )
    assert response.status_code == 200
    run = EvaluationRun.objects.get()
    assert run.kind == "convergence" and run.options["max_depth"] == 128
    staff_client.post("/admin/inference/evaluationrun/", {"action": "rerun", "_selected_action": [run.pk]})
    assert list(EvaluationRun.objects.values_list("kind", flat=True)) == ["convergence", "convergence"]
    assert staff_client.get(f"/admin/inference/evaluationrun/{run.pk}/change/").status_code == 200


@pytest.mark.django_db
def test_stored_figures_read_back_what_the_evaluation_wrote(tmp_path):
    from models_app.convergence import queue_convergence_evaluation, run_convergence_evaluation
    from models_app.convergence_figures import stored_figures

    model = tiny_registered(tmp_path)
    run = queue_convergence_evaluation(model, {**SMALL, "text": "slice"})
    run = run_convergence_evaluation(run.pk)
    # fixed depths of 2 solvers, adaptive points, and Picard from noise (depths 1, 2, 4, 6) and warm (6) with their
    # AA score and greedy agreement
    assert run.status == "done" and run.rows_written == 2 * 6 * (3 + 11) + 2 * 2 * 3 + (4 + 2) + (1 + 2)
    figures = stored_figures(model.slug)
    assert figures["positions"] == 2 * 63
    picard = figures["solvers"]["picard"]
    assert picard["depth"] == [1, 2, 3, 4, 5, 6]
    assert all(v > 0 for v in picard["heldout_bits_per_byte"])
    assert all(m <= p for m, p in zip(picard["residual_median"], picard["residual_p95"], strict=True))
    assert set(picard["converged"]) >= {"0.01", "0.1"} and len(picard["converged"]["0.01"]) == 6
    adaptive = {(p["solver"], p["tol"]): p for p in figures["adaptive"]}
    assert set(adaptive) == {("picard", 0.05), ("picard", 0.02), ("anderson", 0.05), ("anderson", 0.02)}
    point = adaptive[("picard", 0.02)]
    assert 1 <= point["mean_iterations"] <= 6 and point["fixed_bits_per_byte_at_mean_depth"] > 0
    assert run.results["adaptive"][0]["solver"] == "picard"
    again = run_convergence_evaluation(run.pk)  # a redelivered message changes nothing
    assert again.rows_written == run.rows_written


@pytest.mark.worker
@pytest.mark.django_db(transaction=True)
def test_a_real_worker_runs_the_convergence_evaluation_and_writes_its_rows(live_celery, client, settings, wait_for_job):
    from models_app.convergence import queue_convergence_evaluation

    model = tiny_registered(Path(settings.MEDIA_ROOT) / "convergence-worker", slug="tiny-conv-worker")
    run = queue_convergence_evaluation(model, {**SMALL, "solvers": ["picard"], "text": "slice"})
    run = wait_for_job(run, timeout=120)
    assert run.status == "done", run.error
    assert run.device in ("cpu", "cuda") and run.rows_written == 6 * (3 + 11) + 2 * 3 + (4 + 2) + (1 + 2)
    body = client.get("/api/results/?experiment=local&metric=heldout_bits_per_byte&arm=tiny-conv-worker").json()
    rows = body["results"] if isinstance(body, dict) else body
    fixed = sorted(r["condition"]["depth"] for r in rows if "depth" in r["condition"] and "start" not in r["condition"])
    assert fixed == [1, 2, 3, 4, 5, 6]
    assert sorted(r["condition"]["tol"] for r in rows if "cap" in r["condition"]) == [0.02, 0.05]
    assert all(r["n"] == 2 * 63 for r in rows)


@pytest.mark.django_db
def test_the_evaluation_writes_the_aa_score_and_greedy_agreement_of_the_noise_and_warm_starts(tmp_path):
    from models_app.convergence import queue_convergence_evaluation, run_convergence_evaluation
    from models_app.convergence_figures import stored_figures
    from results.models import ResultRow

    model = tiny_registered(tmp_path, slug="tiny-starts")
    run = run_convergence_evaluation(queue_convergence_evaluation(model, {**SMALL, "text": "slice"}).pk)
    rows = ResultRow.objects.filter(experiment="local", arm_label="tiny-starts")
    for start in ("noise", "warm"):
        condition = {"depth": 6, "solver": "picard", "start": start}  # at the deepest depth, against the zero start
        aa = rows.get(metric="aa_cosine", condition=condition)
        agreement = rows.get(metric="greedy_agreement", condition=condition)
        assert -1 <= aa.value <= 1 and 0 <= agreement.value <= 1 and aa.n == agreement.n == 2 * 63
        assert run.results["starts"][start]["aa_cosine"] == round(aa.value, 4)
    noise = rows.filter(metric="heldout_bits_per_byte", condition__start="noise")
    assert sorted(r.condition["depth"] for r in noise) == [1, 2, 4, 6]
    figures = stored_figures("tiny-starts")
    assert figures["solvers"]["picard"]["depth"] == [1, 2, 3, 4, 5, 6]  # the zero start's rows stay apart
    assert figures["starts"]["noise"]["depth"] == [1, 2, 4, 6] and figures["starts"]["warm"]["depth"] == [6]
    assert figures["starts"]["warm"]["at_depth"] == 6
    assert figures["starts"]["noise"]["aa_cosine"] == rows.get(metric="aa_cosine", condition__start="noise").value


@pytest.mark.django_db
def test_an_evaluation_without_other_starts_writes_no_start_rows(tmp_path):
    from models_app.convergence import queue_convergence_evaluation, run_convergence_evaluation
    from models_app.convergence_figures import stored_figures
    from results.models import ResultRow

    model = tiny_registered(tmp_path, slug="tiny-zero-only")
    run_convergence_evaluation(queue_convergence_evaluation(model, {**SMALL, "text": "slice", "starts": "none"}).pk)
    assert not ResultRow.objects.filter(arm_label="tiny-zero-only", metric__in=["aa_cosine", "greedy_agreement"])
    assert stored_figures("tiny-zero-only")["starts"] == {}


@pytest.mark.django_db
def test_a_convergence_run_does_not_replace_the_blimp_results_on_the_models_page(client, tmp_path):
    from models_app.convergence import queue_convergence_evaluation, run_convergence_evaluation

    model = tiny_registered(tmp_path, slug="tiny-page")
    model.kind = RegisteredModel.Kind.UPLOADED
    model.save()
    run_convergence_evaluation(queue_convergence_evaluation(model, {**SMALL, "text": "slice"}).pk)
    response = client.get("/models/")
    assert response.status_code == 200 and "tiny-page" in response.content.decode()


@pytest.mark.django_db
def test_a_replaced_checkpoint_under_the_same_id_never_shows_its_predecessors_figures(tmp_path):
    from models_app.convergence import queue_convergence_evaluation, run_convergence_evaluation
    from models_app.convergence_figures import stored_figures

    model = tiny_registered(tmp_path, slug="tiny-replaced")
    run_convergence_evaluation(queue_convergence_evaluation(model, {**SMALL, "text": "slice"}).pk)
    assert stored_figures("tiny-replaced")["positions"] == 2 * 63
    RegisteredModel.objects.filter(pk=model.pk).update(sha256="0" * 64)  # new files under the same id
    assert stored_figures("tiny-replaced") == {}
