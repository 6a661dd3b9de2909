"""Shared test fixtures: personas, a real Redis broker with a real Celery worker, headless Chromium, the tiny
ONNX model, and `wait_for_job`.

Live-worker tests use `transactional_db` (the worker is another process and only sees committed
rows) and the `live_celery` fixture; browser tests use the `page` fixture and are marked `browser`.
"""

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path
from urllib.parse import urlparse

import pytest

# Playwright's sync API runs an event loop in this thread; the ORM calls our tests make beside it are safe.
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")

ROOT = Path(__file__).resolve().parent
TEST_REDIS_DB = int(os.environ.get("TEST_REDIS_DB", "13"))  # parallel runs on one machine pick others
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
]
LOCAL_HOSTS = {"127.0.0.1", "localhost", "[::1]", "::1"}


FAST_SUBSET = "not browser and not worker and not slow"


def pytest_configure(config):
    """A bare `pytest` (no paths, no -m) is the fast loop of `make check`: no browser, no worker, no slow tests.

    Naming paths or passing -m selects as usual; `make test` passes an -m that selects every test.
    """
    if config.args_source == pytest.Config.ArgsSource.TESTPATHS and not config.option.markexpr:
        config.option.markexpr = FAST_SUBSET


# --- personas -----------------------------------------------------------------------------------


@pytest.fixture
def member_user(django_user_model):
    """An authenticated reader with no staff rights."""
    return django_user_model.objects.create_user("member", "member@example.org", "member-pass-123")


@pytest.fixture
def staff_user(django_user_model):
    """A staff editor: may use the admin and change the portal's own models, but is not a superuser."""
    from django.contrib.auth.models import Permission

    user = django_user_model.objects.create_user("staff", "staff@example.org", "staff-pass-123", is_staff=True)
    own_apps = [
        "findings_app",
        "results",
        "benchmarks_app",
        "lab_app",
        "models_app",
        "inference",
        "council_app",
        "experiments_app",
    ]
    user.user_permissions.set(Permission.objects.filter(content_type__app_label__in=own_apps))
    return user


@pytest.fixture
def member_client(client, member_user):
    client.force_login(member_user)
    return client


@pytest.fixture
def staff_client(client, staff_user):
    client.force_login(staff_user)
    return client


@pytest.fixture
def shared_dir():
    """The programme's shared material (../shared), or skip when this checkout has none beside it."""
    from django.conf import settings

    if not Path(settings.SHARED_DIR).is_dir():
        pytest.skip("../shared is not present beside this checkout")
    return Path(settings.SHARED_DIR)


@pytest.fixture(autouse=True)
def _fast_password_hasher(settings):
    """Personas and logins cost milliseconds: the whole suite hashes passwords with MD5 (never in production)."""
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture(autouse=True)
def _no_job_submissions_counted():
    """Each test starts with no job submissions counted by the throttles (their counts live in the cache)."""
    from django.core.cache import cache

    yield
    cache.clear()


# --- the tiny ONNX model ------------------------------------------------------------------------


@pytest.fixture(scope="session")
def tiny_onnx_export(tmp_path_factory):
    """`export(seed=0, **overrides)`: the folder of eqlm.testing's tiny model (config overrides such as
    `default_depth=5` as in `tiny_config`) exported to ONNX, exported once per seed and overrides per run.

    The folders are shared by every test: copy one (shutil.copytree) to change it or to give it another name.
    """
    from eqlm.testing import export_tiny_model

    folders: dict[tuple, Path] = {}

    def export(seed: int = 0, **overrides) -> Path:
        key = (seed, *sorted(overrides.items()))
        if key not in folders:
            folder = tmp_path_factory.mktemp(f"tiny-onnx-seed{seed}")
            folders[key] = export_tiny_model(folder, seed=seed, **overrides)
        return folders[key]

    return export


@pytest.fixture(scope="session")
def tiny_onnx_dir(tiny_onnx_export) -> Path:
    """The tiny model (seed 0) exported to ONNX once per test run (read-only; a Generator opens it)."""
    return tiny_onnx_export(0)


@pytest.fixture(scope="session")
def tiny_explicit_onnx_export(tmp_path_factory):
    """`export(n_layers=3, seed=0)`: eqlm.testing's tiny explicit transformer of n_layers layers exported to ONNX
    (one graph per layer), once per run; read-only, as tiny_onnx_export's folders."""
    from eqlm.testing import export_tiny_explicit_model

    folders: dict[tuple, Path] = {}

    def export(n_layers: int = 3, seed: int = 0) -> Path:
        if (n_layers, seed) not in folders:
            folder = tmp_path_factory.mktemp(f"tiny-explicit-{n_layers}-seed{seed}")
            folders[n_layers, seed] = export_tiny_explicit_model(folder, seed=seed, n_layers=n_layers)
        return folders[n_layers, seed]

    return export


@pytest.fixture
def serve_models(settings, tmp_path_factory):
    """`serve_models(models_dir=None, default=None)`: this process serves `models_dir` (as MODELS_DIR, one folder
    `<id>/onnx/` per model) with `default` (an ONNX folder; or models_dir/eqlm-demo/onnx) as the default model's
    export, from fresh runtimes and an empty cache; the runtimes and the cache are reset again after the test,
    whatever it did. With `default`, the other models are those of `models_dir` (or of the current MODELS_DIR)."""
    from django.core.cache import cache

    from models_app import serving

    def serve(models_dir: Path | None = None, default: Path | None = None) -> Path:
        served = models_dir
        if default is not None:
            served = _models_with_default(Path(models_dir or settings.MODELS_DIR), Path(default))
        if served is not None:
            settings.MODELS_DIR = served
        settings.DEFAULT_MODEL = "eqlm-demo"
        serving.reset()
        cache.clear()
        return models_dir if models_dir is not None else default

    def _models_with_default(base: Path, default: Path) -> Path:
        """A MODELS_DIR whose eqlm-demo export is `default` and whose other folders are base's (links)."""
        root = tmp_path_factory.mktemp("models")
        for child in sorted(base.iterdir()) if base.is_dir() else []:
            if child.is_dir() and child.name != "eqlm-demo":
                (root / child.name).symlink_to(child.resolve(), target_is_directory=True)
        (root / "eqlm-demo").mkdir()
        (root / "eqlm-demo" / "onnx").symlink_to(default.resolve(), target_is_directory=True)
        return root

    yield serve
    serving.reset()
    cache.clear()


# --- the bundled models ------------------------------------------------------------------------


@pytest.fixture(scope="session")
def bundled_model_ids() -> list[str]:
    """The ids of the models committed under models/ (a folder with an export, onnx/manifest.json), in the order the
    portal lists them: eqlm-demo first, then the others by id. Read from the folders, so a newly bundled model is
    expected everywhere the tests enumerate the bundled models."""
    others = sorted(p.parent.parent.name for p in (ROOT / "models").glob("*/onnx/manifest.json"))
    return ["eqlm-demo"] + [model_id for model_id in others if model_id != "eqlm-demo"]


# --- waiting for a job row ------------------------------------------------------------------------


@pytest.fixture
def wait_for_job():
    """`wait_for_job(row, timeout=60)`: poll a job row until it is done or failed; returns it refreshed."""

    def wait(row, timeout: float = 60, interval: float = 0.2):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            row.refresh_from_db()
            if row.is_finished:
                return row
            time.sleep(interval)
        pytest.fail(f"{type(row).__name__} {row.pk} did not finish within {timeout} s (status {row.status})")

    return wait


# --- media shared with the worker -----------------------------------------------------------------


@pytest.fixture(scope="session", autouse=True)
def _test_media_root(tmp_path_factory):
    from django.conf import settings

    media = tmp_path_factory.mktemp("media")
    settings.MEDIA_ROOT = media
    return media


# --- Redis and a real Celery worker ------------------------------------------------------------


def _redis_answers(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5) as sock:
            sock.sendall(b"PING\r\n")
            return sock.recv(16).startswith(b"+PONG")
    except OSError:
        return False


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture(scope="session")
def redis_url():
    """A Redis database of the suite's own (TEST_REDIS_DB, default 13), flushed before and after.

    Starts a private redis-server when none answers on 127.0.0.1:6379.
    """
    import redis

    port, proc = 6379, None
    if not _redis_answers(port):
        if not shutil.which("redis-server"):
            pytest.fail("No Redis at 127.0.0.1:6379 and no redis-server to start (make test installs it).")
        port = _free_port()
        proc = subprocess.Popen(
            ["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
            stdout=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 10
        while not _redis_answers(port):
            if time.monotonic() > deadline:
                proc.kill()
                pytest.fail("redis-server did not start")
            time.sleep(0.1)
    url = f"redis://127.0.0.1:{port}/{TEST_REDIS_DB}"
    client = redis.Redis.from_url(url)
    client.flushdb()
    yield url
    client.flushdb()
    if proc:
        proc.terminate()
        proc.wait(5)


def database_url_for(settings_dict: dict) -> str:
    """A DATABASE_URL pointing a child process at the database this connection uses."""
    if settings_dict["ENGINE"].endswith("sqlite3"):
        return f"sqlite:///{Path(settings_dict['NAME']).resolve()}"
    user = settings_dict.get("USER") or ""
    password = settings_dict.get("PASSWORD") or ""
    auth = f"{user}:{password}@" if password else (f"{user}@" if user else "")
    host = settings_dict.get("HOST") or "127.0.0.1"
    port = settings_dict.get("PORT") or 5432
    return f"postgres://{auth}{host}:{port}/{settings_dict['NAME']}"


def worker_environment(redis: str) -> dict:
    from django.conf import settings
    from django.db import connection

    env = dict(os.environ)
    env.update(
        DJANGO_SETTINGS_MODULE="portal.settings",
        DATABASE_URL=database_url_for(connection.settings_dict),
        CELERY_BROKER_URL=redis,
        CELERY_RESULT_BACKEND=redis,
        CELERY_TASK_ALWAYS_EAGER="0",
        MEDIA_ROOT=str(settings.MEDIA_ROOT),
        BLIMP_DIR=str(settings.BLIMP_DIR),
        DEBUG="1",
        PYTHONUNBUFFERED="1",
    )
    return env


def start_worker(
    redis: str,
    log_path: Path,
    name: str | None = None,
    *,
    queues: str = "default,gpu",
    new_session: bool = False,
    beat: bool = False,
    env: dict | None = None,
) -> subprocess.Popen:
    """Start `celery worker` as a real child process; returns once it answers a ping on `redis`.

    new_session: in a process group of its own, so the fault tests can kill -9 it with its pool children.
    beat: with the embedded beat (`-B`, as `make worker`), its schedule file beside the log.
    env: variables over worker_environment(redis) (e.g. a short CELERY_VISIBILITY_TIMEOUT); the broker stays `redis`.
    """
    from portal.celery import app, override_conf

    name = name or f"test-{uuid.uuid4().hex[:8]}@%h"
    command = [sys.executable, "-m", "celery", "-A", "portal", "worker", "-Q", queues, "-c", "1", "--loglevel", "INFO"]
    command += ["-n", name, "--without-gossip", "--without-mingle", "--without-heartbeat"]
    if beat:
        command += ["-B", "-s", str(log_path.with_suffix(".beat-schedule"))]
    log = open(log_path, "ab")  # noqa: SIM115 - the worker writes to it until it stops
    proc = subprocess.Popen(
        command,
        cwd=ROOT,
        env={**worker_environment(redis), **(env or {}), "CELERY_BROKER_URL": redis, "CELERY_RESULT_BACKEND": redis},
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=new_session,
    )
    destination = [name.replace("%h", socket.gethostname())]
    # The ping goes out through this process's app, so point it at `redis` while waiting, then put it back.
    saved = override_conf(broker_url=redis)
    _reset_celery_connections(app)
    try:
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                pytest.fail(f"Celery worker exited early; see {log_path}")
            try:
                if app.control.ping(timeout=0.5, destination=destination):
                    return proc
            except Exception:
                pass
            time.sleep(0.3)
    finally:
        override_conf(**saved)
        _reset_celery_connections(app)
    if new_session:
        os.killpg(proc.pid, signal.SIGKILL)  # the pool children too
    else:
        proc.kill()
    pytest.fail(f"Celery worker did not answer within 90 s; see {log_path}")


def stop_worker(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)


def _reset_celery_connections(app) -> None:
    app._pool = None
    app.__dict__.pop("amqp", None)
    app._local.__dict__.pop("backend", None)


@pytest.fixture(scope="session")
def celery_worker_process(django_db_setup, django_db_blocker, redis_url):
    """One real worker process for the session, pointed at the test database and the test Redis db."""
    log_path = ROOT / "var" / f"test-worker-{os.getpid()}.log"
    log_path.parent.mkdir(exist_ok=True)
    with django_db_blocker.unblock():
        proc = start_worker(redis_url, log_path)
    yield proc
    stop_worker(proc)


@pytest.fixture
def use_broker(settings):
    """`use_broker(url)`: this process's Celery app stops running tasks eagerly and sends them to `url` (with fresh
    connections, so no pool opened by an earlier test keeps the old broker); put back after the test."""
    from portal.celery import app, override_conf

    saved: list[dict] = []

    def use(url: str):
        saved.append(override_conf(task_always_eager=False, broker_url=url, result_backend=url))
        settings.CELERY_TASK_ALWAYS_EAGER = False
        _reset_celery_connections(app)
        return app

    yield use
    for previous in reversed(saved):
        override_conf(**previous)
    _reset_celery_connections(app)


@pytest.fixture
def live_celery(celery_worker_process, redis_url, use_broker):
    """Switch this process's Celery app from eager mode to the real broker (and the suite's worker) for one test."""
    return use_broker(redis_url)


# --- headless Chromium ------------------------------------------------------------------------


@pytest.fixture(scope="session")
def browser():
    if not Path(CHROMIUM).exists():
        pytest.fail("Chromium is missing at /usr/bin/chromium (make test installs it with apt).")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        instance = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        yield instance
        instance.close()


class PageWatch:
    """What a page did that a test may want to refuse: console errors and requests leaving the machine."""

    def __init__(self, page):
        self.console_errors: list[str] = []
        self.external_requests: list[str] = []
        self.requests: list[str] = []
        page.on("console", lambda msg: msg.type == "error" and self.console_errors.append(msg.text))
        page.on("pageerror", lambda exc: self.console_errors.append(str(exc)))
        page.on("request", self._on_request)

    def _on_request(self, request):
        self.requests.append(request.url)
        parsed = urlparse(request.url)
        if parsed.scheme in ("http", "https", "ws", "wss") and parsed.hostname not in LOCAL_HOSTS:
            self.external_requests.append(request.url)

    def assert_clean(self):
        assert self.console_errors == [], f"console errors: {self.console_errors}"
        assert self.external_requests == [], f"requests outside 127.0.0.1: {self.external_requests}"


@pytest.fixture
def page(browser, live_server):
    context = browser.new_context(base_url=live_server.url)
    tab = context.new_page()
    tab.set_default_timeout(15_000)
    tab.watch = PageWatch(tab)
    yield tab
    context.close()
