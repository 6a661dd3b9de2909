"""A run trains in slices under its lease, resumes from its saved state, and writes its rows once (in-process)."""

import uuid
from pathlib import Path

import pytest

from experiments_app import services
from experiments_app.models import TrainingRun
from experiments_app.runs import acquire, run_folder
from experiments_app.training import run_slice
from results.models import ResultRow

from .factories import DEPTHS, tiny_experiment

pytestmark = [pytest.mark.slow, pytest.mark.django_db]


@pytest.fixture(autouse=True)
def own_media(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"  # run folders are named by row id, which SQLite reuses after a rollback


def sliced_to_the_end(experiment, capture, between=None) -> tuple[TrainingRun, list[str]]:
    """Launch the experiment and run its base arm's slices in this process until it finishes; `between(run, outcome)`
    sees each unfinished slice's outcome. Returns the run and the slices' outcomes."""
    with capture(execute=False):
        services.launch(experiment)
    run = TrainingRun.objects.get(arm_label="base")
    outcomes = []
    for number in range(20):
        outcomes.append(run_slice(run.pk, number, send_next=lambda number: None))
        run.refresh_from_db()
        if run.is_finished:
            break
        if between is not None:
            between(run, outcomes[-1])
    return run, outcomes


def test_a_run_trains_in_slices_then_writes_its_rows_once(settings, django_capture_on_commit_callbacks):
    settings.EXPERIMENT_SLICE_STEPS = 5  # the tiny recipe's stages of 8 and 4 steps in three slices
    experiment = tiny_experiment(seeds=[1])
    sent = []
    with django_capture_on_commit_callbacks(execute=False):
        services.launch(experiment)
    run = TrainingRun.objects.get(arm_label="base")
    slice_number, outcomes = 0, []
    while len(outcomes) < 50:
        outcomes.append(run_slice(run.pk, slice_number, send_next=lambda number: sent.append(number)))
        run.refresh_from_db()
        if run.is_finished:
            break
        slice_number += 1
    assert run.status == "done", run.error
    assert outcomes[-1] == "evaluated" and outcomes.count("trained") == 3 and len(sent) == len(outcomes) - 1
    assert run.stage_index == 1 and run.step == run.planned_steps == 4 and run.slices_run == len(outcomes) - 1
    folder = run_folder(run)
    assert folder.parent == Path(settings.MEDIA_ROOT) / "experiments" / "tiny"
    assert (folder / "first" / "latest.pt").exists() and run.checkpoint == str(folder / "second" / "latest.pt")
    rows = ResultRow.objects.filter(experiment="tiny", arm_label="base", seed=1)
    assert rows.count() == run.rows_written == len(DEPTHS) * 2
    row = rows.get(condition_key='{"depth":4,"seed":1,"start":"zero"}')
    assert row.arm.run.config_hash == run.recipe_hash and row.arm.recipe["corpus_sha256"]
    assert run_slice(run.pk, slice_number, None) == "finished"  # a redelivered last slice changes nothing
    assert run_slice(run.pk, 0, None) == "finished"
    assert rows.count() == len(DEPTHS) * 2


def test_a_stale_or_leased_slice_does_nothing(settings):
    settings.EXPERIMENT_LEASE_SECONDS = 1
    experiment = tiny_experiment(seeds=[1])
    run = TrainingRun.objects.create(experiment=experiment, arm_label="base", seed=1, arm_hash="x", slice_number=3)
    assert run_slice(run.pk, 2, None) == "stale"
    assert acquire(run.pk, 3, uuid.uuid4().hex)  # a live worker holds it and keeps renewing it
    assert not acquire(run.pk, 3, uuid.uuid4().hex)
    TrainingRun.objects.filter(pk=run.pk).update(slice_number=4)  # the holder moved on while a copy waited
    assert run_slice(run.pk, 3, None) == "stale"


def test_an_explicit_arm_is_measured_at_its_layer_count_only(django_capture_on_commit_callbacks):
    from .factories import TINY_RECIPE

    explicit = TINY_RECIPE.replace("tiny-experiment.toml", "tiny-explicit.toml")
    experiment = tiny_experiment(
        seeds=[1], arms=[{"label": "base", "recipe": explicit}, {"label": "fast", "recipe": TINY_RECIPE}]
    )
    run, _ = sliced_to_the_end(experiment, django_capture_on_commit_callbacks)
    run.refresh_from_db()
    assert run.status == "done", run.error
    rows = ResultRow.objects.filter(experiment="tiny", arm_label="base")
    assert [(r.condition, r.arm.model_family) for r in rows] == [
        ({"depth": 3, "start": "zero", "seed": 1}, "ExplicitLM")
    ]


def test_the_evaluation_is_path_independences_with_the_warm_start_and_the_aa_score(django_capture_on_commit_callbacks):
    from .factories import tiny_spec

    evaluation = tiny_spec()["evaluation"] | {
        "starts": ["zero", "noise", "warm"],
        "metrics": ["heldout_bits_per_byte", "aa_cosine", "greedy_agreement"],
    }
    experiment = tiny_experiment(seeds=[1], evaluation=evaluation)
    run, _ = sliced_to_the_end(experiment, django_capture_on_commit_callbacks)
    rows = ResultRow.objects.filter(experiment="tiny", arm_label="base", seed=1)
    assert rows.filter(metric="heldout_bits_per_byte").count() == 3 * len(DEPTHS)
    compared = rows.exclude(metric="heldout_bits_per_byte").values_list("metric", "condition_key")
    assert sorted(compared) == sorted(
        (metric, f'{{"depth":{DEPTHS[-1]},"seed":1,"start":"{start}"}}')
        for metric in ("aa_cosine", "greedy_agreement")
        for start in ("noise", "warm")
    )
    # the same numbers bench/depth_curve.py reports: eqlm.path_independence on the same windows and seed
    from eqlm.checkpoint import load_checkpoint
    from eqlm.convergence import windows_of
    from eqlm.model_files import KJV_SLICE as SLICE
    from eqlm.path_independence import path_independence

    run.refresh_from_db()
    model, _ = load_checkpoint(run.checkpoint)
    windows = windows_of(SLICE.read_bytes(), evaluation["window"], evaluation["windows"])
    figures = path_independence(model, windows, DEPTHS, ("zero", "noise", "warm"), seed=0)
    warm = rows.get(metric="aa_cosine", condition_key__contains='"warm"')
    assert warm.value == pytest.approx(figures.starts["warm"].aa_cosine, abs=1e-12)


def test_the_head_to_head_measures_blimp_flops_and_a_halting_rule_tuned_to_a_mean_depth(
    settings, django_capture_on_commit_callbacks
):
    from eqlm.flops import flops_per_token

    from .factories import tiny_spec

    evaluation = tiny_spec()["evaluation"] | {
        "metrics": ["heldout_bits_per_byte", "mean_iterations", "blimp_accuracy", "flops_per_token"],
        "budgets": [6],
        "halting_mean": 3,
        "blimp_pairs": 2,
    }
    experiment = tiny_experiment(seeds=[1], evaluation=evaluation)
    run, _ = sliced_to_the_end(experiment, django_capture_on_commit_callbacks)
    run.refresh_from_db()
    assert run.status == "done", run.error
    rows = ResultRow.objects.filter(experiment="tiny", arm_label="base", seed=1)
    paradigms = len(list(Path(settings.BLIMP_DIR).glob("*.jsonl")))
    blimp = rows.filter(metric="blimp_accuracy")
    assert blimp.count() == len(DEPTHS) + 1  # every depth, and under halting
    assert all(r.n == 2 * paradigms and 0 <= r.value <= 1 for r in blimp)
    halted = rows.get(metric="mean_iterations")
    assert halted.condition["halting_mean"] == 3.0 and halted.condition["budget"] == 6
    assert 0 < halted.condition["tol"] < 0.5  # the tuned tol, recorded beside the mean it reached
    from eqlm.checkpoint import load_checkpoint

    model, _ = load_checkpoint(run.checkpoint)
    config = model.config.to_dict()
    for depth in DEPTHS:
        row = rows.get(metric="flops_per_token", condition__depth=depth)
        assert row.value == flops_per_token("EqLM", config, depth)
    at_mean = rows.get(metric="flops_per_token", condition__budget=6)
    assert at_mean.value == pytest.approx(flops_per_token("EqLM", config, halted.value))


def test_an_evaluation_longer_than_its_slice_runs_in_parts_and_writes_one_passs_rows(
    settings, django_capture_on_commit_callbacks
):
    from eqlm.checkpoint import load_checkpoint
    from eqlm.convergence import TorchBackend, adaptive_point, windows_of
    from eqlm.model_files import KJV_SLICE as SLICE
    from eqlm.path_independence import path_independence
    from experiments_app.evaluation import PARTS_FILE

    from .factories import tiny_spec

    settings.EXPERIMENT_SLICE_SECONDS = 0  # every evaluation slice measures one part, then hands on
    settings.EXPERIMENT_EVAL_PART_WINDOWS = 10  # rounded up to whole batches of 16: parts of 16, 16 and 8 windows
    evaluation = tiny_spec()["evaluation"] | {
        "windows": 40,
        "starts": ["zero", "noise", "warm"],
        "metrics": ["heldout_bits_per_byte", "aa_cosine", "greedy_agreement", "mean_iterations"],
        "budgets": [8],
    }
    saved = []

    def between(run, outcome):
        saved.append((run_folder(run) / PARTS_FILE).exists())
        if outcome == "evaluating":
            assert run.progress_message.startswith("evaluating on the committed held-out slice")

    experiment = tiny_experiment(seeds=[1], evaluation=evaluation)
    run, outcomes = sliced_to_the_end(experiment, django_capture_on_commit_callbacks, between)
    assert run.status == "done", run.error
    assert outcomes[-3:] == ["evaluating", "evaluating", "evaluated"] and saved[-2:] == [True, True]
    assert not (run_folder(run) / PARTS_FILE).exists()  # the rows hold what the parts measured

    model, _ = load_checkpoint(run.checkpoint)
    windows = windows_of(SLICE.read_bytes(), evaluation["window"], evaluation["windows"])
    assert len(windows) == 40
    figures = path_independence(model, windows, DEPTHS, ("zero", "noise", "warm"), seed=0)  # one pass
    rows = ResultRow.objects.filter(experiment="tiny", arm_label="base", seed=1)
    for start, found in figures.starts.items():
        for depth, value in found.bits_per_byte.items():
            key = f'{{"depth":{depth},"seed":1,"start":"{start}"}}'
            assert rows.get(metric="heldout_bits_per_byte", condition_key=key).value == pytest.approx(value, rel=1e-9)
        if start != "zero":
            aa = rows.get(metric="aa_cosine", condition_key__contains=f'"{start}"').value
            assert aa == pytest.approx(found.aa_cosine, rel=1e-6)
    point = adaptive_point(TorchBackend(model, "cpu"), windows, experiment.evaluation["tol"], cap=8)
    halting = rows.get(metric="mean_iterations")
    assert halting.value == pytest.approx(point.mean_iterations, rel=1e-9) and halting.n == point.positions


def test_a_resumed_evaluation_starts_where_its_saved_figures_end_even_with_another_part_size(
    settings, django_capture_on_commit_callbacks
):
    from eqlm.checkpoint import load_checkpoint
    from eqlm.convergence import windows_of
    from eqlm.model_files import KJV_SLICE as SLICE
    from eqlm.path_independence import path_independence

    from .factories import tiny_spec

    settings.EXPERIMENT_SLICE_SECONDS = 0  # one part a slice
    settings.EXPERIMENT_EVAL_PART_WINDOWS = 16
    evaluation = tiny_spec()["evaluation"] | {"windows": 40, "starts": ["zero", "noise"], "budgets": []}
    evaluation["metrics"] = ["heldout_bits_per_byte", "aa_cosine"]

    def between(run, outcome):
        if outcome == "evaluating":
            settings.EXPERIMENT_EVAL_PART_WINDOWS = 32  # windows 0-15 are saved; the rest is one part of 24

    experiment = tiny_experiment(seeds=[1], evaluation=evaluation)
    run, outcomes = sliced_to_the_end(experiment, django_capture_on_commit_callbacks, between)
    assert run.status == "done", run.error
    assert outcomes[-2:] == ["evaluating", "evaluated"]

    model, _ = load_checkpoint(run.checkpoint)
    windows = windows_of(SLICE.read_bytes(), evaluation["window"], evaluation["windows"])
    figures = path_independence(model, windows, DEPTHS, ("zero", "noise"), seed=0)  # one pass
    rows = ResultRow.objects.filter(experiment="tiny", arm_label="base", seed=1, metric="heldout_bits_per_byte")
    assert rows.count() == 2 * len(DEPTHS)
    for start, found in figures.starts.items():
        for depth, value in found.bits_per_byte.items():
            key = f'{{"depth":{depth},"seed":1,"start":"{start}"}}'
            assert rows.get(condition_key=key).value == pytest.approx(value, rel=1e-9)
    aa = ResultRow.objects.get(experiment="tiny", metric="aa_cosine").value
    assert aa == pytest.approx(figures.starts["noise"].aa_cosine, rel=1e-6)


def test_blimp_runs_in_timed_parts_of_its_own_after_the_windows_and_scores_what_one_pass_scores(
    settings, django_capture_on_commit_callbacks
):
    import torch

    from eqlm.blimp import evaluate, load_pairs, sentence_logprobs, summarize
    from eqlm.checkpoint import load_checkpoint
    from experiments_app.evaluation import BLIMP_PART_SENTENCES, PARTS_FILE

    from .factories import tiny_spec

    settings.EXPERIMENT_SLICE_SECONDS = 0  # every evaluation slice measures one part, then hands on
    evaluation = tiny_spec()["evaluation"] | {
        "metrics": ["heldout_bits_per_byte", "mean_iterations", "blimp_accuracy"],
        "budgets": [6],
        "blimp_pairs": 2,
    }
    pairs = load_pairs(Path(settings.BLIMP_DIR), None, 2)
    assert BLIMP_PART_SENTENCES < 2 * len(pairs) <= 2 * BLIMP_PART_SENTENCES  # BLiMP takes two parts

    def between(run, outcome):
        if outcome == "evaluating":
            saved = torch.load(run_folder(run) / PARTS_FILE, weights_only=True)
            scored = {len(scores) for scores in saved["blimp"].values()}
            assert scored <= {BLIMP_PART_SENTENCES}  # the windows' one part (none yet), then BLiMP's first part

    experiment = tiny_experiment(seeds=[1], evaluation=evaluation)
    run, outcomes = sliced_to_the_end(experiment, django_capture_on_commit_callbacks, between)
    assert run.status == "done", run.error
    assert outcomes[-3:] == ["evaluating", "evaluating", "evaluated"]

    model, _ = load_checkpoint(run.checkpoint)
    rows = ResultRow.objects.filter(experiment="tiny", arm_label="base", seed=1, metric="blimp_accuracy")
    for depth, summary in evaluate(model, pairs, DEPTHS).items():  # one pass, at every depth
        row = rows.get(condition__depth=depth)
        assert row.value == summary["overall"]["accuracy"] and row.n == summary["overall"]["n"]
    tol = rows.get(condition__budget=6).condition["tol"]
    sentences = [p.good for p in pairs] + [p.bad for p in pairs]
    halted = sentence_logprobs(model, sentences, [6], tol=tol)[6]
    expected = summarize(pairs, halted[: len(pairs)], halted[len(pairs) :])["overall"]["accuracy"]
    assert rows.get(condition__budget=6).value == expected
