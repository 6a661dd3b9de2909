"""BLiMP scoring: strict comparison with ties reported, per-paradigm and overall accuracy, the command."""

import math
from pathlib import Path

import pytest
from django.core.management import call_command

from eqlm.blimp import Pair, compare, load_pairs, summarize

FIXTURE = Path(__file__).parent / "fixtures" / "blimp"


def test_a_pair_counts_only_when_good_is_strictly_more_probable():
    assert compare(-1.0, -2.0) == "correct"
    assert compare(-2.0, -2.0) == "tie"
    assert compare(-3.0, -2.0) == "wrong"


def test_a_model_that_scores_every_sentence_equally_gets_no_credit():
    pairs = [Pair("p", str(i), "a", "b") for i in range(4)]
    summary = summarize(pairs, [0.0] * 4, [0.0] * 4)
    assert summary["overall"]["accuracy"] == 0.0
    assert summary["overall"]["ties"] == 4


def test_overall_accuracy_is_the_unweighted_mean_over_paradigms_with_standard_errors():
    pairs = [
        Pair("a", "0", "", ""),
        Pair("a", "1", "", ""),
        Pair("b", "0", "", ""),
        Pair("b", "1", "", ""),
        Pair("b", "2", "", ""),
        Pair("b", "3", "", ""),
    ]
    good = [1, 1, 1, 0, 0, 0]
    bad = [0, 0, 0, 1, 1, 1]
    summary = summarize(pairs, good, bad)
    assert summary["paradigms"]["a"]["accuracy"] == 1.0
    assert summary["paradigms"]["b"]["accuracy"] == 0.25
    assert summary["overall"]["accuracy"] == pytest.approx(0.625)
    assert summary["paradigms"]["b"]["se"] == pytest.approx(math.sqrt(0.25 * 0.75 / 4))
    assert summary["overall"]["se"] == pytest.approx(math.sqrt(0 + 0.25 * 0.75 / 4) / 2)


def test_pairs_load_by_paradigm_with_a_limit_and_unknown_names_are_refused():
    pairs = load_pairs(FIXTURE, ["determiner_noun_agreement_mini"], limit=2)
    assert [p.pair_id for p in pairs] == ["0", "1"]
    assert pairs[0].good == "This city was great."
    assert len(load_pairs(FIXTURE)) == 6
    with pytest.raises(ValueError, match="unknown paradigms"):
        load_pairs(FIXTURE, ["no_such_paradigm"])


def test_anytime_scores_come_from_one_pass_at_several_depths():
    import torch

    from eqlm.blimp import sentence_logprobs
    from eqlm.testing import tiny_model

    model = tiny_model()
    scores = sentence_logprobs(model, ["The men saw themselves.", "Amen."], [1, 4])
    assert set(scores) == {1, 4}
    with torch.no_grad():
        ids = torch.tensor([list(b"\nAmen.")])
        logp = torch.log_softmax(model.solve(ids[:, :-1], max_iter=4).logits[4].double(), -1)
        expected = logp.gather(-1, ids[:, 1:, None]).sum().item()
    assert scores[4][1] == pytest.approx(expected, abs=1e-6)
    assert scores[1][0] != scores[4][0]


@pytest.mark.django_db
def test_evaluate_blimp_command_records_a_run_and_result_rows(tmp_path, settings):
    from eqlm.checkpoint import save_checkpoint
    from eqlm.testing import tiny_model
    from models_app.models import EvaluationRun
    from results.models import ResultRow

    path = save_checkpoint(tiny_model(), tmp_path / "tiny.pt", {"seed": 0, "config_hash": "t", "git_commit": "c"})
    call_command("evaluate_blimp", checkpoint=str(path), depths="1,2", blimp_dir=str(FIXTURE), limit=2)
    run = EvaluationRun.objects.get()
    assert run.status == "done" and run.device == "cpu"
    assert set(run.results) == {"1", "2"}
    assert run.results["2"]["overall"]["n"] == 4
    rows = ResultRow.objects.filter(experiment="local", metric="blimp_accuracy")
    assert sorted(r.condition["depth"] for r in rows) == [1, 2]
    assert all(r.n == 4 for r in rows)
