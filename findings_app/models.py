"""The findings record: findings, their figures, the links between them, provenance and notes on the record."""

import re

from django.db import models
from django.db.models import Count, Q
from django.urls import reverse
from django.utils.text import slugify

from .figure_values import badge_text, interval_label, parse_value
from .provenance import normalise_experiment, normalise_reference

CODE_PATTERN = r"F\d{1,3}(?:-(?:correction|addendum))?"
_CODE = re.compile(rf"^(?:{CODE_PATTERN})$", re.IGNORECASE)


def sequence_for(code: str) -> int:
    """Timeline order within a day: F10 -> 100, F10-correction -> 101, F24-addendum -> 241."""
    match = re.match(r"^F(\d+)(-.+)?$", code, re.IGNORECASE)
    if not match:
        raise ValueError(f"not a finding code: {code!r}")
    return int(match[1]) * 10 + (1 if match[2] else 0)


def canonical_code(text: str) -> str | None:
    """'f24' -> 'F24', 'F10-Correction' -> 'F10-correction'; None when the text is not a finding code."""
    text = text.strip()
    if not _CODE.match(text):
        return None
    head, _, tail = text.partition("-")
    return "F" + head[1:] + (f"-{tail.lower()}" if tail else "")


class Theme(models.TextChoices):
    CONVERGENCE = "convergence", "Convergence"
    MECHANISM_DESIGN = "mechanism-design", "Mechanism design"
    EQLM_PARADIGM = "eqlm-paradigm", "The EqLM paradigm"
    COUNCIL = "council", "The council"
    EXCHANGE_RATE = "exchange-rate", "The exchange rate"
    BILLION_BOUNDARY = "billion-parameter-boundary", "The billion-parameter boundary"


class Status(models.TextChoices):
    VALIDATED = "VALIDATED", "Validated"
    MISSED = "MISSED", "Missed"
    PARTIAL = "PARTIAL", "Partial"
    NULL = "NULL", "Null result"
    METHOD = "METHOD", "Method"
    CORRECTION = "CORRECTION", "Correction"
    RETRACTED = "RETRACTED", "Retracted"
    OTHER = "OTHER", "Other"


class Review(models.TextChoices):
    """What the record says about Tarka, the programme's adversarial reviewer, for this finding."""

    VERDICT = "verdict", "Reviewer verdict recorded"
    RESOLVED = "resolved", "Reviewer resolved"
    PENDING = "pending", "Reviewer sign-off pending"
    NONE = "none", "No reviewer sign-off recorded"


STATUS_BADGES = {
    Status.VALIDATED: "ok",
    Status.MISSED: "bad",
    Status.PARTIAL: "warn",
    Status.NULL: "neutral",
    Status.METHOD: "neutral",
    Status.CORRECTION: "warn",
    Status.RETRACTED: "bad",
    Status.OTHER: "neutral",
}
REVIEW_BADGES = {Review.VERDICT: "ok", Review.RESOLVED: "ok", Review.PENDING: "warn", Review.NONE: "neutral"}


class FindingQuerySet(models.QuerySet):
    def timeline(self):
        return self.order_by("date", "sequence")

    def by_theme(self, theme: str):
        return self.filter(theme=theme)

    def with_status(self, status: str):
        return self.filter(status=status)

    def with_review(self, review: str):
        return self.filter(review=review)

    def for_experiment(self, code: str):
        """Findings backed by an experiment or one of its named runs (exp05 also finds exp05_full_v4)."""
        code = code.strip().lower()
        runs = Reference.objects.filter(kind=Reference.Kind.EXPERIMENT).filter(
            Q(code=code) | Q(code__startswith=code + "_")
        )
        return self.filter(pk__in=runs.values("finding_id"))

    def for_hypothesis(self, code: str):
        hypotheses = Reference.objects.filter(kind=Reference.Kind.HYPOTHESIS, code__iexact=code.strip())
        return self.filter(pk__in=hypotheses.values("finding_id"))

    def search(self, text: str):
        """Every word must appear somewhere: code, title, summary, body, a figure or a provenance entry."""
        queryset = self
        for word in text.split():
            figures = Figure.objects.filter(Q(name__icontains=word) | Q(value__icontains=word))
            references = Reference.objects.filter(Q(code__icontains=word) | Q(recorded_as__icontains=word))
            queryset = queryset.filter(
                Q(code__iexact=word)
                | Q(title__icontains=word)
                | Q(summary__icontains=word)
                | Q(body__icontains=word)
                | Q(pk__in=figures.values("finding_id"))
                | Q(pk__in=references.values("finding_id"))
            )
        return queryset

    def filtered(self, *, q="", theme="", status="", review="", experiment="", hypothesis=""):
        """The timeline's filters, shared by the page and the API; empty values filter nothing."""
        queryset = self
        if theme:
            queryset = queryset.by_theme(theme)
        if status:
            queryset = queryset.with_status(status)
        if review:
            queryset = queryset.with_review(review)
        if experiment:
            queryset = queryset.for_experiment(experiment)
        if hypothesis:
            queryset = queryset.for_hypothesis(hypothesis)
        if q:
            queryset = queryset.search(q)
        return queryset

    def counts_by(self, field: str) -> dict[str, int]:
        return {row[field]: row["n"] for row in self.order_by().values(field).annotate(n=Count("pk"))}


class Finding(models.Model):
    """One entry of the record (F1–F55, plus F10-correction and F24-addendum), addressed by its code."""

    code = models.CharField(max_length=32, unique=True, help_text="As the record names it: F24, F10-correction.")
    sequence = models.PositiveIntegerField(editable=False, db_index=True)
    date = models.DateField(db_index=True)
    date_basis = models.CharField(max_length=200, blank=True, help_text="What the date is: sign-off, header, …")
    status = models.CharField(max_length=12, choices=Status.choices, db_index=True)
    status_raw = models.CharField("status as recorded", max_length=300, blank=True)
    review = models.CharField(max_length=10, choices=Review.choices, default=Review.NONE, db_index=True)
    tarka_verdict = models.CharField("reviewer verdict", max_length=300, blank=True)
    verdict_note = models.CharField(max_length=300, blank=True)
    theme = models.CharField(max_length=32, choices=Theme.choices, db_index=True)
    theme_note = models.CharField(max_length=200, blank=True, help_text="Why a borderline finding sits here.")
    title = models.CharField(max_length=200)
    summary = models.TextField(help_text="One or two sentences in the portal's own words.")
    body = models.TextField(blank=True, help_text="Markdown: what was tested, what came out, what it means.")
    updated_at = models.DateTimeField(auto_now=True)

    objects = FindingQuerySet.as_manager()

    class Meta:
        ordering = ["date", "sequence"]

    def __str__(self) -> str:
        return f"{self.code}: {self.title}"

    def save(self, *args, **kwargs):
        self.sequence = sequence_for(self.code)
        super().save(*args, **kwargs)

    def get_absolute_url(self) -> str:
        return reverse("findings:detail", args=[self.code])

    @property
    def status_badge(self) -> str:
        return STATUS_BADGES.get(self.status, "neutral")

    @property
    def status_badge_text(self) -> str:
        """The badge's words; where the record's own status word differs, why (F18: "Missed · measurement
        validated"). See figure_values.badge_text."""
        return badge_text(self.get_status_display(), self.status, self.status_raw)

    @property
    def status_badge_title(self) -> str:
        if self.status_badge_text == self.get_status_display():
            return f"Outcome: {self.get_status_display().lower()}"
        return f"Outcome as the portal reads it; the record's status: {self.status_raw}"

    @property
    def review_badge(self) -> str:
        return REVIEW_BADGES.get(self.review, "neutral")

    def experiment_chips(self) -> list["Reference"]:
        """One experiment reference per code (uncoded ones as recorded), in record order.

        Uses the `experiment_refs` prefetch when the list view made one.
        """
        refs = getattr(self, "experiment_refs", None)
        if refs is None:
            refs = [ref for ref in self.references.all() if ref.kind == Reference.Kind.EXPERIMENT]
        chips, seen = [], set()
        for ref in refs:
            key = ref.code or ref.recorded_as
            if key not in seen:
                seen.add(key)
                chips.append(ref)
        return chips


class FigureQuerySet(models.QuerySet):
    def lookup(self, pairs) -> dict[tuple[str, str], "Figure"]:
        """The stored figures for (finding code, figure name) pairs; missing pairs are simply absent."""
        pairs = list(pairs)
        if not pairs:
            return {}
        query = Q()
        for code, name in pairs:
            query |= Q(finding__code=code, name=name)
        return {(fig.finding.code, fig.name): fig for fig in self.filter(query).select_related("finding")}


class Figure(models.Model):
    """A headline number as the record states it; the parsed number and interval are derived on save."""

    class IntervalKind(models.TextChoices):
        NONE = "", "none"
        BRACKET = "bracket", "stated [low, high]"
        PLUS_MINUS = "plus_minus", "value ± spread"
        CONTEXT = "context", "interval stated in the context"

    finding = models.ForeignKey(Finding, on_delete=models.CASCADE, related_name="figures")
    position = models.PositiveSmallIntegerField(default=0)
    name = models.CharField(max_length=200)
    value = models.CharField(max_length=300, help_text="Exactly as recorded, units and intervals included.")
    context = models.CharField(max_length=300, blank=True)
    number = models.FloatField(null=True, blank=True, editable=False)
    interval_low = models.FloatField(null=True, blank=True, editable=False)
    interval_high = models.FloatField(null=True, blank=True, editable=False)
    interval_kind = models.CharField(max_length=12, choices=IntervalKind.choices, blank=True, editable=False)
    qualifier = models.CharField(max_length=2, blank=True, editable=False, help_text="≈, ~, <, ≤, > or ≥")
    unit = models.CharField(max_length=16, blank=True, editable=False)

    objects = FigureQuerySet.as_manager()

    class Meta:
        ordering = ["finding", "position", "pk"]
        constraints = [models.UniqueConstraint(fields=["finding", "name"], name="figure_name_unique_per_finding")]

    def __str__(self) -> str:
        return f"{self.name} = {self.value}"

    def save(self, *args, **kwargs):
        self.derive()
        super().save(*args, **kwargs)

    def get_absolute_url(self) -> str:
        return f"{self.finding.get_absolute_url()}#{self.anchor}"

    def derive(self) -> "Figure":
        """Fill the parsed number, interval, qualifier and unit from the recorded value (bulk_create skips save)."""
        parsed = parse_value(self.value, self.context)
        self.number = parsed.number
        self.interval_low = parsed.low
        self.interval_high = parsed.high
        self.interval_kind = parsed.interval_kind
        self.qualifier = parsed.qualifier
        self.unit = parsed.unit
        return self

    @property
    def anchor(self) -> str:
        return "fig-" + (slugify(self.name) or str(self.position))

    @property
    def spread(self) -> float | None:
        """The ± of a "value ± spread" figure (kept as a spread, never shown as a bracketed interval)."""
        if self.interval_kind != self.IntervalKind.PLUS_MINUS or self.number is None or self.interval_low is None:
            return None
        return round(self.number - self.interval_low, 12)

    @property
    def interval_label(self) -> str:
        """What a bracketed interval is, in the record's words: a bootstrap CI only where it says bootstrap."""
        return interval_label(self.context)


class FindingLink(models.Model):
    """A link the record states on `source`: it supersedes, corrects, or relates to `target`."""

    class Kind(models.TextChoices):
        SUPERSEDES = "supersedes", "Supersedes"
        SUPERSEDED_BY = "superseded_by", "Superseded by"
        CORRECTS = "corrects", "Corrects"
        CORRECTED_BY = "corrected_by", "Corrected by"
        RELATED = "related", "Related"

    INVERSE = {
        Kind.SUPERSEDES: Kind.SUPERSEDED_BY,
        Kind.SUPERSEDED_BY: Kind.SUPERSEDES,
        Kind.CORRECTS: Kind.CORRECTED_BY,
        Kind.CORRECTED_BY: Kind.CORRECTS,
        Kind.RELATED: Kind.RELATED,
    }

    source = models.ForeignKey(Finding, on_delete=models.CASCADE, related_name="links")
    target = models.ForeignKey(Finding, on_delete=models.CASCADE, related_name="backlinks")
    kind = models.CharField(max_length=16, choices=Kind.choices)
    position = models.PositiveSmallIntegerField(default=0)

    class Meta:
        ordering = ["source", "kind", "position", "pk"]
        constraints = [models.UniqueConstraint(fields=["source", "target", "kind"], name="finding_link_unique")]

    BACKLINK_PHRASES = {
        Kind.SUPERSEDES: "supersedes this finding",
        Kind.SUPERSEDED_BY: "names this finding as superseding it",
        Kind.CORRECTS: "corrects this finding",
        Kind.CORRECTED_BY: "names this finding as correcting it",
        Kind.RELATED: "lists this finding as related",
    }

    def __str__(self) -> str:
        return f"{self.source.code} {self.get_kind_display().lower()} {self.target.code}"

    @property
    def backlink_phrase(self) -> str:
        """How the link reads from the target's page: 'F18 supersedes this finding'."""
        return self.BACKLINK_PHRASES[self.kind]


class Reference(models.Model):
    """Provenance: a hypothesis, research question, experiment, spec/ADR, config hash or commit behind a finding."""

    class Kind(models.TextChoices):
        HYPOTHESIS = "hypothesis", "Hypothesis"
        RESEARCH_QUESTION = "research_question", "Research question"
        EXPERIMENT = "experiment", "Experiment"
        SPEC_ADR = "spec_adr", "Spec / ADR"
        CONFIG_HASH = "config_hash", "Config hash"
        COMMIT = "commit", "Commit"

    finding = models.ForeignKey(Finding, on_delete=models.CASCADE, related_name="references")
    kind = models.CharField(max_length=20, choices=Kind.choices, db_index=True)
    code = models.CharField(max_length=80, blank=True, db_index=True, help_text="Normalised: exp01, H1, SPEC 0017.")
    note = models.CharField(max_length=200, blank=True)
    recorded_as = models.CharField(max_length=200, help_text="The string exactly as the record has it.")
    position = models.PositiveSmallIntegerField(default=0)

    class Meta:
        ordering = ["finding", "kind", "position", "pk"]

    def __str__(self) -> str:
        return f"{self.get_kind_display()}: {self.recorded_as}"

    @classmethod
    def from_recorded(cls, finding: Finding, kind: str, recorded_as: str, position: int = 0) -> "Reference":
        """An unsaved row for a provenance string as the record has it, with its normalised code and note."""
        normalise = normalise_experiment if kind == cls.Kind.EXPERIMENT else normalise_reference
        parsed = normalise(recorded_as)
        return cls(
            finding=finding, kind=kind, code=parsed.code, note=parsed.note, recorded_as=recorded_as, position=position
        )

    @property
    def runs_url(self) -> str:
        """Where the stored runs of an experiment are listed: '' for anything else, and '' when no run of it is
        stored (exp10 lists the runs stored as exp10_5090)."""
        if self.kind == self.Kind.EXPERIMENT and self.code:
            from results.experiment_names import runs_url

            return runs_url(self.code, getattr(self, "stored_experiments", None))
        return ""

    @property
    def stored_as(self) -> list[str]:
        """The names this experiment's rows are stored under, where they differ from its code."""
        if self.kind != self.Kind.EXPERIMENT or not self.code:
            return []
        from results.experiment_names import resolve

        names = resolve(self.code, getattr(self, "stored_experiments", None))
        return [] if names == [self.code] else names


class RecordNote(models.Model):
    """A note about the record as a whole (an inconsistency, a gap), shown on the home page.

    The Markdown body may quote a stored figure as [[F45: mean ratio]] so that no number is typed twice.
    """

    slug = models.SlugField(unique=True)
    title = models.CharField(max_length=200)
    body = models.TextField()
    position = models.PositiveSmallIntegerField(default=0)
    findings = models.ManyToManyField(Finding, blank=True, related_name="notes")

    class Meta:
        ordering = ["position", "pk"]

    def __str__(self) -> str:
        return self.title
