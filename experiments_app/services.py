"""Experiments: register, edit until launched, launch (one training run per arm and seed), cancel, and read back
their figures and verdict from the result rows.

Result rows are results.ResultRow (experiment = the slug, arm = the arm's label, condition {depth, start,
seed} or {budget, tol, start, seed}); their unique constraints make a rewrite of a row a no-op.
"""

from __future__ import annotations

from django.db import transaction
from django.utils import timezone

from portal.models import JobStatus
from results import stats
from results.models import ResultRow

from . import amendments
from . import criterion as criteria
from .judgement import judge
from .models import CANCELLED, FROZEN_FIELDS, Experiment, TrainingRun
from .spec import (
    SpecError,
    normalize_arms,
    normalize_evaluation,
    normalize_seeds,
    registration_hash,
)

EDITABLE = ("title", "notes", "summary", *FROZEN_FIELDS)


class Frozen(Exception):
    """The experiment has started: its registered fields cannot change (answered 409)."""

    def __init__(self, experiment: Experiment, fields: list[str]):
        super().__init__(
            f"{experiment.slug} was launched at {experiment.launched_at:%Y-%m-%d %H:%M} UTC: its "
            f"{', '.join(fields)} are frozen. Register a new version that links this one as its predecessor."
        )
        self.fields = fields


def check_recipes(arms: list[dict]) -> None:
    """Each arm's recipe and stage exist and its overrides resolve (SpecError naming the arm otherwise)."""
    from eqlm.recipe import RecipeError, load_recipe

    for i, arm in enumerate(arms):
        try:
            recipe = load_recipe(arm["recipe"])
            recipe.resolve(stage=arm["stage"] or None, overrides=[*arm["overrides"], "seed=0"])
        except (RecipeError, OSError, ValueError) as exc:  # ValueError: a path no file system takes (a NUL byte)
            raise SpecError(f"arms[{i}]", str(exc)) from None


def clean_registration(data: dict, *, check_files: bool = True) -> dict:
    """The registered fields validated and normalised; SpecError / CriterionError name the first bad key."""
    hypothesis = data.get("hypothesis")
    if not isinstance(hypothesis, str) or not hypothesis.strip():
        raise SpecError("hypothesis", "the claim in prose")
    arms = normalize_arms(data.get("arms"))
    if check_files:
        check_recipes(arms)
    seeds = normalize_seeds(data.get("seeds"))
    evaluation = normalize_evaluation(data.get("evaluation"))
    criterion = criteria.validate(data.get("criterion"), [a["label"] for a in arms])
    return {
        "hypothesis": hypothesis.strip(),
        "arms": arms,
        "seeds": seeds,
        "evaluation": evaluation,
        "criterion": criterion,
    }


def _registered_text_hash(experiment: Experiment) -> str:
    return registration_hash(
        experiment.hypothesis, experiment.arms, experiment.seeds, experiment.evaluation, experiment.criterion
    )


def _rehash(experiment: Experiment) -> None:
    experiment.registration_hash = _registered_text_hash(experiment)


def registration_intact(experiment: Experiment) -> bool:
    """The stored registered text still hashes to the sha256 recorded when it was registered."""
    return _registered_text_hash(experiment) == experiment.registration_hash


def register_experiment(data: dict, *, check_files: bool = True) -> Experiment:
    """Create an experiment from {slug, title, hypothesis, arms, seeds, evaluation, criterion[, predecessor]}."""
    slug = data.get("slug")
    if not isinstance(slug, str) or not slug:
        raise SpecError("slug", "a slug")
    if Experiment.objects.filter(slug=slug).exists():
        raise SpecError("slug", f"{slug!r} exists; a new version needs a new slug")
    predecessor = None
    if data.get("predecessor"):
        predecessor = Experiment.objects.filter(slug=data["predecessor"]).first()
        if predecessor is None:
            raise SpecError("predecessor", f"no experiment {data['predecessor']!r}")
    experiment = Experiment(
        slug=slug,
        title=str(data.get("title") or slug)[:200],
        notes=str(data.get("notes") or ""),
        predecessor=predecessor,
        **clean_registration(data, check_files=check_files),
    )
    if data.get("registered_at"):
        experiment.registered_at = data["registered_at"]
    _rehash(experiment)
    experiment.full_clean(exclude=["registration_hash", "arms", "seeds", "evaluation", "criterion"])
    experiment.save()
    return experiment


def update_experiment(experiment: Experiment, changes: dict, *, check_files: bool = True) -> Experiment:
    """Apply edits; registered fields may change only before launch (Frozen otherwise)."""
    unknown = sorted(set(changes) - set(EDITABLE))
    if unknown:
        raise SpecError(unknown[0], f"not editable; editable: {', '.join(EDITABLE)}")
    for name in ("title", "notes", "summary"):
        if name in changes and not isinstance(changes[name], str):
            raise SpecError(name, "text")
    if "title" in changes and not changes["title"].strip():
        raise SpecError("title", "a title")
    with transaction.atomic():
        experiment = Experiment.objects.select_for_update().get(pk=experiment.pk)
        current = {f: getattr(experiment, f) for f in FROZEN_FIELDS}
        asked = [f for f in FROZEN_FIELDS if f in changes]
        try:
            merged = clean_registration({**current, **{f: changes[f] for f in asked}}, check_files=check_files)
        except (SpecError, criteria.CriterionError):
            if experiment.is_frozen and asked:  # frozen first: a started experiment takes no edit, valid or not
                raise Frozen(experiment, asked) from None
            raise
        changed = [f for f in FROZEN_FIELDS if merged[f] != current[f]]
        if changed and experiment.is_frozen:
            raise Frozen(experiment, changed)
        for name, value in merged.items():
            setattr(experiment, name, value)
        if "title" in changes:
            experiment.title = str(changes["title"])[:200]
        if "notes" in changes:
            experiment.notes = str(changes["notes"])
        _rehash(experiment)
        previous = experiment.summary
        if "summary" in changes:
            experiment.summary = str(changes["summary"])
        amendments.settle(experiment, previous)
        experiment.save()
    return experiment


def freeze(experiment: Experiment) -> Experiment:
    """Mark the experiment launched (its registration read-only from now on), as its first run starts."""
    with transaction.atomic():
        experiment = Experiment.objects.select_for_update().get(pk=experiment.pk)
        if experiment.launched_at is None:
            experiment.launched_at = timezone.now()
            experiment.save(update_fields=["launched_at"])
    return experiment


def run_row(experiment: Experiment, arm: dict, seed: int) -> tuple[TrainingRun, bool]:
    """The training run of one arm and seed, created when missing: (run, created)."""
    return TrainingRun.objects.get_or_create(
        experiment=experiment, arm_label=arm["label"], seed=seed, defaults={"arm_hash": arm["hash"]}
    )


def launch(experiment: Experiment) -> tuple[list[TrainingRun], int]:
    """Freeze the experiment and queue one training run per arm and seed; (runs, newly queued). Idempotent."""
    from .tasks import train_slice

    with transaction.atomic():
        experiment = freeze(experiment)
        new = []
        for arm in experiment.arms:
            for seed in experiment.seeds:
                run, created = run_row(experiment, arm, seed)
                if created:
                    new.append(run.pk)
        for pk in new:
            transaction.on_commit(lambda pk=pk: train_slice.delay(pk, 0))
    return list(experiment.runs.all()), len(new)


def cancel(runs) -> int:
    """Flag runs to stop: a queued one ends at once, a running one at its next heartbeat; a redelivered message of
    a flagged run does nothing. Returns how many were flagged."""
    flagged = 0
    for run in runs:
        if run.is_finished:
            continue
        TrainingRun.objects.filter(pk=run.pk).update(cancel_requested=True)
        flagged += 1
        queued = TrainingRun.objects.filter(pk=run.pk, status=JobStatus.QUEUED)
        message = CANCELLED.format(step=run.step, planned=run.planned_steps or "?")
        queued.update(status=JobStatus.FAILED, error=message, finished_at=timezone.now())
    return flagged


def retry(runs) -> int:
    """Queue failed or cancelled runs again from where they stopped (their saved training state); a run of a
    pre-registered experiment is never restarted from scratch. Returns how many were queued."""
    from .tasks import train_slice

    queued = 0
    for run in runs:
        with transaction.atomic():
            again = TrainingRun.objects.filter(pk=run.pk, status=JobStatus.FAILED).update(
                status=JobStatus.QUEUED,
                error="",
                cancel_requested=False,
                finished_at=None,
                lease_token="",
                lease_until=None,
            )
            if again:
                number = TrainingRun.objects.values_list("slice_number", flat=True).get(pk=run.pk)
                transaction.on_commit(lambda pk=run.pk, n=number: train_slice.delay(pk, n))
                queued += 1
    return queued


# --- reading the rows back -----------------------------------------------------------------------------------


def rows_for(experiment: Experiment) -> list[criteria.Row]:
    names = {experiment.slug} | criteria.experiments_named(experiment.criterion)
    values = ResultRow.objects.filter(experiment__in=names, step__isnull=True).values_list(
        "experiment", "arm_label", "seed", "metric", "condition", "value"
    )
    return [criteria.Row(e, a, s, m, c or {}, v) for e, a, s, m, c, v in values]


def verdict(experiment: Experiment, rows: list[criteria.Row] | None = None) -> criteria.Outcome:
    """The registered criterion's own outcome on the rows."""
    rows = rows_for(experiment) if rows is None else rows
    depths = experiment.evaluation.get("depths", [])
    return criteria.evaluate(experiment.criterion, rows, experiment.seeds, experiment.slug, depths)


def judged_verdict(experiment: Experiment, rows: list[criteria.Row] | None = None) -> criteria.Outcome:
    """The verdict every page shows: the criterion's, with a comparison of two arms at chance inconclusive."""
    return judge(verdict(experiment, rows), experiment.criterion, experiment.slug)


def arm_figures(experiment: Experiment, rows: list[criteria.Row]) -> list[dict]:
    """Per arm, one series per (metric, start) by depth: each seed's values, the mean, and the bootstrap interval
    over seeds (only with several seeds)."""
    own = [r for r in rows if r.experiment == experiment.slug]
    out = []
    for arm in experiment.arms:
        series: dict[tuple[str, str], dict[int, dict[int, float]]] = {}
        for r in own:
            depth = r.condition.get("depth")
            if r.arm != arm["label"] or not isinstance(depth, int) or r.seed is None:
                continue
            key = (r.metric, str(r.condition.get("start", "")))
            series.setdefault(key, {}).setdefault(depth, {})[r.seed] = r.value
        items = []
        for (metric, start), by_depth in sorted(series.items()):
            depths = sorted(by_depth)
            seeds = sorted({s for values in by_depth.values() for s in values})
            rows_out = []
            for d in depths:
                values = [by_depth[d][s] for s in sorted(by_depth[d])]
                # A deterministic figure (FLOPs: the same in every seed) carries no interval.
                spread = len(values) > 1 and not stats.is_deterministic(values)
                low, high = stats.bootstrap_ci(values) if spread else (None, None)
                rows_out.append(
                    {
                        "depth": d,
                        "per_seed": {str(s): by_depth[d].get(s) for s in seeds},
                        "mean": stats.mean(values),
                        "ci_low": low,
                        "ci_high": high,
                        "n": len(values),
                    }
                )
            with_interval = any(r["ci_low"] is not None for r in rows_out)
            label = stats.interval_heading([r["n"] for r in rows_out if r["ci_low"] is not None])
            items.append({"metric": metric, "start": start, "seeds": seeds, "rows": rows_out,
                          "interval_label": label if with_interval else ""})  # fmt: skip
        halting = sorted(
            (
                {
                    "metric": r.metric,
                    "seed": r.seed,
                    "budget": r.condition["budget"],
                    "tol": r.condition.get("tol"),
                    "value": r.value,
                }
                for r in own
                if r.arm == arm["label"] and "budget" in r.condition
            ),
            key=lambda h: (h["metric"], h["budget"], h["seed"]),
        )
        out.append({**arm, "series": items, "halting": halting})
    return out


def arm_models(experiment: Experiment) -> dict[str, dict]:
    """Per arm label, the model its recipe builds: {model_class, parameters} (eqlm.flops.parameter_count, no torch);
    an arm whose recipe no longer resolves is left out."""
    from eqlm.flops import parameter_count
    from eqlm.recipe import RecipeError, load_recipe

    out = {}
    for arm in experiment.arms:
        try:
            stage = load_recipe(arm["recipe"]).resolve(stage=arm.get("stage") or None, overrides=arm["overrides"])
        except (RecipeError, OSError, ValueError):
            continue
        model = dict(stage.data["model"])
        model_class = model.pop("class", "EqLM")
        out[arm["label"]] = {"model_class": model_class, "parameters": parameter_count(model_class, model)}
    return out


def run_summary(run: TrainingRun) -> dict:
    return {
        "arm": run.arm_label,
        "seed": run.seed,
        "status": "cancelled" if run.cancelled else run.status,
        "phase": run.phase,
        "stage_index": run.stage_index,
        "step": run.step,
        "planned_steps": run.planned_steps,
        "loss": run.loss,
        "eta_seconds": run.eta_seconds,
        "progress": run.progress,
        "message": run.progress_message,
        "error": run.error,
        "recipe_hash": run.recipe_hash,
        "rows_written": run.rows_written,
        "checkpoint": run.checkpoint,
    }


def experiment_summary(experiment: Experiment, outcome: criteria.Outcome | None = None) -> dict:
    outcome = outcome or judged_verdict(experiment)
    return {
        "slug": experiment.slug,
        "title": experiment.title,
        "registered_at": experiment.registered_at.isoformat(),
        "registration_hash": experiment.registration_hash,
        "launched_at": experiment.launched_at.isoformat() if experiment.launched_at else None,
        "frozen": experiment.is_frozen,
        "arms": [a["label"] for a in experiment.arms],
        "seeds": experiment.seeds,
        "verdict": outcome.status,
        "predecessor": experiment.predecessor.slug if experiment.predecessor_id else None,
    }


def experiment_detail(experiment: Experiment) -> dict:
    """Everything the page and the JSON show: the registration, the runs, per-arm figures and the verdict."""
    rows = rows_for(experiment)
    outcome = judged_verdict(experiment, rows)
    return {
        **experiment_summary(experiment, outcome),
        "registration_intact": registration_intact(experiment),
        "registration_record": amendments.record_url(experiment),
        "hypothesis": amendments.reader_hypothesis(experiment),
        "amendment": amendments.amendment_summary(experiment),
        "notes": experiment.notes,
        "arms": experiment.arms,
        "evaluation": experiment.evaluation,
        "criterion": experiment.criterion,
        "interval": criteria.INTERVAL_TEXT,
        "successors": list(experiment.successors.values_list("slug", flat=True)),
        "runs": [run_summary(r) for r in experiment.runs.all()],
        "figures": arm_figures(experiment, rows),
        "outcome": outcome.as_dict(),
    }
