"""The replay's filter form (GET): seed, domain, rule outcome, disagreements."""

from django import forms

from .models import DOMAIN_GENERAL, DOMAIN_MATH, Rule, Seed


class ReplayFilterForm(forms.Form):
    seed = forms.TypedChoiceField(coerce=int, label="Seed")
    domain = forms.ChoiceField(
        required=False,
        label="Domain",
        choices=[("", "any domain"), (DOMAIN_MATH, "maths"), (DOMAIN_GENERAL, "general knowledge")],
    )
    rule = forms.ChoiceField(required=False, label="Rule")
    outcome = forms.ChoiceField(
        required=False,
        label="Rule outcome",
        choices=[("", "right or wrong"), ("right", "right"), ("wrong", "wrong")],
        help_text="With no rule chosen: every recorded rule right (or every one wrong).",
    )
    split = forms.ChoiceField(
        required=False,
        label="Disagreements only",
        choices=[
            ("", "show every question"),
            ("players", "players split between right and wrong"),
            ("rules", "rules picked different players"),
        ],
    )
    q = forms.IntegerField(required=False, min_value=0, label="Question index", widget=forms.HiddenInput)

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["seed"].choices = [(s.seed, f"seed {s.seed}") for s in Seed.objects.all()]
        self.fields["rule"].choices = [("", "any rule")] + [
            (r.key, r.label) for r in Rule.objects.filter(recorded_per_question=True)
        ]
