"""Uploads: result files read within the size limit, stored under a generated name, paired with their config.yaml,
queued by id on commit and ingested by the task (`ingest_source_file`), or imported from a path synchronously.
"""

from __future__ import annotations

import hashlib
from pathlib import PurePosixPath

from django.conf import settings
from django.core.files.base import ContentFile
from django.core.files.uploadhandler import SkipFile, TemporaryFileUploadHandler
from django.db import transaction

from portal.api import ApiError
from portal.models import JobStatus
from portal.unicode import stored_text_problem
from results.models import SourceFile
from results.records import clean_records, write_clean

from .parsers import FORMATS, IngestError, parse_bytes


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
    refuse_unstorable_text(parsed.records, parsed.run_configs)
    clean = clean_records(parsed.records)
    created = write_clean(clean, source_file, parsed.run_configs)
    return created, len(clean), parsed.format, parsed.notes


def refuse_unstorable_text(records: list, run_configs: dict) -> None:
    """Lone surrogates (a JSON or YAML `\\ud800` escape) and NUL characters, row by row, before anything is written."""
    problems = []
    for index, record in enumerate(records if isinstance(records, list) else []):
        found = stored_text_problem(record)
        if found:
            where = (record.get("pointer") if isinstance(record, dict) else None) or f"/{index}"
            problems.append({"record": index, "pointer": where, "message": f"{found[0].lstrip('/')} {found[1]}"})
            if len(problems) >= 50:
                break
    found = stored_text_problem(run_configs or {})
    if found:
        problems.append({"pointer": "config.yaml" + found[0], "message": f"config.yaml {found[1]}"})
    if problems:
        first = problems[0]
        raise IngestError(f"{len(problems)} record(s) hold text that cannot be stored; first at {first['pointer']}: "
                          f"{first['message']}", problems)  # fmt: skip


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


MAX_FILES = 50  # per request, on the page and through the API


class UploadRefused(ApiError):
    """A batch refused before anything is stored; the API answers it in the error shape, the page as a message."""

    @property
    def message(self) -> str:
        return str(self.detail)


def validate_upload_batch(files: list, hints: list[str], fmt: str, oversize: list[str] = ()) -> list:
    """The one check of an upload batch, for the page and the API: sizes, counts, hints, format, lone configs.

    `oversize` names files the size-limiting handler cut off while they streamed in. Returns the files read and
    paired with their config.yaml, ready for `queue_uploads`; raises `UploadRefused` naming the bad field.
    """
    limit = settings.UPLOAD_MAX_BYTES
    if oversize:
        raise UploadRefused(
            f"{oversize[0]}: over the {limit:,}-byte limit; nothing was stored.", status_code=413, param="file",
            code="too_large",
        )  # fmt: skip
    if not files:
        raise UploadRefused("Attach one or more result files (the field 'file').", param="file")
    if len(files) > MAX_FILES:
        raise UploadRefused(f"At most {MAX_FILES} files per upload.", param="file")
    if hints and len(hints) != len(files):
        raise UploadRefused(
            f"Give one path hint per file ({len(files)} files, {len(hints)} hints), or none.", param="path"
        )
    if fmt and fmt not in FORMATS:
        raise UploadRefused(f"Unknown format {fmt!r}; understood: {', '.join(FORMATS)}.", param="format")
    bad_hint = stored_text_problem(list(hints))  # multipart fields are not checked by the request middleware
    if bad_hint:
        raise UploadRefused(f"Path hint {int(bad_hint[0].strip('/')) + 1} {bad_hint[1]}.", param="path")
    loaded = []
    for index, upload in enumerate(files):
        hint = (hints[index] if hints else "") or upload.name
        try:
            loaded.append((hint, read_limited(upload)))
        except IngestError as exc:
            raise UploadRefused(f"{upload.name}: {exc.message}", status_code=413, param="file", code="too_large")
    paired, problems = pair_companions(loaded)
    if problems:
        raise UploadRefused(f"{problems[0]['file']}: {problems[0]['message']}", param="file", code="lone_config")
    return paired


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
    try:
        source.file.save(f"{sha[:16]}.dat", ContentFile(data), save=False)
        if companion:
            source.companion.save(f"{sha[:16]}.config.yaml", ContentFile(companion), save=False)
        source.save()
    except BaseException:
        discard_files(source)
        raise
    return source, False


def discard_files(source: SourceFile) -> None:
    """Remove an upload's stored bytes from media (a rejected or rolled-back upload keeps no file)."""
    for field_file in (source.file, source.companion):
        if field_file:
            field_file.delete(save=False)


def queue_uploads(
    paired: list[tuple[str, bytes, bytes | None]], *, fmt: str = "", uploader=None
) -> list[tuple[str, SourceFile, bool]]:
    """Store each (hint, data, companion) in one transaction and queue every new upload's ingest on commit.

    Returns (hint, source_file, duplicate) per file; an `IngestError` stores none of them.
    """
    from portal.celery import send_by_name  # the tasks module imports this one: queue its task by name

    stored = []
    try:
        with transaction.atomic():
            for hint, data, companion in paired:
                source, duplicate = create_upload(
                    data, name=hint, path_hint=hint, fmt=fmt, companion=companion, uploader=uploader
                )
                if not duplicate:
                    transaction.on_commit(lambda pk=source.pk: send_by_name("benchmarks_app.tasks.ingest_upload", pk))
                stored.append((hint, source, duplicate))
    except BaseException:
        for _hint, source, duplicate in stored:  # rows rolled back take their files with them
            if not duplicate and not SourceFile.objects.filter(pk=source.pk).exists():
                discard_files(source)
        raise
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
        discard_files(source)  # a rejected file is not kept in media; uploading it again retries it
        source.errors = exc.errors
        source.rows_created = 0
        source.save(update_fields=["errors", "rows_created", "file", "companion"])
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
