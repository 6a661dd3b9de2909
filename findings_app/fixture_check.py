"""Compare fixtures/findings.yaml with the programme's facts sheet (../shared/findings/facts.json).

Facts (dates, statuses, figures, provenance, links) must match exactly; the prose must be the portal's
own, so a title or summary copied from the facts sheet is reported too.
"""

import difflib
import json
from pathlib import Path

from .models import Theme

EXACT_FIELDS = ["date", "date_basis", "status", "status_raw", "theme_note", "verdict_note"]
LIST_FIELDS = ["hypotheses", "research_questions", "experiments", "specs_adrs", "config_hashes", "commits"]
LINK_FIELDS = ["supersedes", "superseded_by", "corrects", "corrected_by", "related"]
THEME_BY_LABEL = {label.lower(): value for value, label in Theme.choices}
# Near-copies: a rewording must differ by more than a few words.
MAX_TITLE_SIMILARITY = 0.9
MAX_SUMMARY_SIMILARITY = 0.8


def read_facts(shared_dir: Path) -> list[dict]:
    with open(Path(shared_dir) / "findings" / "facts.json", encoding="utf-8") as handle:
        return json.load(handle)


def normalised(text: str) -> str:
    return " ".join(str(text).lower().split())


def copied(own: str, theirs: str, max_similarity: float) -> bool:
    """Whether `own` is the facts sheet's wording: equal, containing it, or a near-copy of it."""
    own, theirs = normalised(own), normalised(theirs)
    if own == theirs or theirs in own:
        return True
    return difflib.SequenceMatcher(None, own, theirs).ratio() > max_similarity


def compare(fixture: dict, facts: list[dict]) -> list[str]:
    """Every disagreement between the fixture and the facts sheet, as readable lines (empty: they agree)."""
    problems = []
    ours = {entry["code"]: entry for entry in fixture["findings"]}
    theirs = {fact["id"]: fact for fact in facts}
    for code in sorted(set(theirs) - set(ours)):
        problems.append(f"{code}: in facts.json but missing from the fixture")
    for code in sorted(set(ours) - set(theirs)):
        problems.append(f"{code}: in the fixture but not in facts.json")
    for code in sorted(set(ours) & set(theirs)):
        problems.extend(f"{code}: {line}" for line in _compare_one(ours[code], theirs[code]))
    return problems


def _compare_one(entry: dict, fact: dict) -> list[str]:
    problems = []
    for field in EXACT_FIELDS:
        if str(entry.get(field) or "") != str(fact.get(field) or ""):
            problems.append(f"{field} is {entry.get(field)!r}, facts say {fact.get(field)!r}")
    if (entry.get("tarka_verdict") or None) != (fact.get("tarka") or None):
        problems.append(f"tarka_verdict is {entry.get('tarka_verdict')!r}, facts say {fact.get('tarka')!r}")
    if entry.get("theme") != THEME_BY_LABEL.get(fact["theme"].lower()):
        problems.append(f"theme is {entry.get('theme')!r}, facts say {fact['theme']!r}")
    figures = [(f["name"], f["value"], f["context"]) for f in entry.get("figures", [])]
    expected = [(f["name"], f["value"], f["context"]) for f in fact["figures"]]
    for missing in [item for item in expected if item not in figures]:
        problems.append(f"figure {missing[0]!r} = {missing[1]!r} ({missing[2]!r}) missing or altered")
    for extra in [item for item in figures if item not in expected]:
        problems.append(f"figure {extra[0]!r} = {extra[1]!r} is not in facts.json")
    for field in LIST_FIELDS:
        if entry.get("provenance", {}).get(field, []) != fact.get(field, []):
            problems.append(f"provenance {field} differs: {entry.get('provenance', {}).get(field)!r}")
    for field in LINK_FIELDS:
        if entry.get("links", {}).get(field, []) != fact.get(field, []):
            problems.append(f"links {field} differ: {entry.get('links', {}).get(field)!r}")
    if copied(entry["title"], fact["title"], MAX_TITLE_SIMILARITY):
        problems.append("title is copied from facts.json; write it in the portal's own words")
    if copied(entry["summary"], fact["summary"], MAX_SUMMARY_SIMILARITY):
        problems.append("summary is copied from facts.json; write it in the portal's own words")
    if normalised(fact["summary"]) in normalised(entry.get("body", "")):
        problems.append("body contains the facts summary verbatim")
    return problems
