#!/usr/bin/env python
"""Build fixtures/council.json (the portal's own normalized council record) from the programme's web-data files.

Usage:  .venv/bin/python scripts/build_council_fixture.py [WEB_DATA_DIR] [-o fixtures/council.json]

WEB_DATA_DIR defaults to <SHARED_DIR>/anchor-results/web-data (SHARED_DIR from the environment, else ../shared).
It reads council.json and leaderboard.json there and copies every value unchanged; it computes nothing.
Run it once when the record changes and commit the output; the raw files stay outside the repository.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # run as a script: the portal's own field names, read without Django
    sys.path.insert(0, str(ROOT))

from council_app.fields import ANCHORED_MARGINS, PLAYER_LADDER  # noqa: E402

FORMAT = "eqlm-portal/council-record@1"

# The portal's own words for each rule; keys are the record's.
RULES = [
    ("majority", "Majority vote", "Every player answers and the most common answer is taken."),
    (
        "equilibrium",
        "Equilibrium (influence game)",
        "Answers are weighted by the equilibrium of an influence game among the players, in which a player's "
        "influence grows with the agreement it receives from the others.",
    ),
    (
        "cross_exam",
        "Cross-examination",
        "Each player writes a full solution and the players price one another's candidates; the best-priced "
        "candidate is taken.",
    ),
    (
        "leave_one_out",
        "Leave-one-out pricing",
        "Candidates are priced by what the council's verdict loses when their author is left out.",
    ),
    (
        "self_preference",
        "Self-preference",
        "A pricing variant in which players may favour their own candidate.",
    ),
    (
        "oracle",
        "Oracle (any player right)",
        "Right whenever at least one player is right. A ceiling that no real rule can reach, not a usable rule.",
    ),
]

BASELINES = {
    "baseline_single_greedy": "Designated single model, greedy",
    "council_system": "Council: domain router with majority-vote fallback",
    "self_consistency_k2": "Self-consistency, k = 2",
    "self_consistency_k3": "Self-consistency, k = 3",
    "self_consistency_k5": "Self-consistency, k = 5",
    "capacity_matched_7b_greedy": "Single 7B model, greedy (capacity-matched)",
}


def short(name: str) -> str:
    return name.rsplit("/", 1)[-1]


def _ladder(council: dict, players: list[str], leaderboard: list[dict]) -> dict:
    """The leaderboard rows by model; ValueError when a seed lists other players or a row is not a player's."""
    for seed in council["seeds"]:
        if seed["players"] != players:
            raise ValueError(f"seed {seed['seed']} lists different players: {seed['players']}")
    ladder = {row["model_name"]: row for row in leaderboard}
    unknown = set(ladder) - {short(p) for p in players}
    if unknown:
        raise ValueError(f"leaderboard rows for models that are not council players: {sorted(unknown)}")
    return ladder


def _recorded_rules(council: dict) -> set[str]:
    """The rules recorded per question; ValueError when a seed names an unknown rule."""
    rule_keys = {key for key, _, _ in RULES}
    recorded_rules = set()
    for seed in council["seeds"]:
        for question in seed["sample"]:
            recorded_rules |= set(question["winners"])
    for seed in council["seeds"]:
        for key in seed["accuracy"]:
            if not key.startswith("single::") and key not in rule_keys:
                raise ValueError(f"unknown rule {key!r} on seed {seed['seed']}")
    return recorded_rules


def _anchored(anchored: dict | None) -> dict | None:
    """A seed's anchored confirmation (margins, paired test, decomposition, per-domain figures), or None."""
    if not anchored:
        return None
    return {
        **{name: anchored[name] for name in ANCHORED_MARGINS},
        "paired_wins": anchored["paired_vs_plain"]["wins"],
        "paired_losses": anchored["paired_vs_plain"]["losses"],
        "paired_z": anchored["paired_vs_plain"]["z"],
        "decomposition": anchored.get("decomposition", {}),
        "math_mechanism": anchored["per_domain"]["math"]["mechanism"],
        "math_router": anchored["per_domain"]["math"]["router"],
        "general_mechanism": anchored["per_domain"]["general"]["mechanism"],
        "general_router": anchored["per_domain"]["general"]["router"],
    }


def _seed(seed: dict, council: dict) -> dict:
    """One seed: its accuracies (overall and per domain), its anchored confirmation and its sample questions."""
    accuracies = []
    for key, value in seed["accuracy"].items():
        who = {"player": key.split("::", 1)[1]} if key.startswith("single::") else {"rule": key}
        accuracies.append({"domain": "all", **who, "value": value, "n": seed["n_tasks"]})
    for domain, block in seed["per_domain"].items():
        for key, value in block.items():
            if key == "n":
                continue
            accuracies.append({"domain": domain, "rule": key, "value": value, "n": block["n"]})
    out_anchored = _anchored(council["anchored_confirmation"]["per_seed"].get(f"seed{seed['seed']}"))
    questions = [
        {
            "index": q["i"],
            "domain": q["domain"],
            "rules": {rule: {"winner": q["winners"][rule], "correct": q["correct"][rule]} for rule in q["winners"]},
            "players": dict(q["singles"]),
        }
        for q in seed["sample"]
    ]
    return {
        "seed": seed["seed"],
        "n_tasks": seed["n_tasks"],
        "accuracies": accuracies,
        "anchored": out_anchored,
        "questions": questions,
    }


def _baselines(fair: dict) -> list[dict]:
    """The fair baselines in the record's order, each with the council's paired wins and losses against it."""
    out_baselines = []
    for order, (key, accuracy) in enumerate(fair["accuracy"].items()):
        paired = fair["council_vs"].get(key, {})
        out_baselines.append(
            {
                "key": key,
                "label": BASELINES.get(key, key.replace("_", " ")),
                "order": order,
                "is_council": key == "council_system",
                "accuracy": accuracy,
                "generations_per_request": fair["generations_per_request"][key],
                "council_wins": paired.get("wins"),
                "council_losses": paired.get("losses"),
                "z": paired.get("z"),
            }
        )
    return out_baselines


def build(council: dict, leaderboard: list[dict]) -> dict:
    """The normalized record: every number copied from the two source files, nothing derived."""
    first = council["seeds"][0]
    players = list(first["players"])
    ladder = _ladder(council, players, leaderboard)
    recorded_rules = _recorded_rules(council)

    out_players = []
    for order, name in enumerate(players):
        row = {"name": name, "order": order}
        row.update({field: ladder.get(short(name), {}).get(field) for field in PLAYER_LADDER})
        out_players.append(row)
    out_seeds = [_seed(seed, council) for seed in council["seeds"]]
    fair = council["fair_baselines"]
    out_baselines = _baselines(fair)

    return {
        "format": FORMAT,
        "generated_from": ["anchor-results/web-data/council.json", "anchor-results/web-data/leaderboard.json"],
        "record": {
            "slug": "spec-0017-confirmation",
            "title": "Council confirmation arena (SPEC 0017, seeds 45–47)",
            "source": "game-llm results/web-data/council.json and leaderboard.json",
            "note": council.get("note", ""),
            "baselines_note": fair.get("note", ""),
            "baselines_n": fair["n"],
            "findings": list(council.get("findings", [])),
        },
        "players": out_players,
        "rules": [
            {
                "key": key,
                "label": label,
                "description": description,
                "order": order,
                "recorded_per_question": key in recorded_rules,
            }
            for order, (key, label, description) in enumerate(RULES)
        ],
        "router": dict(council["anchored_confirmation"]["router"]),
        "seeds": out_seeds,
        "baselines": out_baselines,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    default_shared = Path(os.environ.get("SHARED_DIR", ROOT.parent / "shared"))
    parser.add_argument("web_data", nargs="?", type=Path, default=default_shared / "anchor-results" / "web-data")
    parser.add_argument("-o", "--output", type=Path, default=ROOT / "fixtures" / "council.json")
    args = parser.parse_args(argv)
    council_path, leaderboard_path = args.web_data / "council.json", args.web_data / "leaderboard.json"
    for path in (council_path, leaderboard_path):
        if not path.is_file():
            print(f"missing {path}", file=sys.stderr)
            return 2
    record = build(json.loads(council_path.read_text()), json.loads(leaderboard_path.read_text()))
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(record, indent=1, ensure_ascii=False) + "\n")
    counts = sum(len(s["questions"]) for s in record["seeds"])
    print(f"wrote {args.output}: {len(record['seeds'])} seeds, {counts} sample questions")
    return 0


if __name__ == "__main__":
    sys.exit(main())
