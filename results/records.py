"""Record writes: generic records -> runs, arms and result rows, one transaction per file, idempotent; and the
version of the cached tables, bumped by every write.

`ingest_records` is the public entry point for other apps (for example the demo model's BLiMP
evaluation): pass dicts in the generic long format (see `results.generic.GENERIC_FIELDS`).
"""

from __future__ import annotations

import hashlib
import json
import math

from django.core.cache import cache
from django.db import connection, transaction
from django.utils import timezone

from portal.models import JobStatus

from .generic import MAX_ABS_VALUE, REQUIRED, IngestError
from .models import Arm, ResultRow, Run, SourceFile

CACHE_VERSION_KEY = "benchmarks:tables:version"
MAX_LEN = {"run": 200, "experiment": 100, "arm": 100, "metric": 100, "unit": 30, "model_family": 50,
           "model_name": 200, "config_hash": 128, "git_commit": 64, "hardware": 100, "pointer": 255}  # fmt: skip
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


def _run_for(rec: dict, source: SourceFile | None, run_configs: dict | None) -> Run:
    """The run a record names: created from it, or the stored one with the blanks the record fills filled in."""
    run_id = rec["run"]
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
    if created:
        return run
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
    return run


def _arm_for(rec: dict, run: Run) -> Arm:
    """The arm a record names in its run; a stored recipe without a source gives way to one that has it."""
    arm, created = Arm.objects.get_or_create(
        run=run,
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
    return arm


@transaction.atomic
def write_clean(clean: list[dict], source: SourceFile | None, run_configs: dict | None = None) -> int:
    """Store records that passed clean_records, in one transaction; returns the number of new result rows."""
    runs: dict[str, Run] = {}
    arms: dict[tuple[str, str], Arm] = {}
    for rec in clean:
        run_id = rec["run"]
        if run_id not in runs:
            runs[run_id] = _run_for(rec, source, run_configs)
        key = (run_id, rec["arm"])
        if key not in arms:
            arms[key] = _arm_for(rec, runs[run_id])
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
            created = write_clean(clean, source_file)
            SourceFile.objects.filter(pk=source_file.pk).update(
                rows_created=source_file.rows_created + created, rows_seen=len(clean)
            )
            return created
        return write_clean(clean, source_file)
