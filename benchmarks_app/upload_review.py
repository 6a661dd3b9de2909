"""Before an upload adds rows to one of the programme's experiments, the staff page asks first, naming the tables
it would change; the files wait in media under a one-time token until the uploader confirms or cancels. A hold
that is neither confirmed nor cancelled (the uploader left the page) expires after HOLD_TTL_S: a later upload's hold
removes it, and its token is refused.

Only the programme's record is guarded: the tables that recompute its published figures. Rows of the portal's own
experiments (local, local-council, depth-curve, ...) go straight in, as before.
"""

from __future__ import annotations

import base64
import json
import secrets
from datetime import timedelta

from django.core.files.base import ContentFile
from django.core.files.storage import default_storage
from django.utils import timezone

from results.experiment_names import resolve

from .models import Comparison
from .parsers import IngestError, parse_bytes

PENDING_DIR = "benchmarks/pending"
HOLD_TTL_S = 24 * 3600  # how long held files wait for the uploader's answer


def experiments_in(paired: list[tuple[str, bytes, bytes | None]], fmt: str = "") -> set[str]:
    """The experiments the files' rows would land in (a file that does not parse adds none; its ingest says why)."""
    found = set()
    for hint, data, companion in paired:
        try:
            parsed = parse_bytes(data, name=hint, path_hint=hint, fmt=fmt, companion=companion)
        except (IngestError, ValueError):
            continue
        found |= {r.get("experiment") for r in parsed.records if isinstance(r, dict) and r.get("experiment")}
    return found


def programme_tables_changed(experiments: set[str]) -> list[dict]:
    """The programme's tables (those with published figures) that read any of these experiments' rows."""
    from .overview import is_portal_table

    out = []
    for comparison in Comparison.objects.all():
        read = {comparison.treatment_experiment, comparison.baseline_experiment, *_spec_experiments(comparison)}
        read.discard("")
        hit = sorted(e for e in experiments if e in read or any(e in resolve(name, [e]) for name in read))
        body = {"kind": comparison.kind, "slug": comparison.slug}
        if hit and comparison.published and not is_portal_table(body):
            out.append({"slug": comparison.slug, "title": comparison.title, "experiments": hit})
    return out


def _spec_experiments(comparison: Comparison) -> set[str]:
    spec = comparison.spec or {}
    return {value for key, value in spec.items() if key.endswith("experiment") and isinstance(value, str)}


def hold(paired: list[tuple[str, bytes, bytes | None]], fmt: str, user_id: int) -> str:
    """Keep the files under a new token until the uploader confirms; returns the token. Expired holds go first."""
    sweep_expired()
    token = secrets.token_urlsafe(16)
    manifest = {
        "user": user_id,
        "format": fmt,
        "files": [
            {
                "hint": hint,
                "data": base64.b64encode(data).decode(),
                "companion": base64.b64encode(companion).decode() if companion else None,
            }
            for hint, data, companion in paired
        ],
    }
    default_storage.save(f"{PENDING_DIR}/{token}.json", ContentFile(json.dumps(manifest).encode()))
    return token


def release(token: str, user_id: int) -> tuple[list[tuple[str, bytes, bytes | None]], str] | None:
    """The held files and format for this uploader (None when the token is unknown or another user's); the hold is
    removed either way, so a token works once."""
    if not token or not token.replace("-", "").replace("_", "").isalnum():
        return None
    path = f"{PENDING_DIR}/{token}.json"
    if not default_storage.exists(path):
        return None
    if _expired(path):
        default_storage.delete(path)
        return None
    with default_storage.open(path) as handle:
        manifest = json.loads(handle.read())
    default_storage.delete(path)
    if manifest.get("user") != user_id:
        return None
    paired = [
        (f["hint"], base64.b64decode(f["data"]), base64.b64decode(f["companion"]) if f["companion"] else None)
        for f in manifest["files"]
    ]
    return paired, manifest.get("format", "")


def discard(token: str) -> None:
    if token and token.replace("-", "").replace("_", "").isalnum():
        path = f"{PENDING_DIR}/{token}.json"
        if default_storage.exists(path):
            default_storage.delete(path)


def _expired(path: str) -> bool:
    return timezone.now() - default_storage.get_modified_time(path) > timedelta(seconds=HOLD_TTL_S)


def sweep_expired() -> None:
    """Remove the holds older than HOLD_TTL_S (uploads never confirmed or cancelled)."""
    try:
        _, names = default_storage.listdir(PENDING_DIR)
    except FileNotFoundError:  # no hold yet
        return
    for name in names:
        path = f"{PENDING_DIR}/{name}"
        if name.endswith(".json") and _expired(path):
            default_storage.delete(path)
