"""Fault injection against real processes: kill -9 a Celery worker mid-task, restart Redis with jobs queued.

Redis restarts twice: once keeping its queue on disk (append-only file), once keeping nothing, where the
worker's sweeper (portal/jobs.py) has to re-send the lost jobs.

Each fault returns a FaultResult with a pass/fail line. tests/test_faults.py runs them inside the suite;
scripts/reliability.py runs them against a scratch database for docs/RELIABILITY.md.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import time
import uuid
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
VISIBILITY_TIMEOUT = 4  # seconds before Redis hands a dead worker's message to another


@dataclass
class FaultResult:
    name: str
    passed: bool
    detail: str
    injected: int = 1

    def line(self) -> str:
        return f"{'PASS' if self.passed else 'FAIL'} {self.name}: {self.detail}"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def redis_answers(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5) as sock:
            sock.sendall(b"PING\r\n")
            return sock.recv(16).startswith(b"+PONG")
    except OSError:
        return False


class PrivateRedis:
    """A redis-server of our own on a free port (never the shared one): with an append-only file, or, when not
    `persistent`, keeping nothing on disk (as the machine's Redis does), so a restart loses every queued message."""

    def __init__(self, folder: Path, persistent: bool = True):
        self.folder = folder
        self.persistent = persistent
        self.port = free_port()  # kept across restarts, so clients reconnect to the same address
        self.proc: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        if not shutil.which("redis-server"):
            raise RuntimeError("redis-server is not installed")
        self.folder.mkdir(parents=True, exist_ok=True)
        command = ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--dir", str(self.folder)]
        if self.persistent:
            command += ["--appendonly", "yes", "--appendfsync", "always", "--save", ""]
        else:
            command += ["--appendonly", "no", "--save", ""]
        self.proc = subprocess.Popen(command, stdout=subprocess.DEVNULL)
        deadline = time.monotonic() + 10
        while not redis_answers(self.port):
            if time.monotonic() > deadline:
                raise RuntimeError("redis-server did not start")
            time.sleep(0.1)

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()  # SIGTERM: Redis flushes its append-only file (if any) and exits
            self.proc.wait(10)
        self.proc = None


def start_worker(broker_url: str, env: dict, log_path: Path, **options) -> subprocess.Popen:
    """A real `celery worker` (conftest.start_worker) in its own process group, so kill -9 takes the pool too."""
    import conftest

    return conftest.start_worker(broker_url, log_path, new_session=True, env=env, **options)


def kill_worker(proc: subprocess.Popen) -> None:
    """kill -9 the worker and its pool children: no shutdown, no ack, no cleanup."""
    with suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(10)


def stop_worker(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            kill_worker(proc)


@contextmanager
def celery_on(broker_url: str):
    """Point this process's Celery app at a real broker (not eager) for the duration."""
    from portal.celery import app, override_conf

    saved = override_conf(task_always_eager=False, broker_url=broker_url, result_backend=broker_url)
    _reset(app)
    try:
        yield app
    finally:
        override_conf(**saved)
        _reset(app)


def _reset(app) -> None:
    app._pool = None
    app.__dict__.pop("amqp", None)
    app._local.__dict__.pop("backend", None)


def wait_for(predicate, timeout: float, interval: float = 0.2) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(interval)
    return False


def long_result_file(rows: int, experiment: str) -> bytes:
    lines = ["run,experiment,arm,seed,metric,value,step"]
    lines += [f"faults/{experiment},{experiment},A1,1,train_loss,{1 + i / rows:.6f},{i}" for i in range(rows)]
    return ("\n".join(lines) + "\n").encode()


def kill_worker_during_ingest(worker_env: dict, broker_url: str, log_path: Path, rows: int = 120_000) -> FaultResult:
    """Queue a large ingest, kill -9 the worker while it runs, start another: the file ends done, rows exactly once."""
    from benchmarks_app.tasks import ingest_upload
    from benchmarks_app.uploads import create_upload
    from results.models import ResultRow

    name = "kill -9 a worker in the middle of an ingest"
    experiment = f"faults_ingest_{uuid.uuid4().hex[:6]}"
    source, _ = create_upload(long_result_file(rows, experiment), name=f"{experiment}.csv", fmt="generic_csv")
    env = {**worker_env, "CELERY_VISIBILITY_TIMEOUT": str(VISIBILITY_TIMEOUT)}
    clock = time.monotonic()
    first = start_worker(broker_url, env, log_path)
    timings = {"start": time.monotonic() - clock}
    try:
        with celery_on(broker_url):
            ingest_upload.delay(source.pk)
        # Kill as soon as the task reports running: on an idle machine the whole ingest takes about a second.
        running = wait_for(lambda: _status(source) == "running", 60, interval=0.01)
        time.sleep(0.05)
        partial_before_kill = source.status
        kill_worker(first)
    finally:
        stop_worker(first)
    # A new worker restores messages older than the visibility timeout when it starts (then every 100 s).
    time.sleep(VISIBILITY_TIMEOUT + 0.5)
    source.refresh_from_db()
    if not running or source.status == "done":
        return FaultResult(name, False, f"could not catch the ingest mid-way (status {source.status})")
    rows_after_kill = ResultRow.objects.filter(source_file=source).count()
    timings["killed"] = time.monotonic() - clock
    second = start_worker(broker_url, env, log_path)
    timings["restarted"] = time.monotonic() - clock
    try:
        finished = wait_for(lambda: _status(source) in ("done", "failed"), 120)
        timings["finished"] = time.monotonic() - clock
    finally:
        stop_worker(second)
    source.refresh_from_db()
    stored = ResultRow.objects.filter(source_file=source).count()
    distinct = ResultRow.objects.filter(source_file=source).values("step").distinct().count()
    passed = finished and source.status == "done" and rows_after_kill == 0 and stored == distinct == rows
    return FaultResult(
        name,
        passed,
        f"killed while {partial_before_kill}; {rows_after_kill} rows left by the dead worker; redelivered; "
        f"status {source.status}; {stored} rows stored ({distinct} distinct) of {rows}; "
        + ", ".join(f"{k} {v:.0f}s" for k, v in timings.items()),
    )


def scratch_blimp(folder: Path, pairs_per_paradigm: int = 300) -> Path:
    """A BLiMP-format folder built from the test fixture's pairs, repeated so that an evaluation lasts a while."""
    fixture = ROOT / "models_app" / "tests" / "fixtures" / "blimp"
    folder.mkdir(parents=True, exist_ok=True)
    for source in fixture.glob("*.jsonl"):
        rows = [line for line in source.read_text().splitlines() if line.strip()]
        out = []
        for i in range(pairs_per_paradigm):
            row = json.loads(rows[i % len(rows)])
            row["pairID"] = str(i)
            out.append(json.dumps(row))
        (folder / source.name).write_text("\n".join(out) + "\n")
    return folder


def kill_worker_during_evaluation(
    worker_env: dict, broker_url: str, log_path: Path, media_root: Path, scratch: Path
) -> FaultResult:
    """Kill -9 the worker during a BLiMP evaluation: redelivered, the run ends done, one result row per depth."""
    from eqlm.checkpoint import save_checkpoint
    from eqlm.testing import tiny_model
    from models_app.models import RegisteredModel
    from models_app.services import queue_evaluation
    from results.models import ResultRow

    name = "kill -9 a worker in the middle of an evaluation"
    slug = f"faults-{uuid.uuid4().hex[:6]}"
    folder = Path(media_root) / "faults"
    folder.mkdir(parents=True, exist_ok=True)
    provenance = {"seed": 3, "config_hash": "f", "git_commit": "g"}
    path = save_checkpoint(tiny_model(seed=3), folder / f"{slug}.pt", provenance)
    model = RegisteredModel.objects.create(
        slug=slug, name=slug, model_class="EqLM", checkpoint_path=str(path), sha256=uuid.uuid4().hex * 2,
        num_params=tiny_model().num_params(), provenance={"seed": 3, "config_hash": "f"},
    )  # fmt: skip
    depths = [1, 2, 4, 8, 12, 16]
    env = {**worker_env, "CELERY_VISIBILITY_TIMEOUT": str(VISIBILITY_TIMEOUT)}
    first = start_worker(broker_url, env, log_path)
    try:
        with celery_on(broker_url):
            run = queue_evaluation(model, depths, [], 1000, None, blimp_dir=str(scratch_blimp(scratch / slug)))
        running = wait_for(lambda: _status(run) == "running", 90)
        kill_worker(first)
    finally:
        stop_worker(first)
    # A new worker restores messages older than the visibility timeout when it starts (then every 100 s).
    time.sleep(VISIBILITY_TIMEOUT + 0.5)
    run.refresh_from_db()
    if not running or run.status == "done":
        return FaultResult(name, False, f"could not catch the evaluation mid-way (status {run.status})")
    killed_at = f"{run.progress:.0%} ({run.progress_message or 'starting'})"
    second = start_worker(broker_url, env, log_path)
    try:
        finished = wait_for(lambda: _status(run) in ("done", "failed"), 180)
    finally:
        stop_worker(second)
    run.refresh_from_db()
    stored = ResultRow.objects.filter(experiment="local", arm_label=slug, metric="blimp_accuracy").count()
    passed = finished and run.status == "done" and run.rows_written == len(depths) and stored == len(depths)
    return FaultResult(
        name,
        passed,
        f"killed at {killed_at}; redelivered; status {run.status}; {stored} result rows for {len(depths)} depths",
    )


def redis_restart_with_queued_jobs(worker_env: dict, folder: Path, log_path: Path, jobs: int = 5) -> FaultResult:
    """Queue lab jobs with no worker, restart Redis, then start a worker: every job runs after Redis returns."""
    from lab_app import services
    from lab_app.models import LabRun

    name = "restart Redis while jobs are queued"
    redis = PrivateRedis(folder / f"redis-{uuid.uuid4().hex[:6]}")
    redis.start()
    worker = None
    try:
        with celery_on(redis.url):
            runs = [
                services.create_job({"game": "biased_rps", "solver": "mmd", "params": {"steps": 200 + i}})
                for i in range(jobs)
            ]
        redis.stop()
        queued_while_down = LabRun.objects.filter(pk__in=[r.pk for r in runs], status="queued").count()
        redis.start()  # the same port and folder: it reloads its append-only file
        worker = start_worker(redis.url, worker_env, log_path, queues="default")
        pks = [run.pk for run in runs]
        finished = wait_for(
            lambda: LabRun.objects.filter(pk__in=pks, status__in=("done", "failed")).count() == len(pks), 120
        )
        done = LabRun.objects.filter(pk__in=pks, status="done").count()
    finally:
        if worker is not None:
            stop_worker(worker)
        redis.stop()
        shutil.rmtree(redis.folder, ignore_errors=True)
    passed = finished and done == jobs and queued_while_down == jobs
    return FaultResult(name, passed, f"{queued_while_down} jobs queued, Redis restarted, {done}/{jobs} done after")


def redis_restart_without_persistence(
    worker_env: dict, folder: Path, log_path: Path, jobs: int = 4, sweep_s: int = 1, stale_s: int = 2
) -> FaultResult:
    """Queue lab jobs with no worker, restart a Redis that keeps nothing on disk (the messages are gone), then start
    a worker with the embedded beat: its sweeper re-sends the lost jobs and every one ends done."""
    import redis as redis_client

    from lab_app import services
    from lab_app.models import LabRun

    name = "restart a Redis that keeps nothing on disk while jobs are queued"
    redis = PrivateRedis(folder / f"redis-{uuid.uuid4().hex[:6]}", persistent=False)
    redis.start()
    worker = None
    clock = time.monotonic()
    try:
        with celery_on(redis.url):
            runs = [
                services.create_job({"game": "biased_rps", "solver": "mmd", "params": {"steps": 200 + i}})
                for i in range(jobs)
            ]
        pks = [run.pk for run in runs]
        sent = redis_client.Redis.from_url(redis.url).llen("default")
        redis.stop()
        redis.start()  # the same port, an empty server: the queued messages are lost
        left = redis_client.Redis.from_url(redis.url).llen("default")
        queued = LabRun.objects.filter(pk__in=pks, status="queued").count()
        env = {**worker_env, "JOB_SWEEP_SECONDS": str(sweep_s), "JOB_STALE_SECONDS": str(stale_s)}
        worker = start_worker(redis.url, env, log_path, queues="default", beat=True)
        finished = wait_for(
            lambda: LabRun.objects.filter(pk__in=pks, status__in=("done", "failed")).count() == len(pks), 60
        )
        seconds = time.monotonic() - clock
        done = LabRun.objects.filter(pk__in=pks, status="done").count()
        resent = LabRun.objects.filter(pk__in=pks, requeue_count__gte=1).count()
    finally:
        if worker is not None:
            stop_worker(worker)
        redis.stop()
        shutil.rmtree(redis.folder, ignore_errors=True)
    passed = finished and sent == jobs and left == 0 and queued == jobs and done == jobs == resent
    return FaultResult(
        name,
        passed,
        f"{sent} messages queued, {left} left after the restart, {queued} rows still queued; the sweeper "
        f"re-sent {resent}; {done}/{jobs} done after {seconds:.0f}s",
    )


def _status(row) -> str:
    row.refresh_from_db(fields=["status"])
    return row.status
