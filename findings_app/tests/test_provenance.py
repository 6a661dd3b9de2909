"""Normalising the record's experiment and provenance strings (pure, no database)."""

import pytest

from findings_app.provenance import (
    benchmark_runs_url,
    normalise_experiment,
    normalise_reference,
)


@pytest.mark.parametrize(
    ("recorded", "code", "note"),
    [
        ("exp01 (exp01_mmd_vs_gda, iteration 2)", "exp01", "exp01_mmd_vs_gda, iteration 2"),
        ("exp03_deq_solvers", "exp03", ""),
        ("exp02_qre_homotopy (iteration 3)", "exp02", "iteration 3"),
        ("exp05_full_v4_s43", "exp05_full_v4", "seed 43"),
        ("exp13_seed42", "exp13", "seed 42"),
        ("exp06b", "exp06b", ""),
        ("exp10 (exp10_5090 seeds 42/43/44)", "exp10_5090", "exp10_5090 seeds 42/43/44"),
        ("exp10 (control)", "exp10", "control"),
        ("exp27 (over exp23 candidates)", "exp27", "over exp23 candidates"),
    ],
)
def test_experiment_strings_become_a_code_and_a_note(recorded, code, note):
    parsed = normalise_experiment(recorded)
    assert (parsed.code, parsed.note, parsed.recorded_as) == (code, note, recorded)


@pytest.mark.parametrize(
    "recorded", ["damage sweep (results/scale/damage_sweep.json)", "SPEC 0017 confirmation (seeds 45-47)"]
)
def test_an_entry_that_names_no_experiment_code_gets_no_code(recorded):
    parsed = normalise_experiment(recorded)
    assert parsed.code == "" and parsed.note == recorded


def test_other_provenance_keeps_its_code_and_aside():
    cases = [
        ("RQ-6 (Tier A)", "RQ-6", "Tier A"),
        ("SPEC 0017 (Amendment 1)", "SPEC 0017", "Amendment 1"),
        ("H1′a", "H1′a", ""),
    ]
    for recorded, code, note in cases:
        parsed = normalise_reference(recorded)
        assert (parsed.code, parsed.note) == (code, note)


def test_a_truncated_hash_keeps_its_prefix_and_says_so():
    parsed = normalise_reference("e1c1efdd…")
    assert (parsed.code, parsed.note, parsed.recorded_as) == ("e1c1efdd", "truncated in the record", "e1c1efdd…")


def test_benchmark_runs_link_is_a_plain_url_with_the_code():
    assert benchmark_runs_url("exp10_5090") == "/benchmarks/runs/?experiment=exp10_5090"
