"""Read-only serializers of the council record for the JSON API."""

from rest_framework import serializers

from .fields import BASELINE_FIGURES, PLAYER_LADDER
from .models import FairBaseline, Player, SampleQuestion


class PlayerSerializer(serializers.ModelSerializer):
    short_name = serializers.CharField(read_only=True)

    class Meta:
        model = Player
        fields = ["name", "short_name", *PLAYER_LADDER]
        read_only_fields = fields


class BaselineSerializer(serializers.ModelSerializer):
    class Meta:
        model = FairBaseline
        fields = ["key", "label", "is_council", *BASELINE_FIGURES]
        read_only_fields = fields


class RuleAccuracySerializer(serializers.Serializer):
    key = serializers.CharField()
    label = serializers.CharField()
    kind = serializers.ChoiceField(choices=["rule", "player"])
    values = serializers.DictField(child=serializers.FloatField(allow_null=True), help_text="seed -> accuracy")
    mean = serializers.FloatField(allow_null=True)


class DomainAccuracySerializer(serializers.Serializer):
    key = serializers.CharField()
    domain = serializers.CharField()
    values = serializers.DictField(child=serializers.FloatField(allow_null=True))
    mean = serializers.FloatField(allow_null=True)


class SummarySerializer(serializers.Serializer):
    record = serializers.DictField()
    headline = serializers.DictField()
    baselines = BaselineSerializer(many=True)
    per_seed = RuleAccuracySerializer(many=True)
    per_domain = DomainAccuracySerializer(many=True)
    anchored_confirmation = serializers.ListField(child=serializers.DictField())
    router = serializers.DictField(child=serializers.CharField())
    players = PlayerSerializer(many=True)
    checks = serializers.ListField(child=serializers.DictField())


class QuestionSerializer(serializers.ModelSerializer):
    seed = serializers.IntegerField(source="seed.seed")
    index = serializers.IntegerField()
    players = serializers.SerializerMethodField()
    rules = serializers.SerializerMethodField()

    class Meta:
        model = SampleQuestion
        fields = ["seed", "index", "domain", "players", "rules"]
        read_only_fields = fields

    def get_players(self, obj) -> dict[str, bool]:
        return {po.player.name: po.correct for po in obj.player_outcomes.all()}

    def get_rules(self, obj) -> dict[str, dict]:
        return {ro.rule.key: {"winner": ro.winner.name, "correct": ro.correct} for ro in obj.rule_outcomes.all()}
