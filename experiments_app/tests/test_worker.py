"""Real workers on the `train` queue: a tiny experiment runs to completion, and a worker killed mid-training is
replaced by another that resumes each run from its saved state and writes each (arm, seed)'s rows once."""

import os
import time
from pathlib import Path

import pytest

import conftest
from experiments_app.models import TrainingRun
from results.models import ResultRow
from tests import faults

from .factories import DEPTHS, TINY_RECIPE, tiny_experiment

pytestmark = [pytest.mark.worker, pytest.mark.django_db(transaction=True)]
ROWS_PER_RUN = len(DEPTHS) * 2  # bits/byte by depth, from the zero and the noise start
LOG = Path(__file__).resolve().parents[2] / "var" / f"test-train-worker-{os.getpid()}.log"


@pytest.fixture(autouse=True)
def own_media(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"  # run folders are named by row id, which SQLite reuses after a rollback


def all_finished(experiment) -> bool:
    return not TrainingRun.objects.filter(experiment=experiment, status__in=("queued", "running")).exists()


def rows_by_run(experiment) -> dict[tuple[str, int], list[str]]:
    found: dict[tuple[str, int], list[str]] = {}
    for arm, seed, key in ResultRow.objects.filter(experiment=experiment.slug).values_list(
        "arm_label", "seed", "condition_key"
    ):
        found.setdefault((arm, seed), []).append(key)
    return found


def test_a_real_worker_runs_a_tiny_experiment_to_completion(redis_url, use_broker, staff_client):
    experiment = tiny_experiment()
    env = {"EXPERIMENT_SLICE_STEPS": "5"}  # stages of 8 and 4 steps: three training slices per run
    worker = faults.start_worker(redis_url, conftest.worker_environment(redis_url) | env, LOG, queues="train")
    try:
        use_broker(redis_url)
        response = staff_client.post(f"/api/experiments/{experiment.slug}/runs/")
        assert response.status_code == 202 and response.json()["queued"] == 4
        assert faults.wait_for(lambda: all_finished(experiment), 300, interval=1)
    finally:
        faults.stop_worker(worker)
    runs = list(TrainingRun.objects.filter(experiment=experiment))
    assert [(r.status, r.error) for r in runs] == [("done", "")] * 4
    assert all(r.slices_run == 3 and r.stage_index == 1 and r.step == r.planned_steps == 4 for r in runs)
    found = rows_by_run(experiment)
    assert sorted(found) == [("base", 1), ("base", 2), ("fast", 1), ("fast", 2)]
    assert all(len(keys) == len(set(keys)) == ROWS_PER_RUN for keys in found.values())
    body = staff_client.get(f"/api/experiments/{experiment.slug}/").json()
    assert body["verdict"] in ("validated", "missed")
    assert [len(s["rows"]) for s in body["figures"][0]["series"]] == [len(DEPTHS), len(DEPTHS)]


def test_a_worker_killed_mid_training_and_restarted_completes_each_run_once(redis_url, use_broker, staff_client):
    arms = [
        {"label": "base", "recipe": TINY_RECIPE, "overrides": ["steps=60"]},
        {"label": "fast", "recipe": TINY_RECIPE, "overrides": ["steps=60", "schedule.lr=1e-2"]},
    ]
    experiment = tiny_experiment(arms=arms)
    env = conftest.worker_environment(redis_url) | {
        "CELERY_VISIBILITY_TIMEOUT": str(faults.VISIBILITY_TIMEOUT),
        "EXPERIMENT_LEASE_SECONDS": "3",
        "EXPERIMENT_SLICE_STEPS": "20",
    }
    use_broker(redis_url)
    assert staff_client.post(f"/api/experiments/{experiment.slug}/runs/").status_code == 202
    killed = kill_a_worker_mid_slice(redis_url, env, experiment)
    assert killed is not None, "no worker was killed while a run held its lease"
    time.sleep(faults.VISIBILITY_TIMEOUT + 0.5)  # a new worker restores messages older than the visibility timeout
    second = faults.start_worker(redis_url, env, LOG, queues="train")
    try:
        assert faults.wait_for(lambda: all_finished(experiment), 300, interval=1)
    finally:
        faults.stop_worker(second)
    runs = list(TrainingRun.objects.filter(experiment=experiment))
    assert [(r.status, r.error) for r in runs] == [("done", "")] * 4
    assert all(r.step == r.planned_steps == 60 and r.stage_index == 1 for r in runs)
    found = rows_by_run(experiment)
    assert sorted(found) == [("base", 1), ("base", 2), ("fast", 1), ("fast", 2)]
    assert all(len(keys) == len(set(keys)) == ROWS_PER_RUN for keys in found.values())
    again = TrainingRun.objects.get(pk=killed.pk)
    assert again.rows_written == ROWS_PER_RUN


def kill_a_worker_mid_slice(redis_url: str, env: dict, experiment, attempts: int = 3) -> TrainingRun | None:
    """Start a worker, kill -9 it while a run holds its lease, and return that run as the kill left it.

    A run is seen through its heartbeat, which may be up to a second old, so the slice can end (and release the lease)
    between the sighting and the kill. Such a kill lands between slices, which is not the case under test: the worker
    is started again, after the visibility timeout, and killed again.
    """
    # holding a lease: a slice's end writes its last step and clears the lease in one update (runs.release)
    training = TrainingRun.objects.filter(experiment=experiment, status="running", phase="train", step__gte=10).exclude(
        lease_token=""
    )
    seen: list = []
    for _ in range(attempts):
        worker = faults.start_worker(redis_url, env, LOG, queues="train")
        try:
            seen.clear()
            caught = faults.wait_for(lambda: seen.append(training.first()) or seen[-1] is not None, 240, interval=0.05)
            faults.kill_worker(worker)
        finally:
            faults.stop_worker(worker)
        if not caught:
            return None
        killed = TrainingRun.objects.get(pk=seen[-1].pk)
        if killed.status == "running" and killed.phase == "train" and killed.lease_token:
            return killed
        time.sleep(faults.VISIBILITY_TIMEOUT + 0.5)
    return None
