"""Normalising the record's provenance strings ("exp01 (exp01_mmd_vs_gda, iteration 2)") into a code and a note.

Pure functions, no Django. The string as recorded is always kept beside the code; the code is what
filters and links use (`?experiment=exp01`, `/benchmarks/runs/?experiment=exp01`).
"""

import re
from dataclasses import dataclass
from urllib.parse import urlencode

# Descriptive names the record gives to numbered experiments: the same experiment, not a separate run.
EXPERIMENT_ALIASES = {
    "exp01_mmd_vs_gda": "exp01",
    "exp02_qre_homotopy": "exp02",
    "exp03_deq_solvers": "exp03",
    "exp04_auction_truthfulness": "exp04",
    "exp05_eqlm_pretrain": "exp05",
    "exp08_solver_aware": "exp08",
    "exp09_adaptive": "exp09",
}
_EXPERIMENT_CODE = re.compile(r"^exp\d{2}[a-z]?(?:_[a-z0-9]+)*$")
# A run named after a seed (exp05_full_v4_s43, exp13_seed42) belongs to the experiment without the suffix.
_SEED_SUFFIX = re.compile(r"^(?P<base>exp\d{2}[a-z]?(?:_[a-z0-9]+)*?)_s(?:eed)?(?P<seed>\d+)$")
# A run folder named in the aside ("exp10 (exp10_5090 seeds 42/43/44)") is more precise than the bare number.
_RUN_IN_ASIDE = re.compile(r"^(exp\d{2}[a-z]?_[a-z0-9_]*\d[a-z0-9_]*)\b")
_ASIDE = re.compile(r"^(?P<head>[^(]+?)\s*\((?P<aside>.*)\)\s*$")
BENCHMARK_RUNS_URL = "/benchmarks/runs/"


@dataclass(frozen=True)
class Provenance:
    """One provenance entry: `code` is empty when the record names nothing a filter could use."""

    code: str
    note: str
    recorded_as: str


def split_aside(recorded: str) -> tuple[str, str]:
    """'RQ-6 (Tier A)' -> ('RQ-6', 'Tier A'); text without a trailing aside comes back whole."""
    match = _ASIDE.match(recorded.strip())
    if not match:
        return recorded.strip(), ""
    return match["head"].strip(), match["aside"].strip()


def normalise_experiment(recorded: str) -> Provenance:
    """The experiment code a recorded string names, plus the rest of the string as a note.

    >>> normalise_experiment("exp01 (exp01_mmd_vs_gda, iteration 2)")
    Provenance(code='exp01', note='exp01_mmd_vs_gda, iteration 2', recorded_as='exp01 (exp01_mmd_vs_gda, iteration 2)')
    >>> normalise_experiment("exp10 (exp10_5090 seeds 42/43/44)").code
    'exp10_5090'
    >>> parsed = normalise_experiment("exp05_full_v4_s43")
    >>> parsed.code, parsed.note
    ('exp05_full_v4', 'seed 43')
    >>> normalise_experiment("damage sweep (results/scale/damage_sweep.json)").code
    ''
    """
    head, aside = split_aside(recorded)
    token = head.split()[0].lower() if head else ""
    if not _EXPERIMENT_CODE.match(token) or " " in head:
        return Provenance(code="", note=recorded.strip(), recorded_as=recorded)
    code = EXPERIMENT_ALIASES.get(token, token)
    run = _RUN_IN_ASIDE.match(aside)
    if run and run[1].startswith(code + "_"):
        code = run[1]
    seeded = _SEED_SUFFIX.match(code)
    if seeded:
        code = seeded["base"]
        aside = "; ".join(part for part in (f"seed {seeded['seed']}", aside) if part)
    return Provenance(code=code, note=aside, recorded_as=recorded)


def normalise_reference(recorded: str) -> Provenance:
    """Hypotheses, research questions, specs/ADRs, hashes and commits: code, then any aside as the note.

    A hash or commit the record truncated ('e1c1efdd…') keeps its prefix as the code.
    """
    head, aside = split_aside(recorded)
    code = head.rstrip("…").strip()
    if head.endswith("…") and not aside:
        aside = "truncated in the record"
    return Provenance(code=code, note=aside, recorded_as=recorded)


def benchmark_runs_url(code: str) -> str:
    """The benchmarks page listing the runs of one experiment (a plain URL: that page may not exist yet)."""
    return f"{BENCHMARK_RUNS_URL}?{urlencode({'experiment': code})}"
