"""Serve a registered checkpoint: export it to ONNX on a worker (torch is imported inside) and record the folder.

Once `RegisteredModel.onnx_dir` names the export, models_app.serving serves the model under its slug on /v1, the
dial and the council, like the bundled models.
"""

from __future__ import annotations

import json
import logging
import secrets
import shutil
from pathlib import Path

from django.conf import settings
from django.db import transaction

from eqlm.manifest import precisions_of

from .models import RegisteredModel, model_folder_name
from .serving import forget_registry_rows

log = logging.getLogger(__name__)


def export_folder(model: RegisteredModel) -> Path:
    """Where a row's export lives: onnx/ in its folder under MEDIA_ROOT, named by the checkpoint's sha256 (never by
    a client name)."""
    return Path(settings.MEDIA_ROOT) / model_folder_name(model.sha256) / "onnx"


def is_programme_model(row: RegisteredModel) -> bool:
    return (row.provenance or {}).get("format") == "programme"


def export_checkpoint(row: RegisteredModel, out_dir: Path, progress=None, int8: bool | None = None) -> dict:
    """Write the row's ONNX export into out_dir (torch is imported here, on a worker): the portal's format through
    eqlm.export, the programme's through eqlm.programme.export (spectral norm folded into plain weights).

    `int8` (default: for a model over eqlm.quantize.INT8_ABOVE_PARAMS parameters) adds the int8 graphs beside the
    fp32 ones, and their measured difference from fp32 on held-out prose (the manifest's `int8` block)."""
    from eqlm.quantize import INT8_ABOVE_PARAMS

    extra = {"name": row.name}
    if is_programme_model(row):
        from eqlm.export_programme import export_programme_onnx
        from eqlm.programme.checkpoint import load_programme_model

        model, _ = load_programme_model(row.file_path(), max_bytes=settings.MODEL_MAX_BYTES)
        int8 = model.num_params() > INT8_ABOVE_PARAMS if int8 is None else int8
        manifest = export_programme_onnx(model, out_dir, model_id=row.slug, extra=extra, progress=progress, int8=int8)
    else:
        from eqlm.checkpoint import load_checkpoint
        from eqlm.export import export_onnx

        model, _ = load_checkpoint(row.file_path())
        int8 = model.num_params() > INT8_ABOVE_PARAMS if int8 is None else int8
        manifest = export_onnx(model, out_dir, model_id=row.slug, extra=extra, int8=int8)
    if not int8:
        return manifest
    from eqlm.quantize_measure import measure_and_record

    return measure_and_record(out_dir)


def has_export(folder: Path | str | None, int8: bool | None = None) -> bool:
    """Whether folder holds a finished export (with int8 graphs, when `int8` asks for them)."""
    if not folder or not (Path(folder) / "manifest.json").exists():
        return False
    return not int8 or "int8" in precisions_of(json.loads((Path(folder) / "manifest.json").read_text()))


def export_registered_model(model_pk: int, progress=None, int8: bool | None = None) -> RegisteredModel:
    """Export the row's checkpoint to ONNX and set its onnx_dir (idempotent: a finished export is kept, unless `int8`
    asks for int8 graphs it lacks; int8 None: export_checkpoint's default, by size).

    The graphs are written to a private folder first and moved into place whole, so a reader never sees a
    half-written export. EqLM and ExplicitLM, in the portal's format or the programme's, all export.
    """
    row = RegisteredModel.objects.get(pk=model_pk)
    if has_export(row.onnx_dir, int8):
        return row
    folder = export_folder(row)
    if not has_export(folder, int8):
        folder.parent.mkdir(parents=True, exist_ok=True)
        partial = folder.with_name(f"{folder.name}.partial-{secrets.token_hex(4)}")
        try:
            export_checkpoint(row, partial, progress, int8=int8)
            shutil.rmtree(folder, ignore_errors=True)
            partial.rename(folder)
        finally:
            shutil.rmtree(partial, ignore_errors=True)
    RegisteredModel.objects.filter(pk=row.pk).update(onnx_dir=str(folder))
    forget_registry_rows()
    row.refresh_from_db()
    log.info("registered model %s exported to %s", row.slug, folder)
    return row


def queue_export(model: RegisteredModel) -> None:
    """Queue the export on the gpu queue once the current transaction commits."""
    from portal.celery import send_by_name

    transaction.on_commit(lambda: send_by_name("models_app.tasks.export_model", model.pk))
