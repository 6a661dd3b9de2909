"""The one evaluation path's text and rows: the held-out loader's sources and fallback, and the one row shape."""

import pytest

from eqlm.corpus import split
from eqlm.evaluate import COMMITTED, UNITS, committed_slice, heldout_text, record
from eqlm.model_files import KJV_SLICE


def test_the_slice_text_is_the_committed_kjv_slice():
    assert heldout_text("slice") == (KJV_SLICE.read_bytes(), COMMITTED)
    assert committed_slice() == KJV_SLICE.read_bytes()


def test_the_heldout_text_is_the_last_twentieth_of_the_corpus_it_loads():
    corpus = bytes(range(256)) * 8
    text, source = heldout_text("heldout", lambda: (corpus, "held-out slice of the test corpus"))
    assert text == split(corpus)[1] == corpus[int(len(corpus) * 0.95) :]
    assert source == "held-out slice of the test corpus"


def test_an_unavailable_corpus_falls_back_to_the_committed_slice_only_where_the_caller_allows():
    def missing():
        raise OSError("no corpus here")

    fallen_back = heldout_text("heldout", missing, "committed (corpus missing)")
    assert fallen_back == (committed_slice(), "committed (corpus missing)")
    with pytest.raises(OSError):
        heldout_text("heldout", missing)
    with pytest.raises(ValueError):
        heldout_text("whole", missing)


def test_a_row_carries_its_runs_fields_the_metric_its_unit_and_condition():
    base = {"run": "r", "experiment": "e", "n": 10}
    row = record(base, "heldout_bits_per_byte", 1.5, {"depth": 4}, n=7)
    assert row == {
        "run": "r",
        "experiment": "e",
        "n": 7,
        "metric": "heldout_bits_per_byte",
        "value": 1.5,
        "unit": "bits/byte",
        "condition": {"depth": 4},
    }
    assert record(base, "aa_cosine", 0.9, {})["n"] == 10
    assert set(UNITS) >= {"heldout_bits_per_byte", "mean_iterations", "blimp_accuracy", "flops_per_token"}
