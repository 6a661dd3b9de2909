"""The measured council record: players, rules, seeds, accuracies, fair baselines and sample questions.

Everything here is reference data loaded from `fixtures/council.json` by `seed`; nothing is computed
at write time. Values are stored exactly as the programme recorded them.
"""

from django.db import models

DOMAIN_ALL = "all"
DOMAIN_MATH = "math"
DOMAIN_GENERAL = "general"
DOMAIN_CHOICES = [(DOMAIN_ALL, "all questions"), (DOMAIN_MATH, "maths"), (DOMAIN_GENERAL, "general knowledge")]


class CouncilRecord(models.Model):
    """The record as a whole: its provenance notes and the fair-baseline arena's size (one row)."""

    slug = models.SlugField(unique=True)
    title = models.CharField(max_length=200)
    source = models.CharField(max_length=300, help_text="Where the record came from (file and its origin).")
    note = models.TextField(help_text="The record's own note on what it contains.")
    baselines_note = models.TextField(blank=True, help_text="The fair-baseline arena's own note.")
    baselines_n = models.PositiveIntegerField(help_text="Questions in the fair-baseline arena.")
    findings = models.JSONField(default=list, help_text="Finding ids the record backs (e.g. F41, F54).")
    revision = models.CharField(
        max_length=32,
        blank=True,
        editable=False,
        help_text="Changes whenever any part of the record changes; keys the cached summary in every process.",
    )

    def __str__(self) -> str:
        return self.title


class Player(models.Model):
    """One council member and, when measured, its row on the baseline ladder (leaderboard.json)."""

    name = models.CharField(max_length=120, unique=True, help_text="Hugging Face id, e.g. Qwen/Qwen3-1.7B.")
    order = models.PositiveSmallIntegerField(default=0)
    size_b = models.FloatField(null=True, blank=True, verbose_name="size (B parameters)")
    source = models.CharField(max_length=120, blank=True)
    mmlu_acc = models.FloatField(null=True, blank=True, verbose_name="MMLU")
    arc_challenge_acc = models.FloatField(null=True, blank=True, verbose_name="ARC-Challenge")
    hellaswag_acc = models.FloatField(null=True, blank=True, verbose_name="HellaSwag")
    gsm8k_flexible = models.FloatField(null=True, blank=True, verbose_name="GSM8K (flexible extract)")
    mixed_arena = models.FloatField(null=True, blank=True, verbose_name="mixed arena")
    config_sha = models.CharField(max_length=64, blank=True)
    git_commit = models.CharField(max_length=64, blank=True)
    machine = models.CharField(max_length=64, blank=True)

    class Meta:
        ordering = ["order", "name"]

    def __str__(self) -> str:
        return self.short_name

    @property
    def short_name(self) -> str:
        return self.name.rsplit("/", 1)[-1]


class Rule(models.Model):
    """An aggregation rule of the council (majority, equilibrium, ..., oracle)."""

    key = models.SlugField(max_length=40, unique=True)
    label = models.CharField(max_length=80)
    description = models.TextField()
    order = models.PositiveSmallIntegerField(default=0)
    recorded_per_question = models.BooleanField(
        default=False, help_text="Whether the sample questions record this rule's pick and correctness."
    )

    class Meta:
        ordering = ["order", "key"]

    def __str__(self) -> str:
        return self.label


class Seed(models.Model):
    """One fresh confirmation seed of the pre-registered arena (SPEC 0017)."""

    seed = models.PositiveIntegerField(unique=True)
    n_tasks = models.PositiveIntegerField(help_text="Questions scored on this seed.")

    class Meta:
        ordering = ["seed"]

    def __str__(self) -> str:
        return f"seed {self.seed}"


class AccuracyQuerySet(models.QuerySet):
    def of_rules(self):
        return self.filter(rule__isnull=False)

    def of_players(self):
        return self.filter(player__isnull=False)

    def in_domain(self, domain: str):
        return self.filter(domain=domain)


class Accuracy(models.Model):
    """The accuracy of one rule or one single player on one seed, overall or within a domain."""

    seed = models.ForeignKey(Seed, on_delete=models.CASCADE, related_name="accuracies")
    domain = models.CharField(max_length=10, choices=DOMAIN_CHOICES, default=DOMAIN_ALL)
    rule = models.ForeignKey(Rule, null=True, blank=True, on_delete=models.CASCADE, related_name="accuracies")
    player = models.ForeignKey(Player, null=True, blank=True, on_delete=models.CASCADE, related_name="accuracies")
    value = models.FloatField()
    n = models.PositiveIntegerField(help_text="Questions in this slice.")

    objects = AccuracyQuerySet.as_manager()

    class Meta:
        ordering = ["seed__seed", "domain", "rule__order", "player__order"]
        verbose_name_plural = "accuracies"
        constraints = [
            models.CheckConstraint(
                condition=(models.Q(rule__isnull=False, player__isnull=True))
                | (models.Q(rule__isnull=True, player__isnull=False)),
                name="council_accuracy_rule_xor_player",
            ),
            models.UniqueConstraint(fields=["seed", "domain", "rule"], name="council_accuracy_unique_rule"),
            models.UniqueConstraint(fields=["seed", "domain", "player"], name="council_accuracy_unique_player"),
        ]

    def __str__(self) -> str:
        who = self.rule or (f"single {self.player}" if self.player else "?")
        return f"{who} · {self.seed} · {self.domain}: {self.value}"


class FairBaseline(models.Model):
    """One arm of the fair-baseline comparison (F54): accuracy, cost, and the council's paired record."""

    key = models.SlugField(max_length=60, unique=True)
    label = models.CharField(max_length=120)
    order = models.PositiveSmallIntegerField(default=0)
    is_council = models.BooleanField(default=False)
    accuracy = models.FloatField()
    generations_per_request = models.FloatField()
    council_wins = models.PositiveIntegerField(null=True, blank=True, help_text="Questions the council won.")
    council_losses = models.PositiveIntegerField(null=True, blank=True, help_text="Questions the council lost.")
    z = models.FloatField(null=True, blank=True, help_text="Paired z as recorded (council vs this arm).")

    class Meta:
        ordering = ["order", "key"]

    def __str__(self) -> str:
        return self.label


class AnchoredSeed(models.Model):
    """The anchored-confirmation margins of one seed: anchored vote vs plain and fallback routers (F41)."""

    seed = models.OneToOneField(Seed, on_delete=models.CASCADE, related_name="anchored")
    mechanism = models.FloatField(help_text="Anchored vote accuracy.")
    router = models.FloatField(help_text="Plain domain router accuracy.")
    fallback_router = models.FloatField(help_text="Router with majority-vote fallback (the deployed system).")
    margin_vs_plain = models.FloatField()
    margin_vs_fallback = models.FloatField()
    paired_wins = models.PositiveIntegerField()
    paired_losses = models.PositiveIntegerField()
    paired_z = models.FloatField()
    decomposition = models.JSONField(default=dict, blank=True, help_text="Counts of paired outcomes by kind.")
    math_mechanism = models.FloatField(null=True, blank=True)
    math_router = models.FloatField(null=True, blank=True)
    general_mechanism = models.FloatField(null=True, blank=True)
    general_router = models.FloatField(null=True, blank=True)

    class Meta:
        ordering = ["seed__seed"]

    def __str__(self) -> str:
        return f"anchored confirmation · {self.seed}"


class RouterChoice(models.Model):
    """The router's per-domain champion (the player it sends a domain's questions to)."""

    domain = models.CharField(max_length=10, choices=DOMAIN_CHOICES, unique=True)
    player = models.ForeignKey(Player, on_delete=models.CASCADE, related_name="routed_domains")

    def __str__(self) -> str:
        return f"{self.domain} → {self.player}"


class SampleQuestionQuerySet(models.QuerySet):
    def with_outcomes(self):
        return self.select_related("seed").prefetch_related(
            "rule_outcomes__rule", "rule_outcomes__winner", "player_outcomes__player"
        )


class SampleQuestion(models.Model):
    """A recorded sample question: its domain and outcomes (answer texts were not recorded)."""

    seed = models.ForeignKey(Seed, on_delete=models.CASCADE, related_name="questions")
    index = models.PositiveIntegerField(help_text="The question's index `i` within the seed's arena.")
    domain = models.CharField(max_length=10, choices=DOMAIN_CHOICES[1:])

    objects = SampleQuestionQuerySet.as_manager()

    class Meta:
        ordering = ["seed__seed", "index"]
        constraints = [models.UniqueConstraint(fields=["seed", "index"], name="council_question_unique")]

    def __str__(self) -> str:
        return f"{self.seed} · question {self.index}"


class RuleOutcome(models.Model):
    """Which player a rule picked on a sample question, and whether the pick was right."""

    question = models.ForeignKey(SampleQuestion, on_delete=models.CASCADE, related_name="rule_outcomes")
    rule = models.ForeignKey(Rule, on_delete=models.CASCADE, related_name="outcomes")
    winner = models.ForeignKey(Player, on_delete=models.CASCADE, related_name="rule_wins")
    correct = models.BooleanField()

    class Meta:
        ordering = ["question", "rule__order"]
        constraints = [models.UniqueConstraint(fields=["question", "rule"], name="council_rule_outcome_unique")]

    def __str__(self) -> str:
        return f"{self.question} · {self.rule} → {self.winner} ({'right' if self.correct else 'wrong'})"


class PlayerOutcome(models.Model):
    """Whether one player, answering alone, was right on a sample question."""

    question = models.ForeignKey(SampleQuestion, on_delete=models.CASCADE, related_name="player_outcomes")
    player = models.ForeignKey(Player, on_delete=models.CASCADE, related_name="outcomes")
    correct = models.BooleanField()

    class Meta:
        ordering = ["question", "player__order"]
        constraints = [models.UniqueConstraint(fields=["question", "player"], name="council_player_outcome_unique")]

    def __str__(self) -> str:
        return f"{self.question} · {self.player} ({'right' if self.correct else 'wrong'})"
