"""Ingest services: generic records -> runs, arms and result rows, one transaction per file, idempotent.

`ingest_records` is the public entry point for other apps (for example the demo model's BLiMP
evaluation): pass dicts in the generic long format (see `benchmarks_app.ingest.GENERIC_FIELDS`).
"""

from __future__ import annotations

import hashlib
import json
import math
from pathlib import PurePosixPath

from django.conf import settings
from django.core.cache import cache
from django.core.files.base import ContentFile
from django.core.files.uploadhandler import SkipFile, TemporaryFileUploadHandler
from django.db import connection, transaction
from django.utils import timezone

from portal.models import JobStatus

from .ingest import FORMATS, REQUIRED, IngestError, parse_bytes
from .models import Arm, ResultRow, Run, SourceFile

CACHE_VERSION_KEY = "benchmarks:tables:version"
MAX_LEN = {"run": 200, "experiment": 100, "arm": 100, "metric": 100, "unit": 30, "model_family": 50,
           "model_name": 200, "config_hash": 128, "git_commit": 64, "hardware": 100, "pointer": 255}  # fmt: skip
MAX_ABS_VALUE = 1e15
MAX_INT = 2**53


def condition_key(condition: dict | None) -> str:
    """Canonical text of a condition (sorted keys, compact), "" for none: the identity of an evaluation setting."""
    if not condition:
        return ""
    return json.dumps(condition, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def tables_cache_version() -> str:
    """Key suffix for cached tables: the newest row id (ingest by any process changes it) and a local counter
    bumped on deletes/edits, so a cached table never outlives the rows it was computed from."""
    from django.db.models import Max

    newest = ResultRow.objects.aggregate(m=Max("id"))["m"] or 0
    return f"{newest}.{cache.get_or_set(CACHE_VERSION_KEY, 1, None)}"


def invalidate_tables() -> None:
    """Every cached table is keyed by this version; bumping it makes them stale at once."""
    try:
        cache.incr(CACHE_VERSION_KEY)
    except ValueError:
        cache.set(CACHE_VERSION_KEY, 2, None)


def _problem(index: int, record: dict, message: str) -> dict:
    where = record.get("pointer") if isinstance(record, dict) else None
    return {"record": index, "pointer": where or f"/{index}", "message": message}


_TEXT_REQUIRED = ("run", "experiment", "arm", "metric")
_INT_FIELDS = ("seed", "n", "step", "num_params")
_NON_NEGATIVE = ("n", "step", "num_params")


def validate_record(index: int, record) -> tuple[dict | None, str | None]:
    """A cleaned copy of one generic record, or an error message. Kept lean: it runs once per ingested row."""
    if type(record) is not dict:
        return None, "a record must be an object"
    get = record.get
    for key in REQUIRED:
        if get(key) in (None, ""):
            return None, f"missing {key}"
    clean = dict(record)
    for key, value in record.items():
        limit = MAX_LEN.get(key)
        if limit is None or value is None:
            continue
        if type(value) is not str:
            if key in _TEXT_REQUIRED:
                return None, f"{key} must be text"
            value = clean[key] = str(value)
        if len(value) > limit:
            return None, f"{key} is longer than {limit} characters"
    value = clean["value"]
    kind = type(value)
    if kind is not float:
        if kind is bool or not isinstance(value, int | float):
            return None, f"value must be a number, not {kind.__name__}"
        try:
            value = clean["value"] = float(value)
        except OverflowError:
            return None, "value is too large"
    if not (-MAX_ABS_VALUE <= value <= MAX_ABS_VALUE):  # also false for NaN
        return None, "value must be a finite number within ±1e15"
    for key in _INT_FIELDS:
        item = get(key)
        if item is None:
            continue
        if type(item) is not int or not (-MAX_INT < item < MAX_INT):
            return None, f"{key} must be an integer"
        if item < 0 and key in _NON_NEGATIVE:
            return None, f"{key} must not be negative"
    condition = get("condition") or {}
    if type(condition) is not dict:
        return None, "condition must be an object"
    if condition:
        for ckey, cval in condition.items():
            if isinstance(cval, float) and not math.isfinite(cval):
                return None, f"condition {ckey} must be finite"
            if not isinstance(cval, str | int | float | bool) and cval is not None:
                return None, f"condition {ckey} must be a plain value"
        key = condition_key(condition)
        if len(key) > 255:
            return None, "condition is too long"
        clean["condition_key"] = key
    else:
        clean["condition_key"] = ""
    clean["condition"] = condition
    for key in ("recipe", "run_config"):
        if get(key) is not None and type(get(key)) is not dict:
            return None, f"{key} must be an object"
    return clean, None


def _records_sha256(records: list[dict]) -> str:
    return hashlib.sha256(json.dumps(records, sort_keys=True, default=str).encode()).hexdigest()


@transaction.atomic
def _write(clean: list[dict], source: SourceFile | None, run_configs: dict | None = None) -> int:
    runs: dict[str, Run] = {}
    arms: dict[tuple[str, str], Arm] = {}
    for rec in clean:
        run_id = rec["run"]
        if run_id not in runs:
            run, created = Run.objects.get_or_create(
                run_id=run_id,
                defaults={
                    "experiment": rec["experiment"],
                    "seed": rec.get("seed"),
                    "seed_inferred": bool(rec.get("seed_inferred")),
                    "config_hash": rec.get("config_hash", ""),
                    "git_commit": rec.get("git_commit", ""),
                    "hardware": rec.get("hardware", ""),
                    "config": (run_configs or {}).get(run_id) or rec.get("run_config") or {},
                    "source_file": source,
                },
            )
            if not created:
                changed = []
                if run.seed is None and rec.get("seed") is not None:
                    run.seed, run.seed_inferred = rec["seed"], bool(rec.get("seed_inferred"))
                    changed += ["seed", "seed_inferred"]
                elif run.seed_inferred and rec.get("seed") is not None and not rec.get("seed_inferred"):
                    run.seed_inferred = False  # the config now confirms the seed
                    changed.append("seed_inferred")
                for fld in ("config_hash", "git_commit", "hardware"):
                    if not getattr(run, fld) and rec.get(fld):
                        setattr(run, fld, rec[fld])
                        changed.append(fld)
                new_config = (run_configs or {}).get(run_id)
                if new_config and "config_yaml" in new_config and "config_yaml" not in run.config:
                    run.config = {**run.config, **new_config}
                    changed.append("config")
                if changed:
                    run.save(update_fields=changed)
            runs[run_id] = run
        key = (run_id, rec["arm"])
        if key not in arms:
            arm, created = Arm.objects.get_or_create(
                run=runs[run_id],
                label=rec["arm"],
                defaults={
                    "model_family": rec.get("model_family", ""),
                    "model_name": rec.get("model_name", ""),
                    "num_params": rec.get("num_params"),
                    "recipe": rec.get("recipe") or {},
                },
            )
            if not created and rec.get("recipe") and "source" in (arm.recipe or {}) and "source" not in rec["recipe"]:
                arm.recipe = rec["recipe"]
                arm.save(update_fields=["recipe"])
            arms[key] = arm
    arm_ids = [a.pk for a in arms.values()]
    before = _count_rows(arm_ids)
    source_id = source.pk if source else None
    dump_condition = ResultRow._meta.get_field("condition").get_db_prep_save
    empty_condition = dump_condition({}, connection)
    params = []
    for rec in clean:
        arm = arms[(rec["run"], rec["arm"])]
        run = runs[rec["run"]]
        condition = rec["condition"]
        params.append(
            (
                arm.pk,
                run.experiment,
                arm.label,
                run.seed,
                rec["metric"],
                rec["value"],
                rec.get("unit", ""),
                rec.get("n"),
                rec.get("step"),
                dump_condition(condition, connection) if condition else empty_condition,
                rec["condition_key"],
                source_id,
                rec.get("pointer", "")[:255],
            )
        )
    _insert_ignoring_duplicates(params)
    created = _count_rows(arm_ids) - before
    if created:
        transaction.on_commit(invalidate_tables)
    return created


ROW_COLUMNS = ["arm_id", "experiment", "arm_label", "seed", "metric", "value", "unit", "n", "step", "condition",
               "condition_key", "source_file_id", "source_pointer"]  # fmt: skip


def _insert_ignoring_duplicates(params: list[tuple], batch: int = 5000) -> None:
    """INSERT ... ON CONFLICT DO NOTHING with executemany (SQLite and PostgreSQL): the ORM's per-object
    overhead would cap ingest far below 20k rows/s, and the unique constraints make re-ingest a no-op."""
    quote = connection.ops.quote_name
    table = quote(ResultRow._meta.db_table)
    columns = ", ".join(quote(c) for c in ROW_COLUMNS)
    placeholders = ", ".join(["%s"] * len(ROW_COLUMNS))
    sql = f"INSERT INTO {table} ({columns}) VALUES ({placeholders}) ON CONFLICT DO NOTHING"
    with connection.cursor() as cursor:
        for i in range(0, len(params), batch):
            cursor.executemany(sql, params[i : i + batch])


def _count_rows(arm_ids: list[int]) -> int:
    total = 0
    for i in range(0, len(arm_ids), 500):
        total += ResultRow.objects.filter(arm_id__in=arm_ids[i : i + 500]).count()
    return total


def clean_records(records: list[dict]) -> list[dict]:
    """Validate every record; raise IngestError listing every problem (up to 50) so nothing is half-written."""
    if not isinstance(records, list):
        raise IngestError("records must be a list")
    clean, problems = [], []
    for index, record in enumerate(records):
        value, problem = validate_record(index, record)
        if problem:
            problems.append(_problem(index, record, problem))
            if len(problems) >= 50:
                break
        else:
            clean.append(value)
    if problems:
        first = problems[0]
        raise IngestError(
            f"{len(problems)} invalid record(s); first at {first['pointer']}: {first['message']}", problems
        )
    if not clean:
        raise IngestError("No records to ingest.")
    return clean


def ingest_records(
    records: list[dict], *, source_name: str, uploader=None, source_file: SourceFile | None = None
) -> int:
    """Store generic long-format records in one transaction; return how many new rows were created.

    Idempotent: a record identical in (run, arm, metric, condition, step) to a stored row creates nothing.
    Invalid input raises `IngestError` and writes nothing. Keys: run, experiment, arm, seed, metric, value,
    unit, n, step, condition (dict), model_family, model_name, num_params, config_hash, git_commit.
    """
    clean = clean_records(records)
    with transaction.atomic():
        if source_file is None:
            sha = _records_sha256(clean)
            source_file = SourceFile.objects.filter(sha256=sha, original_name=source_name[:255]).first()
            if source_file is None:
                source_file = SourceFile.objects.create(
                    sha256=sha,
                    original_name=source_name[:255],
                    requested_format="records",
                    detected_format="records",
                    uploader=uploader,
                    status=JobStatus.DONE,
                    progress=1.0,
                    finished_at=timezone.now(),
                )
            created = _write(clean, source_file)
            SourceFile.objects.filter(pk=source_file.pk).update(
                rows_created=source_file.rows_created + created, rows_seen=len(clean)
            )
            return created
        return _write(clean, source_file)


# --- files ------------------------------------------------------------------------------------------


def sha256_of(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def ingest_bytes(
    data: bytes,
    *,
    name: str = "",
    path_hint: str = "",
    fmt: str = "",
    companion: bytes | None = None,
    source_file: SourceFile | None = None,
    experiment: str | None = None,
) -> tuple[int, int, str, list[str]]:
    """Parse and store one file in one transaction: (rows created, rows seen, detected format, notes)."""
    if len(data) > settings.UPLOAD_MAX_BYTES:
        raise IngestError(f"The file is larger than the {settings.UPLOAD_MAX_BYTES:,}-byte limit.")
    parsed = parse_bytes(data, name=name, path_hint=path_hint, fmt=fmt, companion=companion, experiment=experiment)
    clean = clean_records(parsed.records)
    created = _write(clean, source_file, parsed.run_configs)
    return created, len(clean), parsed.format, parsed.notes


def read_limited(fileobj, limit: int | None = None) -> bytes:
    """Read at most limit+1 bytes: a file over the limit is refused before it is read whole."""
    limit = settings.UPLOAD_MAX_BYTES if limit is None else limit
    size = getattr(fileobj, "size", None)
    if size is not None and size > limit:
        raise IngestError(f"The file is {size:,} bytes, over the {limit:,}-byte limit.")
    data = fileobj.read(limit + 1)
    if len(data) > limit:
        raise IngestError(f"The file is over the {limit:,}-byte limit.")
    return data


class SizeLimitedUploadHandler(TemporaryFileUploadHandler):
    """Stops storing a file as soon as it passes UPLOAD_MAX_BYTES (the rest of it is never kept) and remembers it."""

    def new_file(self, *args, **kwargs):
        super().new_file(*args, **kwargs)
        self.received = 0

    def receive_data_chunk(self, raw_data, start):
        self.received += len(raw_data)
        if self.received > settings.UPLOAD_MAX_BYTES:
            oversize = getattr(self.request, "_benchmarks_oversize", [])
            if self.file_name not in oversize:
                oversize.append(self.file_name)
            self.request._benchmarks_oversize = oversize
            raise SkipFile()
        return super().receive_data_chunk(raw_data, start)


def find_duplicate(sha: str, path_hint: str) -> SourceFile | None:
    """An earlier upload of the same bytes (config.yaml included) and hint that did not fail."""
    qs = SourceFile.objects.filter(sha256=sha, path_hint=path_hint).exclude(status=JobStatus.FAILED)
    return qs.order_by("pk").first()


def combined_sha(data: bytes, companion: bytes | None) -> str:
    digest = hashlib.sha256(data)
    if companion:
        digest.update(b"\x00config.yaml\x00" + companion)
    return digest.hexdigest()


def pair_companions(files: list[tuple[str, bytes]]) -> tuple[list[tuple[str, bytes, bytes | None]], list[dict]]:
    """Pair each config.yaml with the result file in the same folder; a lone config.yaml is an error."""
    configs = {}
    results = []
    for hint, data in files:
        p = PurePosixPath(hint)
        if p.name.lower() in ("config.yaml", "config.yml"):
            configs[str(p.parent)] = (hint, data)
        else:
            results.append((hint, data))
    paired, problems = [], []
    used = set()
    for hint, data in results:
        folder = str(PurePosixPath(hint).parent)
        companion = configs.get(folder)
        if companion:
            used.add(folder)
        paired.append((hint, data, companion[1] if companion else None))
    for folder, (hint, _data) in configs.items():
        if folder not in used:
            problems.append(
                {
                    "file": hint,
                    "message": "a config.yaml holds no results: upload it with the results.json of its folder",
                }
            )
    return paired, problems


def create_upload(
    data: bytes, *, name: str, path_hint: str = "", fmt: str = "", companion: bytes | None = None, uploader=None
) -> tuple[SourceFile, bool]:
    """Store an uploaded file as a queued SourceFile (or return the earlier upload of the same bytes).

    Returns (source_file, duplicate). The caller queues `ingest_source_file` on commit when not a duplicate.
    """
    if fmt and fmt not in FORMATS:
        raise IngestError(f"Unknown format {fmt!r}; understood: {', '.join(FORMATS)}.")
    sha = combined_sha(data, companion)
    hint = path_hint or name
    earlier = find_duplicate(sha, hint)
    if earlier:
        return earlier, True
    source = SourceFile(
        sha256=sha,
        original_name=PurePosixPath(name).name[:255],
        path_hint=hint[:255],
        requested_format=fmt,
        size_bytes=len(data),
        uploader=uploader,
    )
    # Stored under a generated name; the client's file name is kept only as text.
    source.file.save(f"{sha[:16]}.dat", ContentFile(data), save=False)
    if companion:
        source.companion.save(f"{sha[:16]}.config.yaml", ContentFile(companion), save=False)
    source.save()
    return source, False


def queue_uploads(
    paired: list[tuple[str, bytes, bytes | None]], *, fmt: str = "", uploader=None
) -> list[tuple[str, SourceFile, bool]]:
    """Store each (hint, data, companion) in one transaction and queue every new upload's ingest on commit.

    Returns (hint, source_file, duplicate) per file; an `IngestError` stores none of them.
    """
    from .tasks import ingest_upload  # the tasks module imports this one

    stored = []
    with transaction.atomic():
        for hint, data, companion in paired:
            source, duplicate = create_upload(
                data, name=hint, path_hint=hint, fmt=fmt, companion=companion, uploader=uploader
            )
            if not duplicate:
                transaction.on_commit(lambda pk=source.pk: ingest_upload.delay(pk))
            stored.append((hint, source, duplicate))
    return stored


def ingest_source_file(source_id: int) -> SourceFile:
    """Ingest a stored upload (the Celery task calls this). Safe to run twice: a finished file is left alone."""
    source = SourceFile.objects.get(pk=source_id)
    if source.status == JobStatus.DONE:
        return source
    if not source.file:
        source.mark_failed("This upload has no file to ingest; upload the file again.")
        return source
    source.mark_running()
    try:
        with source.file.open("rb") as fh:
            data = read_limited(fh)
        companion = None
        if source.companion:
            with source.companion.open("rb") as fh:
                companion = read_limited(fh)
        with transaction.atomic():
            created, seen, fmt, notes = ingest_bytes(
                data,
                name=source.original_name,
                path_hint=source.path_hint,
                fmt=source.requested_format,
                companion=companion,
                source_file=source,
            )
            source.rows_created, source.rows_seen, source.detected_format = created, seen, fmt
            note_text = "; ".join(notes)
            if created == 0:
                source.summary = f"{seen} rows read, all already stored: nothing new. {note_text}"[:300]
            else:
                source.summary = f"{created} new rows of {seen} read. {note_text}"[:300]
            source.errors = []
            source.save(update_fields=["rows_created", "rows_seen", "detected_format", "summary", "errors"])
        source.mark_done()
    except IngestError as exc:
        source.errors = exc.errors
        source.rows_created = 0
        source.save(update_fields=["errors", "rows_created"])
        source.mark_failed(exc.message)
    return source


def import_path(
    path, *, path_hint: str = "", fmt: str = "", companion_path=None, uploader=None
) -> tuple[SourceFile, bool]:
    """`manage.py import_results`: the upload path run synchronously on a local file: (source, duplicate)."""
    from pathlib import Path

    path = Path(path)
    size = path.stat().st_size
    if size > settings.UPLOAD_MAX_BYTES:
        raise IngestError(f"{path} is {size:,} bytes, over the {settings.UPLOAD_MAX_BYTES:,}-byte limit.")
    data = path.read_bytes()
    companion = None
    if companion_path is None and path.name == "results.json" and (path.parent / "config.yaml").exists():
        companion_path = path.parent / "config.yaml"
    if companion_path:
        companion = Path(companion_path).read_bytes()
    source, duplicate = create_upload(
        data, name=path.name, path_hint=path_hint or str(path), fmt=fmt, companion=companion, uploader=uploader
    )
    if duplicate:
        return source, True
    return ingest_source_file(source.pk), False
