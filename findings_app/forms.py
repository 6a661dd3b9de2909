"""The timeline's filters: one form validates them for the page and for the API."""

from django import forms
from django.core.validators import RegexValidator

from .models import Review, Status, Theme

FILTER_FIELDS = ("q", "theme", "status", "review", "experiment", "hypothesis")


def _with_any(choices, label="Any"):
    return [("", label), *choices]


class FindingFilterForm(forms.Form):
    q = forms.CharField(
        label="Search",
        required=False,
        max_length=200,
        help_text="Words that must all appear: in a code, title, summary, body, figure or provenance entry.",
    )
    theme = forms.ChoiceField(choices=_with_any(Theme.choices, "All themes"), required=False, help_text="A theme.")
    status = forms.ChoiceField(
        choices=_with_any(Status.choices, "Any status"), required=False, help_text="The record's normalised status."
    )
    review = forms.ChoiceField(
        label="Reviewer",
        choices=_with_any(Review.choices, "Any"),
        required=False,
        help_text="What the record says about the reviewer (Tarka).",
    )
    experiment = forms.CharField(
        required=False,
        max_length=80,
        validators=[RegexValidator(r"^[A-Za-z0-9_]+$", "An experiment code looks like exp13 or exp05_full_v4.")],
        help_text="An experiment code (exp13); also finds its named runs (exp13_seed42).",
    )
    hypothesis = forms.CharField(required=False, max_length=20, help_text="A hypothesis code (H1, H6).")

    def filters(self) -> dict[str, str]:
        """The cleaned, non-empty filters (call after is_valid())."""
        return {name: value for name, value in self.cleaned_data.items() if value}
