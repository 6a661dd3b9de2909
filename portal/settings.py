"""Settings for the EqLM Portal: every knob comes from the environment, with an embedded default.

The embedded default serves one machine with nothing else running: SQLite under var/, media under
var/media/, Celery tasks run eagerly in-process. Production differs only by environment variables
(see .env.example and the table in docs/CONFIGURATION.md).
"""

import os
from pathlib import Path

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

BASE_DIR = Path(__file__).resolve().parent.parent


def env(name: str, default: str = "") -> str:
    return os.environ.get(name, default)


TRUE_WORDS = {"1", "true", "yes", "on"}
FALSE_WORDS = {"0", "false", "no", "off"}


def env_bool(name: str, default: bool) -> bool:
    """A yes/no variable; anything but 1/0, true/false, yes/no, on/off (e.g. "ture") stops startup, naming it."""
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    word = raw.strip().lower()
    if word in TRUE_WORDS:
        return True
    if word in FALSE_WORDS:
        return False
    raise ImproperlyConfigured(f"{name}={raw!r} is not a yes/no value: use 1 or 0 (true/false, yes/no, on/off).")


def env_int(name: str, default: int, minimum: int | None = 0) -> int:
    """A whole-number variable (at least `minimum`); anything else stops startup, naming the variable."""
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    try:
        value = int(raw.strip())
    except ValueError:
        raise ImproperlyConfigured(f"{name}={raw!r} is not a whole number.") from None
    if minimum is not None and value < minimum:
        raise ImproperlyConfigured(f"{name}={raw!r} is below its minimum of {minimum}.")
    return value


def env_list(name: str, default: str) -> list[str]:
    return [item.strip() for item in env(name, default).split(",") if item.strip()]


def read_git_commit(base_dir: Path) -> str:
    """The checked-out commit, read from .git without a subprocess ('unknown' outside a clone)."""
    git_dir = base_dir / ".git"
    try:
        if git_dir.is_file():  # a worktree: "gitdir: <path>"
            git_dir = Path(git_dir.read_text().split(":", 1)[1].strip())
        head = (git_dir / "HEAD").read_text().strip()
        if not head.startswith("ref:"):
            return head[:12]
        ref = head.split(" ", 1)[1]
        common = git_dir
        if (git_dir / "commondir").exists():
            common = (git_dir / (git_dir / "commondir").read_text().strip()).resolve()
        for root in (git_dir, common):
            if (root / ref).exists():
                return (root / ref).read_text().strip()[:12]
        packed = common / "packed-refs"
        if packed.exists():
            for line in packed.read_text().splitlines():
                if line.endswith(" " + ref):
                    return line.split(" ", 1)[0][:12]
    except (OSError, IndexError):
        pass
    return "unknown"


VAR_DIR = Path(env("VAR_DIR", str(BASE_DIR / "var")))
VAR_DIR.mkdir(parents=True, exist_ok=True)

DEBUG = env_bool("DEBUG", True)
# With DEBUG on, visitors still get the portal's own 404 and 500 pages; `make dev` sets this to see Django's
# technical pages (the URL list, tracebacks) instead.
DEBUG_TECHNICAL_PAGES = env_bool("DEBUG_TECHNICAL_PAGES", False)
SECRET_KEY = env("SECRET_KEY")
if not SECRET_KEY:
    if not DEBUG:
        raise ImproperlyConfigured(
            "SECRET_KEY must be set in the environment when DEBUG is off "
            "(for example: export SECRET_KEY=$(python -c 'import secrets; print(secrets.token_urlsafe(50))'))."
        )
    SECRET_KEY = "dev-only-insecure-key-do-not-use-in-production-" + "x" * 20

ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", "127.0.0.1,localhost,[::1],testserver")
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS", "")
PORT = env_int("PORT", 8000)
VERSION = "0.1.0"
GIT_COMMIT = env("GIT_COMMIT") or read_git_commit(BASE_DIR)

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "whitenoise.runserver_nostatic",
    "django.contrib.staticfiles",
    "rest_framework",
    "drf_spectacular",
    "drf_spectacular_sidecar",  # Swagger UI's files for /api/docs/, served locally (never a CDN)
    "portal",
    "results",
    "findings_app",
    "benchmarks_app",
    "lab_app",
    "models_app",
    "inference",
    "council_app",
    "experiments_app",
]

# Apps whose seed.py is run by `manage.py seed`, in this order.
SEED_APPS = ["findings_app", "benchmarks_app", "council_app", "models_app", "lab_app", "experiments_app"]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "portal.middleware.SecurityHeadersMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    # outside CommonMiddleware (its slash redirects) and the API's error shape; its exception hook runs after
    # DatabaseUnavailableMiddleware's, so lost services keep their 503s
    "site_root.error_pages.ErrorPagesMiddleware",
    "portal.middleware.DatabaseUnavailableMiddleware",
    "portal.middleware.ApiErrorShapeMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "portal.middleware.RequestInputMiddleware",  # size and Unicode checks before CSRF or a view reads the body
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "portal.throttle.LoginThrottleMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "portal.middleware.GlossaryLinksMiddleware",  # inside CommonMiddleware, so the length it sets is the linked page's
]

ROOT_URLCONF = "site_root.urls"
WSGI_APPLICATION = "site_root.wsgi.application"
ASGI_APPLICATION = "site_root.asgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "portal.context_processors.portal",
            ],
        },
    },
]

DATABASE_URL = env("DATABASE_URL", f"sqlite:///{VAR_DIR / 'portal.sqlite3'}")
DATABASES = {"default": dj_database_url.parse(DATABASE_URL, conn_max_age=env_int("DB_CONN_MAX_AGE", 0))}
if DATABASES["default"]["ENGINE"].endswith("sqlite3"):
    DATABASES["default"].setdefault("OPTIONS", {})["timeout"] = 30
    # A file (not :memory:) so that a live Celery worker process can share the test database.
    # Named per process so that parallel test runs on one machine never share a file.
    DATABASES["default"]["TEST"] = {"NAME": str(VAR_DIR / f"test_portal_{os.getpid()}.sqlite3")}
else:
    DATABASES["default"].setdefault("OPTIONS", {})["connect_timeout"] = env_int("DB_CONNECT_TIMEOUT", 5)
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]

LANGUAGE_CODE = "en-gb"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "/static/"
STATIC_ROOT = Path(env("STATIC_ROOT", str(VAR_DIR / "static")))
STATICFILES_DIRS = [BASE_DIR / "static"]
STORAGES = {
    # Removes a half-written upload when the disk is full or read-only (portal/storage.py).
    "default": {"BACKEND": "portal.storage.SafeFileSystemStorage"},
    "staticfiles": {
        # hashed and compressed; ES module imports are rewritten to the hashed files (portal/storage.py)
        "BACKEND": "portal.storage.ModuleStaticFilesStorage"
        if not DEBUG
        else "django.contrib.staticfiles.storage.StaticFilesStorage"
    },
}
WHITENOISE_USE_FINDERS = DEBUG
MEDIA_ROOT = Path(env("MEDIA_ROOT", str(VAR_DIR / "media")))
MEDIA_URL = "/media/"

# Data and models.
BLIMP_DIR = Path(env("BLIMP_DIR", str(BASE_DIR.parent / "shared" / "blimp")))
SHARED_DIR = Path(env("SHARED_DIR", str(BASE_DIR.parent / "shared")))
MODELS_DIR = Path(env("MODELS_DIR", str(BASE_DIR / "models")))  # one folder per bundled model id (models/<id>/)
DEFAULT_MODEL = env("DEFAULT_MODEL", "eqlm-demo")  # the default model: its files are MODELS_DIR/<id>/
WARM_UP_MODEL = env_bool("WARM_UP_MODEL", True)  # each WSGI worker loads every servable model before its first request
# The memory the depth dial lets a model take in a reader's browser (MB); 0: half the device's (navigator.deviceMemory).
# A model estimated above it is not downloaded: the page offers generation on the server instead.
DIAL_BROWSER_MEMORY_MB = env_int("DIAL_BROWSER_MEMORY_MB", 0)
UPLOAD_MAX_BYTES = env_int("UPLOAD_MAX_BYTES", 25 * 1024 * 1024)  # one uploaded result file
# An uploaded or imported checkpoint (the 121M programme model is 483 MB in fp32); refused on its Content-Length.
CHECKPOINT_MAX_BYTES = env_int("CHECKPOINT_MAX_BYTES", 1024 * 1024 * 1024)
EVALUATION_DEVICE = env("EVALUATION_DEVICE", "")  # cpu or cuda; empty: CUDA when a worker sees a GPU, else CPU
# The fp32 size a checkpoint's config may declare (vocab_size x d_model ...), refused before anything is allocated.
MODEL_MAX_BYTES = env_int("MODEL_MAX_BYTES", 4 * 1000**3)
DATA_UPLOAD_MAX_MEMORY_SIZE = env_int("DATA_UPLOAD_MAX_MEMORY_SIZE", 5 * 1024 * 1024)
FILE_UPLOAD_MAX_MEMORY_SIZE = 2 * 1024 * 1024

# API.
API_REQUIRE_KEY = env_bool("API_REQUIRE_KEY", not DEBUG)
API_MAX_TOKENS = env_int("API_MAX_TOKENS", 512)  # cap on max_tokens per choice
API_MAX_PROMPT_TOKENS = env_int("API_MAX_PROMPT_TOKENS", 2048)  # prompt length cap (tokens = UTF-8 bytes)
API_MAX_N = env_int("API_MAX_N", 4)  # choices per request (prompts x n)
API_MAX_BODY_BYTES = env_int("API_MAX_BODY_BYTES", 1024 * 1024)  # any non-upload API body; views may set their own
API_MAX_CONCURRENT_GENERATIONS = env_int("API_MAX_CONCURRENT_GENERATIONS", 8)  # per web process; beyond: a queue
API_GENERATION_QUEUE_SECONDS = env_int("API_GENERATION_QUEUE_SECONDS", 10)  # longest queue wait; beyond: 503
API_BATCH_GENERATIONS = env_bool("API_BATCH_GENERATIONS", True)  # a model's concurrent generations share iterations
API_BATCH_MAX_ROWS = env_int("API_BATCH_MAX_ROWS", 16)  # rows in one batched iteration
API_BATCH_MIN_PARAMS = env_int("API_BATCH_MIN_PARAMS", 1_000_000)  # smaller models decode each request alone
# onnxruntime's intra-op threads for a model of API_BATCH_MIN_PARAMS or more (a smaller one runs on one thread, which
# its tiny products run fastest on); with several web processes, set it to the cores divided by the processes
API_ONNX_THREADS = env_int("API_ONNX_THREADS", os.cpu_count() or 1)
API_ANON_REQUESTS_PER_MINUTE = env_int("API_ANON_REQUESTS_PER_MINUTE", 60)  # per client address without a key
API_ANON_TOKENS_PER_MINUTE = env_int("API_ANON_TOKENS_PER_MINUTE", 20000)

# Celery: eager (in-process) when no broker is configured.
CELERY_BROKER_URL = env("CELERY_BROKER_URL")
CELERY_RESULT_BACKEND = env("CELERY_RESULT_BACKEND", CELERY_BROKER_URL)
CELERY_TASK_ALWAYS_EAGER = env_bool("CELERY_TASK_ALWAYS_EAGER", not CELERY_BROKER_URL)
CELERY_TASK_EAGER_PROPAGATES = True
CELERY_TASK_SOFT_TIME_LIMIT = env_int("CELERY_TASK_SOFT_TIME_LIMIT", 600)
CELERY_TASK_TIME_LIMIT = env_int("CELERY_TASK_TIME_LIMIT", 660)
# How long a message taken by a worker that died (kill -9, lost machine) waits before Redis hands it to another.
CELERY_BROKER_TRANSPORT_OPTIONS = {"visibility_timeout": env_int("CELERY_VISIBILITY_TIMEOUT", 3600)}
# With Redis down, give up on the result backend in about a second (its default retries for ~20 s inside the
# request); job rows, not task results, are the record, and the job is then marked failed (portal/celery.py).
CELERY_RESULT_BACKEND_TRANSPORT_OPTIONS = {
    "retry_policy": {"max_retries": 2, "interval_start": 0, "interval_step": 0.5}
}
# A Redis that keeps nothing on disk forgets queued messages when it restarts, leaving their rows `queued`.
# The worker's embedded beat (`make worker`) sweeps every JOB_SWEEP_SECONDS and re-sends the task of a row
# queued for over JOB_STALE_SECONDS whose message is no longer in Redis (portal/jobs.py).
JOB_SWEEP_SECONDS = env_int("JOB_SWEEP_SECONDS", 60)
JOB_STALE_SECONDS = env_int("JOB_STALE_SECONDS", 300)
# Experiments (experiments_app/training.py): a training job is a chain of slices of at most EXPERIMENT_SLICE_SECONDS,
# the wait for a lease included (within the 600 s soft limit, leaving room for loading the corpus and for a stage's
# closing evaluation and save), each holding a database lease per (arm, seed) that its heartbeats renew; a lease not
# renewed for EXPERIMENT_LEASE_SECONDS belongs to a dead worker and may be taken over.
EXPERIMENT_SLICE_SECONDS = env_int("EXPERIMENT_SLICE_SECONDS", 420)
EXPERIMENT_SLICE_STEPS = env_int("EXPERIMENT_SLICE_STEPS", 0)  # also end a slice after this many steps (0: no cap)
EXPERIMENT_LEASE_SECONDS = env_int("EXPERIMENT_LEASE_SECONDS", 120)  # below CELERY_VISIBILITY_TIMEOUT (a check)
# A run's evaluation measures this many windows at a time (whole batches of 16), saving each part, so one on the whole
# held-out slice spans slices
EXPERIMENT_EVAL_PART_WINDOWS = env_int("EXPERIMENT_EVAL_PART_WINDOWS", 64)
EXPERIMENT_TRAIN_THREADS = env_int("EXPERIMENT_TRAIN_THREADS", 1)
EXPERIMENT_TRAIN_DEVICE = env("EXPERIMENT_TRAIN_DEVICE", "cpu")
# Lab job submissions per client address (anonymous) and per signed-in user; staff are not throttled.
LAB_JOB_ANON_RATE = env("LAB_JOB_ANON_RATE", "20/hour")
LAB_JOB_USER_RATE = env("LAB_JOB_USER_RATE", "120/hour")
LAB_JOB_MAX_WORK = env_int("LAB_JOB_MAX_WORK", 500_000_000)  # runs x steps x m x n: one 50x50 run of 200,000 steps

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": ["rest_framework.authentication.SessionAuthentication"],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticatedOrReadOnly"],
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    "DEFAULT_PARSER_CLASSES": [
        "rest_framework.parsers.JSONParser",
        "rest_framework.parsers.MultiPartParser",
        "rest_framework.parsers.FormParser",
    ],
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "DEFAULT_PAGINATION_CLASS": "rest_framework.pagination.PageNumberPagination",
    "PAGE_SIZE": 50,
    "EXCEPTION_HANDLER": "portal.api.api_exception_handler",
}
SPECTACULAR_SETTINGS = {
    "TITLE": "EqLM Portal API",
    "DESCRIPTION": "Findings, live benchmark tables, equilibrium solvers and an OpenAI-compatible EqLM API.",
    "VERSION": VERSION,
    "SERVE_INCLUDE_SCHEMA": False,
    # /api/docs/: Swagger UI from the portal's own static files; its start-up script is a separate file (CSP).
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "SWAGGER_UI_SETTINGS": {"deepLinking": False, "validatorUrl": None},
    # Two `status` fields with different choices: name their enums instead of hashing them.
    "ENUM_NAME_OVERRIDES": {
        "JobStatusEnum": "portal.models.JobStatus",
        "FindingStatusEnum": "findings_app.models.Status",
        "LabSolverEnum": "lab_app.solvers.SOLVERS",
        "EqlmSolverEnum": "eqlm.convergence.SOLVERS",
        "EqlmStartEnum": "eqlm.limits.STARTS",
        "EqlmHaltEnum": "eqlm.limits.HALTS",
        "EvaluationKindEnum": "models_app.models.EvaluationRun.Kind",
    },
}

# A shared cache (rate limits, login throttling, table cache) must be Redis once there are several processes.
CACHE_URL = env("CACHE_URL")
if CACHE_URL:
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": CACHE_URL}}
else:
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache", "LOCATION": "portal"}}
LOGIN_FAILURE_LIMIT = env_int("LOGIN_FAILURE_LIMIT", 5)
LOGIN_FAILURE_WINDOW = env_int("LOGIN_FAILURE_WINDOW", 900)

# Security: safe defaults that production tightens through the environment.
SECURE_SSL_REDIRECT = env_bool("SECURE_SSL_REDIRECT", not DEBUG)
SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https") if env_bool("BEHIND_PROXY", False) else None
SECURE_HSTS_SECONDS = env_int("SECURE_HSTS_SECONDS", 0 if DEBUG else 31536000)
SECURE_HSTS_INCLUDE_SUBDOMAINS = not DEBUG
SECURE_HSTS_PRELOAD = not DEBUG
SESSION_COOKIE_SECURE = env_bool("SESSION_COOKIE_SECURE", not DEBUG)
CSRF_COOKIE_SECURE = env_bool("CSRF_COOKIE_SECURE", not DEBUG)
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
X_FRAME_OPTIONS = "DENY"

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "root": {"handlers": ["console"], "level": env("LOG_LEVEL", "INFO")},
    "loggers": {"django.db.backends": {"level": "WARNING"}},
}
