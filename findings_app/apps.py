"""App config for findings_app."""

from django.apps import AppConfig


def finding_titles(codes) -> dict[str, str]:
    """{code: title} of the stored findings among `codes`."""
    from .models import Finding

    return dict(Finding.objects.filter(code__in=codes).values_list("code", "title"))


class FindingsConfig(AppConfig):
    name = "findings_app"
    verbose_name = "Findings"

    def ready(self):
        from benchmarks_app.overview import read_finding_titles_with

        read_finding_titles_with(finding_titles)  # the tables' overview names a table by its finding's title
