"""Admin for the council record: the only place it can be edited."""

from django.contrib import admin

from .fields import ANCHORED_MARGINS, BASELINE_FIGURES, PLAYER_SCORES
from .models import (
    Accuracy,
    AnchoredSeed,
    CouncilRecord,
    FairBaseline,
    Player,
    PlayerOutcome,
    RouterChoice,
    Rule,
    RuleOutcome,
    SampleQuestion,
    Seed,
)


@admin.register(CouncilRecord)
class CouncilRecordAdmin(admin.ModelAdmin):
    list_display = ["title", "slug", "baselines_n", "source"]


@admin.register(Player)
class PlayerAdmin(admin.ModelAdmin):
    list_display = ["name", "size_b", *PLAYER_SCORES, "config_sha", "machine"]
    search_fields = ["name", "config_sha", "git_commit"]
    list_filter = ["machine"]


@admin.register(Rule)
class RuleAdmin(admin.ModelAdmin):
    list_display = ["key", "label", "order", "recorded_per_question"]
    list_filter = ["recorded_per_question"]


@admin.register(Seed)
class SeedAdmin(admin.ModelAdmin):
    list_display = ["seed", "n_tasks", "sampled_questions"]

    @admin.display(description="sampled questions")
    def sampled_questions(self, obj):
        return obj.questions.count()


@admin.register(Accuracy)
class AccuracyAdmin(admin.ModelAdmin):
    list_display = ["seed", "domain", "rule", "player", "value", "n"]
    list_filter = ["seed", "domain", "rule", "player"]
    list_select_related = ["seed", "rule", "player"]


@admin.register(FairBaseline)
class FairBaselineAdmin(admin.ModelAdmin):
    list_display = ["label", "key", *BASELINE_FIGURES, "is_council"]


@admin.register(AnchoredSeed)
class AnchoredSeedAdmin(admin.ModelAdmin):
    list_display = ["seed", *ANCHORED_MARGINS, "paired_wins", "paired_losses", "paired_z"]


@admin.register(RouterChoice)
class RouterChoiceAdmin(admin.ModelAdmin):
    list_display = ["domain", "player"]


class RuleOutcomeInline(admin.TabularInline):
    model = RuleOutcome
    extra = 0


class PlayerOutcomeInline(admin.TabularInline):
    model = PlayerOutcome
    extra = 0


@admin.register(SampleQuestion)
class SampleQuestionAdmin(admin.ModelAdmin):
    list_display = ["seed", "index", "domain", "players_right", "rules_right"]
    list_filter = ["seed", "domain"]
    inlines = [PlayerOutcomeInline, RuleOutcomeInline]

    def get_queryset(self, request):
        return super().get_queryset(request).with_outcomes()

    @admin.display(description="players right")
    def players_right(self, obj):
        outcomes = obj.player_outcomes.all()
        return f"{sum(o.correct for o in outcomes)} of {len(outcomes)}"

    @admin.display(description="rules right")
    def rules_right(self, obj):
        outcomes = obj.rule_outcomes.all()
        return f"{sum(o.correct for o in outcomes)} of {len(outcomes)}"
