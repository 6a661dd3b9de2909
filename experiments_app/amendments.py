"""An experiment's hypothesis reworded for readers, recorded as an amendment beside its registration.

A registration is frozen once launched, word for word: its sha256 (`registration_hash`) covers the hypothesis,
arms, seeds, evaluation and criterion, and names the experiment's training runs. Where the registered hypothesis
speaks of the circumstances it was written in rather than of the claim, its wording may be amended for readers. The
amendment changes the wording only: it is dated (`amended_at`) and hashed with the same registered arms, seeds,
evaluation and criterion (`amendment_hash`), so a reader can check both texts, and neither the registration's hash
nor any run's identity moves. The registered text, word for word, stays in the registration record.
"""

from django.db import transaction
from django.urls import reverse
from django.utils import timezone

from .models import Experiment
from .spec import registration_hash


class AmendmentError(ValueError):
    pass


def amendment_hash(experiment: Experiment, text: str) -> str:
    """sha256 of the reworded hypothesis with the registered arms, seeds, evaluation and criterion."""
    return registration_hash(text, experiment.arms, experiment.seeds, experiment.evaluation, experiment.criterion)


def amendment_intact(experiment: Experiment) -> bool:
    """The stored amendment (if any) still hashes to the sha256 recorded when it was made."""
    if not experiment.summary:
        return not experiment.amendment_hash
    return amendment_hash(experiment, experiment.summary) == experiment.amendment_hash


def settle(experiment: Experiment, previous: str, at=None) -> None:
    """After an edit of the instance (unsaved) that may have set its `summary` or moved its registered fields: a
    new rewording is dated (`at`, else now), the same one keeps its date, empty text or the registered wording
    withdraws it, and its sha256 is taken over the registered fields as they now are."""
    text = experiment.summary.strip()
    if text == experiment.hypothesis.strip():
        text = ""  # the registered wording needs no amendment
    experiment.summary = text
    if not text:
        experiment.amended_at = None
    elif text != previous or experiment.amended_at is None:
        experiment.amended_at = at or timezone.now()
    experiment.amendment_hash = amendment_hash(experiment, text) if text else ""


def amend(experiment: Experiment, text: str, at=None) -> Experiment:
    """Record `text` as the reader's wording of the experiment's hypothesis, launched or not."""
    if not isinstance(text, str):
        raise AmendmentError("the reworded hypothesis must be text")
    with transaction.atomic():
        experiment = Experiment.objects.select_for_update().get(pk=experiment.pk)
        previous, experiment.summary = experiment.summary, text
        settle(experiment, previous, at)
        experiment.save(update_fields=["summary", "amended_at", "amendment_hash"])
    return experiment


def reader_hypothesis(experiment: Experiment) -> str:
    """The hypothesis as a reader reads it: the amendment where there is one, else the registered text."""
    return experiment.summary or experiment.hypothesis


def amendment_summary(experiment: Experiment) -> dict | None:
    if not experiment.summary:
        return None
    return {
        "amended_at": experiment.amended_at.isoformat() if experiment.amended_at else None,
        "amendment_hash": experiment.amendment_hash,
        "amendment_intact": amendment_intact(experiment),
        "changes": "the hypothesis's wording only; the arms, seeds, evaluation and criterion are as registered",
    }


def registration_record(experiment: Experiment, intact: bool) -> dict:
    """The registration word for word, with its sha256 and any amendment: the experiment's provenance."""
    amendment = amendment_summary(experiment)
    return {
        "slug": experiment.slug,
        "registered_at": experiment.registered_at.isoformat(),
        "registration_hash": experiment.registration_hash,
        "registration_intact": intact,
        "launched_at": experiment.launched_at.isoformat() if experiment.launched_at else None,
        "registered": {
            "hypothesis": experiment.hypothesis,
            "arms": experiment.arms,
            "seeds": experiment.seeds,
            "evaluation": experiment.evaluation,
            "criterion": experiment.criterion,
        },
        "amendment": {**amendment, "hypothesis": experiment.summary} if amendment else None,
    }


def record_url(experiment: Experiment) -> str:
    return reverse("experiments-api:registration", args=[experiment.slug])
