"""Hostile result files by class (issue 17) on every upload operation of /api/schema/: each must end as a row-level
ingest error, leave no file in media and no job row unfinished. Used by tests/test_upload_input_classes.py."""

from __future__ import annotations

import json

from hypothesis import strategies as st

from .fuzzing import SAFE_TEXT, Operation, mutated, problem_with
from .hostile import (
    HUGE_NUMBERS,
    INVALID_UTF8,
    SURROGATE_TEXT,
    ClassOutcome,
    escaped,
    media_files,
    poisoned,
    run_strategies,
    unfinished_jobs,
)


def hostile_files(sample: bytes) -> dict[str, st.SearchStrategy[bytes]]:
    """Result files by class, built from a real sample file: every one must end as a row-level ingest error."""
    base = json.loads(sample)
    surrogate = poisoned(base, SURROGATE_TEXT).map(lambda v: escaped(v).encode())
    nul = poisoned(base, SAFE_TEXT.map(lambda s: s + "\x00")).map(lambda v: escaped(v).encode())
    invalid = INVALID_UTF8.map(lambda bad: sample.replace(b'"', b'"' + bad, 1))
    huge = mutated(base, st.sampled_from(HUGE_NUMBERS)).map(lambda v: json.dumps(v).encode())
    deep = st.integers(200, 5_000).map(lambda depth: b'{"experiment": ' + b"[" * depth + b"]" * depth + b"}")
    return {"surrogate": surrogate, "nul": nul, "invalid_utf8": invalid, "huge_number": huge, "deep_nesting": deep}


def upload_field(op: Operation) -> str | None:
    media, content = op.body_content
    if media != "multipart/form-data":
        return None
    from .fuzzing import resolve

    schema = resolve(content.get("schema", {}), op.components)
    for name, prop in schema.get("properties", {}).items():
        prop = resolve(prop, op.components)
        items = resolve(prop.get("items", {}), op.components)
        if prop.get("format") == "binary" or items.get("format") == "binary":
            return name
    return None


def attack_uploads(op: Operation, client, hints: dict, max_examples: int) -> ClassOutcome:
    """Hostile files on an upload operation: no 5xx, no row left unfinished, a refused file keeps nothing in
    media, and the same bytes uploaded again are tried again (a failed upload is not a duplicate)."""
    import io

    from django.test import TestCase

    outcome = ClassOutcome(op.name)
    name = upload_field(op)
    sample = (hints.get("upload samples") or [b"{}"])[0]

    def post(data: bytes):
        handle = io.BytesIO(data)
        handle.name = "results.json"
        with TestCase.captureOnCommitCallbacks(execute=True):
            return client.post(op.path, {name: [handle]})

    def check(drawn):
        kind, data = drawn
        outcome.tried[kind] = outcome.tried.get(kind, 0) + 1
        before = media_files()
        response = post(data)
        problem = None
        if response.status_code >= 500:
            problem = f"answered {response.status_code}"
        elif response.status_code >= 400:
            problem = problem_with(response)
            if not problem and media_files() != before:
                problem = f"refused ({response.status_code}) but left files in media"
        else:
            problem = _check_upload_answer(response, before, post, data)
        left = unfinished_jobs()
        problem = problem or (f"job rows left unfinished: {left[:3]}" if left else None)
        if problem and len(outcome.failures) < 5:
            outcome.failures.append(f"{op.name}: {kind}: {problem}")

    if name:
        run_strategies(hostile_files(sample), max_examples, check)
    return outcome


def _check_upload_answer(response, media_before: set[str], post, data: bytes) -> str | None:
    body = response.json()
    uploads = body.get("uploads") if isinstance(body, dict) else None
    if not isinstance(uploads, list):
        return None  # not a batch upload (a model registration answers its own shape)
    from results.models import SourceFile

    for item in uploads:
        row = SourceFile.objects.get(pk=item["id"])
        if item["status"] != row.status:
            return f"answered status {item['status']!r} while the row is {row.status!r}"
        if row.status == "failed":
            if row.file or row.companion or media_files() - media_before:
                return "a refused file was kept in media"
            if not row.errors:
                return "failed without a row-level error"
            again = post(data).json()["uploads"][0]
            if again["duplicate"]:
                return "uploading a failed file again answered duplicate: true"
    return None
