"""An experiment's runs trained on another machine from a plan folder, imported, then evaluated by the worker."""

import json

import pytest
from django.core.management import CommandError, call_command

from eqlm.offload import run_plan
from experiments_app.models import TrainingRun
from experiments_app.runs import run_folder
from experiments_app.training import run_slice
from results.models import ResultRow

from .factories import DEPTHS, tiny_experiment

pytestmark = [pytest.mark.slow, pytest.mark.django_db]


@pytest.fixture(autouse=True)
def own_media(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"  # the run folders of one test never meet another's


def test_runs_trained_from_a_plan_are_imported_then_evaluated_without_training_again(
    tmp_path, django_capture_on_commit_callbacks
):
    experiment = tiny_experiment(seeds=[1])
    call_command("offload_experiment", "tiny", plan=tmp_path)
    experiment.refresh_from_db()
    assert experiment.is_frozen and not TrainingRun.objects.exists()  # frozen first; no row until a run comes back
    plan = json.loads((tmp_path / "plan.json").read_text())
    assert [e["folder"] for e in plan["runs"]] == ["base-seed1", "fast-seed1"]
    assert plan["runs"][1]["overrides"] == ["schedule.lr=1e-2", "seed=1"] and plan["runs"][0]["steps"] == [8, 4]
    assert not (tmp_path / "kjv.txt").exists()  # the tiny recipe reads its own corpus file
    assert [e["corpora"] for e in plan["runs"]] == [["file"], ["file"]]  # so the runs need no Debian package

    stopped = run_plan(tmp_path, "cpu", jobs=2, max_minutes=0)  # out of time at once: nothing finishes
    assert not any(r["finished"] for r in stopped) and not any(r["error"] for r in stopped)
    with django_capture_on_commit_callbacks(execute=False) as queued:
        call_command("offload_experiment", "tiny", import_dir=tmp_path)
    assert not queued and not TrainingRun.objects.exists()

    done = run_plan(tmp_path, "cpu", jobs=2, max_minutes=None)  # resumed there, to the end
    assert all(r["finished"] for r in done), done
    assert json.loads((tmp_path / "summary.json").read_text())["runs"] == done
    with django_capture_on_commit_callbacks(execute=False) as queued:
        call_command("offload_experiment", "tiny", import_dir=tmp_path)
    assert len(queued) == 2
    run = TrainingRun.objects.get(arm_label="base")
    assert run.device == "cpu" and run.threads == 1 and run.step == 0
    assert (run_folder(run) / "second" / "latest.pt").exists() and not list(run_folder(run).glob("*.log"))

    outcomes = [run_slice(run.pk, n, send_next=lambda number: None) for n in range(3)]
    run.refresh_from_db()
    assert outcomes == ["trained", "trained", "evaluated"]  # each stage found finished, then the evaluation
    assert run.step == run.planned_steps == 4 and run.train_seconds == 0 and run.slices_run == 2
    assert run.status == "done", run.error
    assert ResultRow.objects.filter(experiment="tiny", arm_label="base").count() == len(DEPTHS) * 2

    with django_capture_on_commit_callbacks(execute=False) as queued:
        call_command("offload_experiment", "tiny", import_dir=tmp_path)  # a second import changes nothing
    assert not queued and TrainingRun.objects.count() == 2


def test_an_import_from_another_experiments_plan_is_refused(tmp_path):
    tiny_experiment(seeds=[1])
    tiny_experiment(slug="other", seeds=[1])
    call_command("offload_experiment", "tiny", plan=tmp_path)
    with pytest.raises(CommandError, match="holds the plan of 'tiny'"):
        call_command("offload_experiment", "other", import_dir=tmp_path)
    with pytest.raises(CommandError, match="plan.json is missing"):
        call_command("offload_experiment", "tiny", import_dir=tmp_path / "nowhere")
    assert not TrainingRun.objects.exists()


def test_a_run_stopped_part_way_there_is_handed_over_with_a_record_and_finished_here(
    tmp_path, settings, django_capture_on_commit_callbacks
):
    import torch

    settings.EXPERIMENT_TRAIN_THREADS = 2  # not the plan's one thread: the rest trains on another identity
    tiny_experiment(seeds=[1])
    call_command("offload_experiment", "tiny", plan=tmp_path)
    run_plan(tmp_path, "cpu", jobs=2, max_minutes=0)
    with django_capture_on_commit_callbacks(execute=False) as queued:
        call_command("offload_experiment", "tiny", import_dir=tmp_path, continue_here=True)
    assert len(queued) == 2
    run = TrainingRun.objects.get(arm_label="base")
    assert run.threads == 2 and run.device == "cpu"
    assert run.progress_message.startswith("handed over at step 0 from {'threads': 1, 'device': 'cpu'}")

    outcomes = [run_slice(run.pk, n, send_next=lambda number: None) for n in range(3)]
    run.refresh_from_db()
    assert outcomes == ["trained", "trained", "evaluated"] and run.status == "done", run.error
    first = torch.load(run_folder(run) / "first" / "latest.pt", weights_only=True)["provenance"]
    assert first["steps"] == 8 and first["threads"] == 2
    assert first["handovers"] == [
        {"step": 0, "from": {"threads": 1, "device": "cpu"}, "to": {"threads": 2, "device": "cpu"}}
    ]
    assert ResultRow.objects.filter(experiment="tiny", arm_label="base").count() == len(DEPTHS) * 2


def test_a_failed_import_leaves_no_row_and_no_folder_behind(tmp_path, settings):
    settings.EXPERIMENT_TRAIN_THREADS = 1  # the identity it stopped on: there is nothing to hand over
    tiny_experiment(seeds=[1])
    call_command("offload_experiment", "tiny", plan=tmp_path)
    run_plan(tmp_path, "cpu", jobs=2, max_minutes=0)
    with pytest.raises(ValueError, match="nothing to hand over"):
        call_command("offload_experiment", "tiny", import_dir=tmp_path, continue_here=True)
    assert not TrainingRun.objects.exists()
    assert not list((settings.MEDIA_ROOT / "experiments" / "tiny").iterdir())
