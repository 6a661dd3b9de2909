"""Fuzzed and malformed files: each is refused with a clear error and leaves zero rows (>= 200 generated inputs).

The parsing/ingest service is called directly (not over HTTP) so hundreds of inputs run in seconds.
"""

import gzip
import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from benchmarks_app.parsers import IngestError
from benchmarks_app.uploads import ingest_bytes
from results.models import ResultRow, Run

from .factories import harness_b_bytes

pytestmark = pytest.mark.django_db
PER_STRATEGY = 25
FAST = settings(max_examples=PER_STRATEGY, deadline=None, suppress_health_check=list(HealthCheck), database=None)

VALID_SOURCES = {
    "scale/exp32/seed42.json": harness_b_bytes(),
    "exp13_seed42/budget_sweep.json": json.dumps(
        {"4": {"accuracy": 0.6, "num_correct": 600, "num_total": 1000}}
    ).encode(),
    "scale/exp31/exp31_seed43.json": json.dumps(
        {
            "eqlm_checkpoint": "results/exp13_seed43/checkpoints/B1.pt",
            "arms": {"explicit_fixed": {"blimp": 0.675, "mean_depth": 12.0}},
            "calibration": {"tolerance": 0.07},
            "tolerance_sweep": [{"tolerance": 0.14, "blimp": 0.63, "mean_depth": 6.0}],
        }  # fmt: skip
    ).encode(),
}
NUMERIC_FIELDS = ["blimp_accuracy", "final_loss", "num_params", "peak_memory_mb", "blimp_num_total"]


def refused(data: bytes, hint: str = "scale/exp32/seed42.json", **kwargs) -> IngestError:
    with pytest.raises(IngestError) as info:
        ingest_bytes(data, name=hint.rsplit("/", 1)[-1], path_hint=hint, **kwargs)
    message = info.value.message
    assert message and len(message) < 2000 and info.value.errors
    assert ResultRow.objects.count() == 0 and Run.objects.count() == 0
    return info.value


def test_generated_malformed_files_are_each_refused_and_leave_no_rows(settings):
    seen = []

    @FAST
    @given(source=st.sampled_from(sorted(VALID_SOURCES)), data=st.data())
    def truncated_json(source, data):
        raw = VALID_SOURCES[source]
        cut = data.draw(st.integers(min_value=1, max_value=len(raw) - 1))
        refused(raw[:cut], source)
        seen.append("truncated")

    @FAST
    @given(field=st.sampled_from(NUMERIC_FIELDS), value=st.one_of(
        st.text(max_size=20), st.lists(st.integers(), max_size=3), st.dictionaries(st.text(max_size=3), st.integers(),
        max_size=2), st.booleans()))  # fmt: skip
    def wrong_types(field, value):
        obj = json.loads(harness_b_bytes())
        obj["arms"]["C1"][field] = value
        if field == "blimp_num_total" and isinstance(value, str) and not value:
            obj["arms"]["C1"]["blimp_accuracy"] = "x"
        refused(json.dumps(obj).encode())
        seen.append("wrong type")

    @FAST
    @given(token=st.sampled_from(["NaN", "Infinity", "-Infinity", "1e400", "-1e999", "9" * 400 + ".0"]),
           field=st.sampled_from(["blimp_accuracy", "final_loss", "peak_memory_mb"]))  # fmt: skip
    def non_finite_numbers(token, field):
        obj = json.loads(harness_b_bytes())
        obj["arms"]["C1"][field] = "__TOKEN__"
        refused(json.dumps(obj).replace('"__TOKEN__"', token).encode())
        seen.append("non-finite")

    @FAST
    @given(digits=st.integers(min_value=19, max_value=6000), as_float=st.booleans(), big=st.floats(1e16, 1e300))
    def huge_numbers(digits, as_float, big):
        obj = json.loads(harness_b_bytes())
        obj["arms"]["C1"]["blimp_accuracy"] = "__TOKEN__"
        token = repr(big) if as_float else "1" + "0" * digits
        refused(json.dumps(obj).replace('"__TOKEN__"', token).encode())
        seen.append("huge")

    @FAST
    @given(depth=st.integers(min_value=65, max_value=20000), kind=st.sampled_from(["[]", "{}", "arms"]))
    def deep_nesting(depth, kind):
        if kind == "[]":
            text = "[" * depth + "]" * depth
        elif kind == "{}":
            text = '{"a":' * depth + "1" + "}" * depth
        else:
            text = '{"seed": 1, "arms": {"C1": ' + "[" * depth + "]" * depth + "}}"
        refused(text.encode())
        seen.append("deep")

    @FAST
    @given(prefix=st.binary(max_size=40), bad=st.sampled_from([b"\xff", b"\xc3\x28", b"\xe2\x82", b"\x80\x80"]))
    def non_utf8(prefix, bad):
        refused(prefix + bad + harness_b_bytes())
        seen.append("non-utf8")

    @FAST
    @given(suffix=st.sampled_from([".zip", ".gz", ".json.gz", ".tar.gz", ".bz2", ".xz"]), body=st.binary(max_size=64),
           compressed=st.booleans())  # fmt: skip
    def archives_by_name_or_magic(suffix, body, compressed):
        data = gzip.compress(harness_b_bytes()) if compressed else (body or b"PK\x03\x04bomb")
        refused(data, "uploads/bomb" + suffix)
        refused(gzip.compress(body + harness_b_bytes()), "scale/exp32/seed42.json")
        seen.append("archive")

    @FAST
    @given(text=st.text(max_size=200))
    def garbage_text(text):
        refused(text.encode("utf-8"), "uploads/unknown.txt")
        seen.append("garbage")

    @FAST
    @given(extra=st.integers(min_value=1, max_value=5000))
    def over_the_size_limit(extra):
        settings.UPLOAD_MAX_BYTES = 2000
        refused(harness_b_bytes() + b" " * extra + b" " * max(0, 2000 - len(harness_b_bytes())))
        seen.append("too large")

    for generated in (truncated_json, wrong_types, non_finite_numbers, huge_numbers, deep_nesting, non_utf8,
                      archives_by_name_or_magic, garbage_text, over_the_size_limit):  # fmt: skip
        generated()
    for empty in (b"", b"   \n\t"):
        refused(empty)
        seen.append("empty")
    assert len(seen) >= 200, len(seen)
    assert {
        "truncated",
        "wrong type",
        "non-finite",
        "huge",
        "deep",
        "non-utf8",
        "archive",
        "empty",
        "too large",
    } <= set(seen)
