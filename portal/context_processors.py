"""Template context shared by every page: version, commit and the navigation."""

from django.conf import settings

NAVIGATION = [
    ("home", "Home", "home"),
    ("findings", "Findings", "findings:index"),
    ("benchmarks", "Benchmarks", "benchmarks:index"),
    ("experiments", "Experiments", "experiments:index"),
    ("demo", "Demo", "inference:demo"),
    ("lab", "Lab", "lab:index"),
    ("council", "Council", "council:index"),
    ("models", "Models", "models:models"),
    ("api", "API", "api-reference"),
]


def portal(request):
    return {
        "portal_version": settings.VERSION,
        "portal_commit": settings.GIT_COMMIT,
        "navigation": NAVIGATION,
    }
