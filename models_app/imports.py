"""Registering a checkpoint, the portal's format or the programme's: stream it, validate it out of process, give it
its folder under MEDIA_ROOT (named by sha256), then let a worker export, describe and card it with progress.

Nothing here imports torch: validation runs `eqlm.checkpoint_probe` in a child process and `run_import` (worker
side) imports the exporters inside.
"""

from __future__ import annotations

import hashlib
import json
import logging
import secrets
import shutil
import subprocess
import sys
from pathlib import Path

from django.conf import settings
from django.core.files.storage import default_storage
from django.db import transaction
from django.utils.text import slugify

from .models import ModelImport, RegisteredModel, model_folder_name

log = logging.getLogger(__name__)

PROGRAMME_FORMAT = "programme"
PORTAL_FORMAT = "portal"
CARD_MAX_BYTES = 256 * 1024
CHUNK = 1 << 20


PROBE_TIMEOUT_S = 120


class RegistryError(ValueError):
    """A refused upload or request; `param` names the offending field."""

    def __init__(self, message: str, param: str | None = None, status_code: int = 400, code: str = "invalid_value"):
        super().__init__(message)
        self.param, self.status_code, self.code = param, status_code, code


def too_large(size: int, param: str = "checkpoint") -> RegistryError:
    limit = settings.CHECKPOINT_MAX_BYTES
    return RegistryError(
        f"the checkpoint is {size:,} bytes, over the {limit:,}-byte limit (CHECKPOINT_MAX_BYTES)",
        param,
        413,
        "file_too_large",
    )


def probe_checkpoint(path: Path) -> dict:
    """Validate a checkpoint with weights_only=True in a child process; returns the probe's JSON."""
    try:
        result = subprocess.run(
            [sys.executable, "-m", "eqlm.checkpoint_probe", str(path), str(settings.MODEL_MAX_BYTES)],
            cwd=settings.BASE_DIR,
            capture_output=True,
            text=True,
            timeout=PROBE_TIMEOUT_S,
        )
    except subprocess.TimeoutExpired:
        return {"ok": False, "error": "validating the checkpoint took too long"}
    try:
        return json.loads(result.stdout.strip().splitlines()[-1])
    except (IndexError, json.JSONDecodeError):
        return {"ok": False, "error": "the checkpoint could not be validated"}


def check_declared_length(content_length) -> None:
    """Refuse an upload on its Content-Length, before its body is read or spooled."""
    try:
        declared = int(content_length or 0)
    except (TypeError, ValueError):
        raise RegistryError("Content-Length is not a number", "body") from None
    if declared > settings.CHECKPOINT_MAX_BYTES + CHUNK:  # the multipart envelope's own bytes
        raise too_large(declared)


def stream_to_incoming(source) -> tuple[str, str, int]:
    """Copy an upload (a file object) or a local file (a Path) in 1 MiB blocks to a generated name under
    models/incoming/, hashing as it goes; never holds the file whole. Returns (storage name, sha256, size)."""
    limit = settings.CHECKPOINT_MAX_BYTES
    declared = source.stat().st_size if isinstance(source, Path) else getattr(source, "size", None)
    if declared is not None and declared > limit:
        raise too_large(declared)
    name = f"models/incoming/{secrets.token_hex(12)}.pt"
    digest, total = hashlib.sha256(), 0
    Path(default_storage.path(name)).parent.mkdir(parents=True, exist_ok=True)
    reader = source.open("rb") if isinstance(source, Path) else source
    try:
        with open(default_storage.path(name), "wb") as out:
            chunks = reader.chunks(CHUNK) if hasattr(reader, "chunks") else iter(lambda: reader.read(CHUNK), b"")
            for block in chunks:
                total += len(block)
                if total > limit:
                    raise too_large(total)
                digest.update(block)
                out.write(block)
    except BaseException:
        default_storage.delete(name)
        raise
    finally:
        if isinstance(source, Path):
            reader.close()
    return name, digest.hexdigest(), total


def read_card_text(card) -> str:
    """An uploaded model card (Markdown, UTF-8, at most 256 KiB) as text; rendered safely on the model's page."""
    if card in (None, ""):
        return ""
    if isinstance(card, str):
        data = card.encode("utf-8")
    elif isinstance(card, Path):
        data = card.read_bytes()[: CARD_MAX_BYTES + 1]
    else:
        data = card.read(CARD_MAX_BYTES + 1)
    if len(data) > CARD_MAX_BYTES:
        raise RegistryError(f"the model card is over {CARD_MAX_BYTES // 1024} KiB", "card")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise RegistryError("the model card is not UTF-8 text", "card") from None


def parse_declares(value) -> dict | None:
    """`exp13:B1:42` -> {"experiment": "exp13", "arm": "B1", "seed": 42}: the published run a checkpoint claims to be,
    so its re-measured figures stand beside the published ones."""
    if value in (None, ""):
        return None
    parts = str(value).split(":")
    if len(parts) != 3 or not all(p.strip() for p in parts):
        raise RegistryError("declares must read EXPERIMENT:ARM:SEED, e.g. exp13:B1:42", "declares")
    try:
        seed = int(parts[2])
    except ValueError:
        raise RegistryError("the seed in declares must be an integer, e.g. exp13:B1:42", "declares") from None
    return {"experiment": parts[0].strip(), "arm": parts[1].strip(), "seed": seed}


def unique_slug(wanted: str) -> str:
    base = slugify(wanted)[:60].strip("-") or "model"
    slug, n = base, 1
    while RegisteredModel.objects.filter(slug=slug).exists():
        n += 1
        slug = f"{base}-{n}"
    return slug


def check_slug(slug: str) -> str:
    """A client-chosen slug: refused when malformed or taken (a generated one never collides)."""
    if slug != slugify(slug) or not 1 <= len(slug) <= 80:
        raise RegistryError("slug must be lower-case letters, digits and hyphens (at most 80)", "slug")
    if RegisteredModel.objects.filter(slug=slug).exists():
        raise RegistryError(f"a model named {slug!r} is already registered", "slug", 409, "duplicate")
    return slug


def registration_fields(probe: dict, sha: str, size: int) -> dict:
    """The registry row's fields from what the child process found in the file."""
    provenance = probe.get("provenance") or {}
    if probe.get("format") == PROGRAMME_FORMAT:
        provenance = {"format": PROGRAMME_FORMAT, "training_only": probe.get("training_only", {})}
        if probe.get("n_layers") is not None:
            provenance["n_layers"] = probe["n_layers"]
    return {
        "model_class": probe["model_class"],
        "sha256": sha,
        "size_bytes": size,
        "num_params": probe.get("num_params"),
        "config": probe.get("config") or {},
        "provenance": provenance,
    }


def place_checkpoint(stored: str, sha: str, card_text: str) -> str:
    """Move a validated upload into models/<sha256>/checkpoint.pt (writing card.md beside it); returns its name."""
    folder = Path(default_storage.path(model_folder_name(sha)))
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / "checkpoint.pt"
    shutil.move(default_storage.path(stored), target)
    if card_text:
        (folder / "card.md").write_text(card_text, encoding="utf-8")
    return f"{model_folder_name(sha)}/checkpoint.pt"


def remove_folder(sha: str) -> None:
    shutil.rmtree(default_storage.path(model_folder_name(sha)), ignore_errors=True)


def register_checkpoint(source, *, name: str = "", slug: str = "", card=None, declares=None, user=None):
    """Validate and register a checkpoint; returns (row, probe). A refusal (RegistryError) leaves no row and no file.

    `source` is an upload (file object) or a local Path. The child process checks the file with weights_only=True:
    the portal's format, or the programme's (`config_dict` + `model_class`), every field honoured or refused.
    """
    card_text = read_card_text(card)
    declared = parse_declares(declares)
    slug = check_slug(slug) if slug else ""
    stored, sha, size = stream_to_incoming(source)
    placed = False
    try:
        existing = RegisteredModel.objects.filter(sha256=sha).first()
        if existing:
            raise RegistryError(
                f"this checkpoint is already registered as {existing.slug!r}", "checkpoint", 409, "duplicate"
            )
        probe = probe_checkpoint(Path(default_storage.path(stored)))
        if not probe.get("ok"):
            raise RegistryError(f"rejected checkpoint: {probe.get('error')}", "checkpoint", 400, "invalid_checkpoint")
        fields = registration_fields(probe, sha, size)
        if declared:
            fields["provenance"]["declared"] = declared
        with transaction.atomic():
            final = place_checkpoint(stored, sha, card_text)
            placed = True
            row = RegisteredModel.objects.create(
                slug=slug or unique_slug(name or f"{probe['model_class'].lower()}-{sha[:8]}"),
                name=(name or slug or f"{probe['model_class']} {sha[:8]}")[:120],
                kind=RegisteredModel.Kind.UPLOADED,
                checkpoint=final,
                uploaded_by=user if getattr(user, "is_authenticated", False) else None,
                **fields,
            )
    except BaseException:
        default_storage.delete(stored)
        if placed:
            remove_folder(sha)
        raise
    return row, probe


def queue_import(model: RegisteredModel, user=None) -> ModelImport:
    """The worker's half: export, facts and card (the gpu queue runs models_app.tasks.import_model)."""
    from portal.celery import send_by_name

    job = ModelImport.objects.create(
        model=model, requested_by=user if getattr(user, "is_authenticated", False) else None
    )
    transaction.on_commit(lambda: send_by_name("models_app.tasks.import_model", job.pk))
    return job


def model_dir(model: RegisteredModel) -> Path:
    """The folder holding a registered model's files: its checkpoint's folder when it has one of its own."""
    return Path(default_storage.path(model_folder_name(model.sha256)))


def run_import(job_id: int) -> ModelImport:
    """Export the model to ONNX in its folder's onnx/, write facts.json, and serve it (idempotent)."""
    from .exports import export_registered_model
    from .facts import write_facts

    job = ModelImport.objects.select_related("model").get(pk=job_id)
    if job.is_finished:
        return job
    job.mark_running()
    job.report_progress(0.05, "exporting to ONNX")
    row = export_registered_model(job.model.pk, progress=lambda f, m: job.report_progress(0.05 + 0.65 * f, m))
    if (row.provenance or {}).get("format") == PROGRAMME_FORMAT:
        from .facts import record_metric
        from .programme_curve import measure_depth_curve

        curve = measure_depth_curve(row, progress=lambda f, m: job.report_progress(0.7 + 0.2 * f, m))
        record_metric(row, "depth_curve", curve)
    job.report_progress(0.9, "writing facts.json")
    facts = write_facts(row)
    ModelImport.objects.filter(pk=job.pk).update(facts=facts)
    job.refresh_from_db()
    job.mark_done()
    log.info("imported %s (%s)", row.slug, json.dumps({k: facts.get(k) for k in ("model_class", "parameters")}))
    return job
