"""Hostile input by class, for every operation of /api/schema/ and every route of the URLconf.

Classes (issue 17): invalid Unicode (lone surrogates in JSON strings and keys, invalid UTF-8 and NUL in bodies,
query strings and form fields), huge numbers (10**400, beyond a double), deep nesting, oversize bodies. Each
answer must keep the portal's promises: never a 5xx, API errors in the error shape, refusals fast and before
anything is written, and no job row left `queued` or `running` once the request has ended.
Used by tests/test_input_classes.py (a few examples) and scripts/reliability.py (many: `--hostile-examples`).
"""

from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass, field
from urllib.parse import quote

from django.urls import URLPattern, URLResolver, get_resolver
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from .fuzzing import SAFE_TEXT, Operation, mutated, problem_with

CLASSES = ("surrogate", "invalid_utf8", "nul", "huge_number", "deep_nesting", "oversize")
REFUSED_AS_ENCODING = {"surrogate", "invalid_utf8", "nul"}
FAST_SECONDS = 2.0  # a refusal is answered before any work; generous for a shared 2-core machine
HUGE_NUMBERS = [10**400, -(10**400), 2**64, -(2**63) - 1, 10**4000]
LONE_SURROGATES = st.integers(0xD800, 0xDFFF).map(chr)
SURROGATE_TEXT = st.tuples(SAFE_TEXT, LONE_SURROGATES, SAFE_TEXT).map("".join)
INVALID_UTF8 = st.sampled_from([b"\xff", b"\xc3\x28", b"\xed\xa0\x80", b"\xe2\x82", b"\x80abc", b"\xf8\x88\x80\x80"])


@dataclass
class Attempt:
    """One hostile request: its class, how it is sent, and what a correct answer is."""

    kind: str
    method: str
    path: str
    body: bytes | None = None
    content_type: str = "application/json"
    query: str = ""


@dataclass
class ClassOutcome:
    target: str
    tried: dict[str, int] = field(default_factory=dict)
    failures: list[str] = field(default_factory=list)


def tried_by_kind(outcomes: list[ClassOutcome]) -> dict[str, int]:
    """How many inputs of each class the outcomes tried, summed over their targets."""
    tried: dict[str, int] = {}
    for outcome in outcomes:
        for kind, count in outcome.tried.items():
            tried[kind] = tried.get(kind, 0) + count
    return tried


def unfinished_jobs() -> list[str]:
    """Every job row (any model built on portal.models.Job) still queued or running."""
    from django.apps import apps

    from portal.models import Job

    left = []
    for model in apps.get_models():
        if issubclass(model, Job):
            for pk, status in model.objects.filter(status__in=["queued", "running"]).values_list("pk", "status"):
                left.append(f"{model.__name__} #{pk} {status}")
    return left


def row_counts() -> dict[str, int]:
    """Rows per model of the portal's own apps: a refused request must leave these unchanged."""
    from django.apps import apps

    own = {"findings_app", "results", "benchmarks_app", "lab_app", "models_app", "inference", "council_app", "portal"}
    return {m._meta.label: m.objects.count() for m in apps.get_models() if m._meta.app_label in own}


def media_files() -> set[str]:
    from pathlib import Path

    from django.conf import settings as django_settings

    root = Path(django_settings.MEDIA_ROOT)
    return {str(p.relative_to(root)) for p in root.rglob("*") if p.is_file()} if root.exists() else set()


# --- strategies -------------------------------------------------------------------------------------------


def poisoned(value, text_strategy):
    """A copy of a JSON value with one string (a value, or a key when there are no strings) replaced."""

    @st.composite
    def build(draw):
        copy = json.loads(json.dumps(value))
        holders = []

        def walk(node):
            if isinstance(node, dict):
                for key, child in node.items():
                    if isinstance(child, str):
                        holders.append((node, key))
                    walk(child)
            elif isinstance(node, list):
                for index, child in enumerate(node):
                    if isinstance(child, str):
                        holders.append((node, index))
                    walk(child)

        walk(copy)
        bad = draw(text_strategy)
        if holders and draw(st.booleans()):
            parent, key = draw(st.sampled_from(holders))
            parent[key] = bad
            return copy
        if isinstance(copy, dict):
            copy[bad] = draw(SAFE_TEXT)  # a bad key
            return copy
        return {bad: copy}

    return build()


def escaped(value) -> str:
    """JSON text with every non-ASCII character escaped (so lone surrogates travel as `\\udXXX` escapes)."""
    return json.dumps(value, ensure_ascii=True, allow_nan=True)


def json_bodies(examples: list, limit: int) -> dict[str, st.SearchStrategy[bytes]]:
    """Raw JSON bodies by class, built from an operation's documented examples (or `{}`)."""
    bases = st.sampled_from(examples or [{}])
    surrogate = bases.flatmap(lambda base: poisoned(base, SURROGATE_TEXT)).map(lambda v: escaped(v).encode())
    nul = bases.flatmap(lambda base: poisoned(base, SAFE_TEXT.map(lambda s: s + "\x00"))).map(
        lambda v: escaped(v).encode()
    )
    invalid = st.tuples(bases, INVALID_UTF8).map(
        lambda pair: escaped(pair[0]).replace('"', '"' + pair[1].decode("latin-1"), 1).encode("latin-1")
        if '"' in escaped(pair[0])
        else b'{"x": "' + pair[1] + b'"}'
    )
    huge = bases.flatmap(lambda base: mutated(base, st.sampled_from(HUGE_NUMBERS))).map(
        lambda v: json.dumps(v).encode()
    )
    deep = st.integers(200, 50_000).map(lambda depth: ("[" * depth + "]" * depth).encode())
    deep_inside = st.tuples(bases, st.integers(200, 5_000)).map(
        lambda pair: json.dumps({**pair[0], "nested": 0} if isinstance(pair[0], dict) else pair[0])
        .replace('"nested": 0', '"nested": ' + "[" * pair[1] + "]" * pair[1])
        .encode()
    )
    oversize = st.sampled_from([limit + 1, 2 * limit]).map(lambda size: b'{"x": "' + b"a" * size + b'"}')
    return {
        "surrogate": surrogate,
        "invalid_utf8": invalid,
        "nul": nul,
        "huge_number": huge,
        "deep_nesting": st.one_of(deep, deep_inside),
        "oversize": oversize,
    }


def bad_query_strings() -> dict[str, st.SearchStrategy[str]]:
    """Query strings by class: percent-escaped invalid UTF-8, CESU surrogates, NUL; huge numbers (must not 5xx)."""
    name = st.sampled_from(["q", "page", "seed", "experiment", "metric", "format", "treatment", "x"])
    encoding = st.tuples(name, SAFE_TEXT, INVALID_UTF8).map(
        lambda t: f"{t[0]}={quote(t[1])}{''.join(f'%{b:02X}' for b in t[2])}"
    )
    surrogate = st.tuples(name, LONE_SURROGATES).map(
        lambda t: f"{t[0]}=" + "".join(f"%{b:02X}" for b in t[1].encode("utf-8", "surrogatepass"))
    )
    nul = name.map(lambda n: f"{n}=a%00b")
    huge = st.tuples(name, st.sampled_from(HUGE_NUMBERS)).map(lambda t: f"{t[0]}={t[1]}")
    return {"invalid_utf8": encoding, "surrogate": surrogate, "nul": nul, "huge_number": huge}


def bad_form_bodies() -> dict[str, st.SearchStrategy[bytes]]:
    """Urlencoded bodies by class for form posts: escaped or raw invalid UTF-8, CESU surrogates, NUL."""
    name = st.sampled_from(["username", "password", "text", "q", "paths", "format", "name"])
    escaped = st.tuples(name, INVALID_UTF8).map(lambda t: f"{t[0]}=a{''.join(f'%{b:02X}' for b in t[1])}".encode())
    raw = st.tuples(name, INVALID_UTF8).map(lambda t: t[0].encode() + b"=a" + t[1])
    surrogate = st.tuples(name, LONE_SURROGATES).map(
        lambda t: (f"{t[0]}=" + "".join(f"%{b:02X}" for b in t[1].encode("utf-8", "surrogatepass"))).encode()
    )
    nul = name.map(lambda n: f"{n}=a%00b".encode())
    return {"invalid_utf8": st.one_of(escaped, raw), "surrogate": surrogate, "nul": nul}


MULTIPART_BOUNDARY = "hostile-boundary-7e3f"
# a multipart POST that a route does not take at all: refused by method, media type, sign-in or permission
NOT_TAKEN = {401, 403, 404, 405, 415}


def _multipart(parts: list[tuple[bytes, bytes | None, bytes]]) -> bytes:
    """A multipart/form-data body from (field name, file name or None, value) as raw bytes."""
    out = b""
    for name, filename, value in parts:
        disposition = b'form-data; name="' + name + b'"' + (b'; filename="' + filename + b'"' if filename else b"")
        out += b"--" + MULTIPART_BOUNDARY.encode() + b"\r\nContent-Disposition: " + disposition + b"\r\n"
        if filename:
            out += b"Content-Type: application/json\r\n"
        out += b"\r\n" + value + b"\r\n"
    return out + b"--" + MULTIPART_BOUNDARY.encode() + b"--\r\n"


def bad_multipart_bodies() -> dict[str, st.SearchStrategy[bytes]]:
    """Multipart bodies whose field value, field name or file name is not UTF-8 (the file itself is fine)."""
    name = st.sampled_from([b"username", b"text", b"paths", b"path", b"format", b"name", b"model_id"])
    value = st.tuples(name, INVALID_UTF8).map(lambda t: _multipart([(t[0], None, b"a" + t[1] + b"b")]))
    field_name = INVALID_UTF8.map(lambda bad: _multipart([(b"x" + bad, None, b"value")]))
    file_name = INVALID_UTF8.map(lambda bad: _multipart([(b"file", b"r" + bad + b".json", b"{}")]))
    return {"invalid_utf8": st.one_of(value, field_name, file_name)}


# --- targets ---------------------------------------------------------------------------------------------


def route_paths() -> list[str]:
    """One concrete path per route of the URLconf (converters filled with a sample value)."""
    samples = {"int": "1", "slug": "x", "str": "x", "path": "x", "uuid": "00000000-0000-0000-0000-000000000000"}
    found = []

    def walk(patterns, prefix):
        for entry in patterns:
            if isinstance(entry, URLResolver):
                walk(entry.url_patterns, prefix + _concrete(entry.pattern, samples))
            elif isinstance(entry, URLPattern):
                found.append("/" + prefix + _concrete(entry.pattern, samples))

    walk(get_resolver().url_patterns, "")
    concrete = []
    for path in dict.fromkeys(found):
        if "(?" in path or "\\" in path or "^" in path or "$" in path:
            continue  # a regex route (the admin's catch-alls): covered by the concrete admin routes
        concrete.append(path)
    return concrete


_CONVERTER = re.compile(r"<(?:(?P<kind>\w+):)?(?P<name>\w+)>")


def _concrete(pattern, samples: dict) -> str:
    return _CONVERTER.sub(lambda m: samples.get(m.group("kind") or "str", "x"), str(pattern))


def operation_path(op: Operation, hints: dict) -> str:
    path = op.path
    for parameter in op.spec.get("parameters", []):
        if parameter["in"] == "path":
            value = (hints.get(parameter["name"]) or ["1"])[0]
            path = path.replace("{" + parameter["name"] + "}", quote(str(value), safe=""))
    return path


def json_examples(op: Operation, hints: dict) -> list:
    media, content = op.body_content
    if media != "application/json":
        return []
    examples = [example["value"] for example in content.get("examples", {}).values() if "value" in example]
    return examples + list(hints.get(f"{op.name} body", []))


# --- checking ---------------------------------------------------------------------------------------------


def judge(kind: str, response, seconds: float, *, api: bool, before: dict | None, after: dict | None) -> str | None:
    """None when the answer to one hostile request keeps every promise, else what broke."""
    status = response.status_code
    if status >= 500:
        return f"{kind}: answered {status}"
    if api:
        problem = problem_with(response)
        if problem:
            return f"{kind}: {problem}"
    if kind in REFUSED_AS_ENCODING and status != 400:
        return f"{kind}: answered {status}, not 400"
    if kind == "oversize" and status != 413:
        return f"{kind}: answered {status}, not 413"
    if status in (400, 413) and kind in REFUSED_AS_ENCODING | {"oversize"}:
        if seconds > FAST_SECONDS:
            return f"{kind}: refused after {seconds:.2f} s"
        if before is not None and after != before:
            changed = {k: (before.get(k), after.get(k)) for k in after if before.get(k) != after.get(k)}
            return f"{kind}: refused but rows changed {changed}"
    left = unfinished_jobs()
    if left:
        return f"{kind}: job rows left unfinished: {left[:3]}"
    return None


def send_raw(client, method: str, path: str, body: bytes | None, content_type: str, query: str = ""):
    """Send one request; callbacks queued on commit (a job's task) run, as they would after a real request."""
    from django.test import TestCase

    url = path + ("?" + query if query else "")
    with TestCase.captureOnCommitCallbacks(execute=True):
        if method == "get":
            return client.get(url)
        return client.generic(method.upper(), url, body or b"", content_type=content_type)


def run_strategies(strategies: dict, max_examples: int, check) -> None:
    """Draw `max_examples` inputs of every class and check each answer."""
    for kind, strategy in strategies.items():
        _run_one(strategy.map(lambda value, kind=kind: (kind, value)), max_examples, check)


def _run_one(strategy, max_examples: int, check) -> None:
    @settings(
        max_examples=max_examples,
        deadline=None,
        database=None,
        derandomize=True,
        suppress_health_check=list(HealthCheck),
        print_blob=False,
    )
    @given(strategy)
    def go(drawn):
        check(drawn)

    go()


def attack_operation(op: Operation, client, hints: dict, max_examples: int, *, track_rows: bool = True):
    """Hostile query strings on every operation; hostile JSON bodies on every operation that takes JSON."""
    from django.conf import settings as django_settings

    outcome = ClassOutcome(op.name)
    path = operation_path(op, hints)
    media, _ = op.body_content

    def record(kind: str, problem: str | None):
        outcome.tried[kind] = outcome.tried.get(kind, 0) + 1
        if problem and len(outcome.failures) < 5:
            outcome.failures.append(f"{op.name}: {problem}")

    def query_check(drawn):
        kind, query = drawn
        before = row_counts() if track_rows and kind in REFUSED_AS_ENCODING else None
        started = time.monotonic()
        body = json.dumps((json_examples(op, hints) or [{}])[0]).encode() if op.method != "get" else None
        content_type = media if media == "application/json" else "application/json"
        response = send_raw(client, op.method, path, body, content_type, query)
        seconds = time.monotonic() - started
        after = row_counts() if before is not None and response.status_code == 400 else before
        record(kind, judge(kind, response, seconds, api=True, before=before, after=after))

    run_strategies(bad_query_strings(), max_examples, query_check)
    if media == "application/json" or (op.method != "get" and media is None):
        limit = _body_limit(path) or django_settings.API_MAX_BODY_BYTES

        def body_check(drawn):
            kind, body = drawn
            before = row_counts() if track_rows and kind in REFUSED_AS_ENCODING | {"oversize"} else None
            started = time.monotonic()
            response = send_raw(client, op.method, path, body, "application/json")
            seconds = time.monotonic() - started
            after = row_counts() if before is not None and response.status_code in (400, 413) else before
            record(kind, judge(kind, response, seconds, api=True, before=before, after=after))

        run_strategies(json_bodies(json_examples(op, hints), limit), max_examples, body_check)
    return outcome


def _body_limit(path: str) -> int | None:
    from django.urls import Resolver404
    from django.urls import resolve as resolve_url

    from portal.middleware import view_body_limit

    try:
        match = resolve_url(path)
    except Resolver404:
        return None
    return view_body_limit(match.func)


def attack_route(path: str, client, max_examples: int, *, track_rows: bool = True, csrf_client=None) -> ClassOutcome:
    """Hostile query strings (GET) and form bodies (POST, urlencoded and multipart) on one route of the URLconf.

    Multipart bodies go through `csrf_client` (one that enforces CSRF, as a browser meets it), so that every route
    reads the form: in the CSRF check, or in the view of a route exempt from it.
    """
    outcome = ClassOutcome(path)
    api = path.startswith(("/api/", "/v1/"))

    def record(kind: str, problem: str | None):
        outcome.tried[kind] = outcome.tried.get(kind, 0) + 1
        if problem and len(outcome.failures) < 5:
            outcome.failures.append(f"{path}: {problem}")

    def query_check(drawn):
        kind, query = drawn
        started = time.monotonic()
        response = send_raw(client, "get", path, None, "", query)
        record(kind, judge(kind, response, time.monotonic() - started, api=api, before=None, after=None))

    def form_check(drawn):
        kind, body = drawn
        before = row_counts() if track_rows else None
        started = time.monotonic()
        response = send_raw(client, "post", path, body, "application/x-www-form-urlencoded")
        seconds = time.monotonic() - started
        after = row_counts() if before is not None and response.status_code == 400 else before
        record(kind, judge(kind, response, seconds, api=api, before=before, after=after))

    def multipart_check(drawn):
        kind, body = drawn
        before = row_counts() if track_rows else None
        media_before = media_files()
        started = time.monotonic()
        content_type = f"multipart/form-data; boundary={MULTIPART_BOUNDARY}"
        response = send_raw(csrf_client or client, "post", path, body, content_type)
        seconds = time.monotonic() - started
        after = row_counts() if before is not None and response.status_code == 400 else before
        problem = None
        if response.status_code not in NOT_TAKEN:  # a route that takes the form must refuse the text, not store it
            problem = judge(kind, response, seconds, api=api, before=before, after=after)
        elif response.status_code >= 500 or (api and problem_with(response)):
            problem = judge(kind, response, seconds, api=api, before=None, after=None)
        if not problem and media_files() != media_before:
            problem = f"multipart {kind}: refused ({response.status_code}) but left files in media"
        record(f"multipart_{kind}", problem and f"multipart {problem}")

    run_strategies(bad_query_strings(), max_examples, query_check)
    run_strategies(bad_form_bodies(), max_examples, form_check)
    run_strategies(bad_multipart_bodies(), max_examples, multipart_check)
    return outcome
