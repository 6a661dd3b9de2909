"""The programme's experiment names (exp10, exp40) resolved to the names its rows are stored under.

The record cites an experiment by its number; the results folder names runs after it with a suffix
(`exp10_5090`, `exp40_ladder`, `exp31_audit`). Both spellings name the same experiment here: a filter on
`exp10` finds the rows of `exp10_5090`, and a link is offered only where some row is stored.
"""

from __future__ import annotations

from .models import Run, names_for


def resolve(code: str, stored: list[str] | None = None) -> list[str]:
    """The stored experiment names `code` names: itself, and every stored name that extends it with `_…`.

    >>> resolve("exp10", ["exp10_5090", "exp13", "exp31", "exp31_audit"])
    ['exp10_5090']
    >>> resolve("exp31", ["exp31", "exp31_audit", "exp32"])
    ['exp31', 'exp31_audit']
    >>> resolve("exp01", ["exp10_5090"])
    []
    """
    if not (code or "").strip():
        return []
    return names_for(code, stored_experiments() if stored is None else stored)


def stored_experiments() -> list[str]:
    """Every experiment name some stored run carries (one DISTINCT query over the small runs table)."""
    return Run.objects.experiment_names()


def runs_url(code: str, stored: list[str] | None = None) -> str:
    """The run browser filtered to `code`, or '' when no stored run belongs to it (no link to an empty page)."""
    from urllib.parse import urlencode

    if not resolve(code, stored):
        return ""
    return f"/benchmarks/runs/?{urlencode({'experiment': code})}"
