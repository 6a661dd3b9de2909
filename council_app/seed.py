"""Load the council record from fixtures/council.json: creates missing rows, never duplicates or overwrites."""

import json
from pathlib import Path

from django.conf import settings
from django.db import transaction

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
from .services import bump_revision

FIXTURE = Path(settings.BASE_DIR) / "fixtures" / "council.json"
BENCH_FIXTURE = Path(settings.BASE_DIR) / "fixtures" / "council_bench.json"  # bench/council.py --fixture
FORMAT = "eqlm-portal/council-record@1"


class Counter:
    def __init__(self):
        self.created = 0
        self.kept = 0

    def add(self, pair):
        obj, created = pair
        if created:
            self.created += 1
        else:
            self.kept += 1
        return obj


@transaction.atomic
def load(data: dict) -> Counter:
    """Create every row of the record that is missing; rows already present (perhaps edited) are kept."""
    if data.get("format") != FORMAT:
        raise ValueError(f"fixtures/council.json has format {data.get('format')!r}, expected {FORMAT!r}")
    count = Counter()
    record = data["record"]
    count.add(CouncilRecord.objects.get_or_create(slug=record["slug"], defaults=record))
    players = {}
    for row in data["players"]:
        fields = {
            k: ("" if v is None and k in ("source", "config_sha", "git_commit", "machine") else v)
            for k, v in row.items()
        }
        players[row["name"]] = count.add(Player.objects.get_or_create(name=row["name"], defaults=fields))
    rules = {row["key"]: count.add(Rule.objects.get_or_create(key=row["key"], defaults=row)) for row in data["rules"]}
    for domain, name in data["router"].items():
        count.add(RouterChoice.objects.get_or_create(domain=domain, defaults={"player": players[name]}))
    for block in data["seeds"]:
        seed, created = Seed.objects.get_or_create(seed=block["seed"], defaults={"n_tasks": block["n_tasks"]})
        count.add((seed, created))
        if created:
            count.created += _bulk_create_seed(seed, block, rules, players)
        else:
            _complete_seed(count, seed, block, rules, players)
    for row in data["baselines"]:
        count.add(FairBaseline.objects.get_or_create(key=row["key"], defaults=row))
    if count.created:
        bump_revision()  # bulk inserts send no signals
    return count


def _accuracy_lookup(acc: dict, rules: dict, players: dict) -> dict:
    return {"rule": rules[acc["rule"]]} if "rule" in acc else {"player": players[acc["player"]]}


def _bulk_create_seed(seed: Seed, block: dict, rules: dict, players: dict) -> int:
    """A seed that did not exist has no rows under it yet: insert them in bulk (the common, first-run path)."""
    accuracies = [
        Accuracy(seed=seed, domain=a["domain"], value=a["value"], n=a["n"], **_accuracy_lookup(a, rules, players))
        for a in block["accuracies"]
    ]
    Accuracy.objects.bulk_create(accuracies)
    created = len(accuracies)
    if block.get("anchored"):
        AnchoredSeed.objects.create(seed=seed, **block["anchored"])
        created += 1
    SampleQuestion.objects.bulk_create(
        [SampleQuestion(seed=seed, index=q["index"], domain=q["domain"]) for q in block["questions"]]
    )
    by_index = {q.index: q for q in SampleQuestion.objects.filter(seed=seed)}
    rule_outcomes, player_outcomes = [], []
    for q in block["questions"]:
        question = by_index[q["index"]]
        for key, outcome in q["rules"].items():
            rule_outcomes.append(
                RuleOutcome(
                    question=question,
                    rule=rules[key],
                    winner=players[outcome["winner"]],
                    correct=outcome["correct"],
                )
            )
        for name, correct in q["players"].items():
            player_outcomes.append(PlayerOutcome(question=question, player=players[name], correct=correct))
    RuleOutcome.objects.bulk_create(rule_outcomes)
    PlayerOutcome.objects.bulk_create(player_outcomes)
    return created + len(by_index) + len(rule_outcomes) + len(player_outcomes)


def _complete_seed(count: Counter, seed: Seed, block: dict, rules: dict, players: dict) -> None:
    """A seed already present: create only the rows that are missing, keeping every existing (edited) row."""
    have_acc = set(seed.accuracies.values_list("domain", "rule_id", "player_id"))
    for acc in block["accuracies"]:
        who = _accuracy_lookup(acc, rules, players)
        key = (acc["domain"], who["rule"].pk if "rule" in who else None, who["player"].pk if "player" in who else None)
        if key in have_acc:
            count.kept += 1
        else:
            count.add(
                (Accuracy.objects.create(seed=seed, domain=acc["domain"], value=acc["value"], n=acc["n"], **who), True)
            )
    if block.get("anchored"):
        count.add(AnchoredSeed.objects.get_or_create(seed=seed, defaults=block["anchored"]))
    questions = {q.index: q for q in seed.questions.all()}
    have_rules = set(RuleOutcome.objects.filter(question__seed=seed).values_list("question_id", "rule_id"))
    have_players = set(PlayerOutcome.objects.filter(question__seed=seed).values_list("question_id", "player_id"))
    for q in block["questions"]:
        question = questions.get(q["index"])
        if question is None:
            question = SampleQuestion.objects.create(seed=seed, index=q["index"], domain=q["domain"])
            count.created += 1
        else:
            count.kept += 1
        for key, outcome in q["rules"].items():
            if (question.pk, rules[key].pk) in have_rules:
                count.kept += 1
                continue
            RuleOutcome.objects.create(
                question=question, rule=rules[key], winner=players[outcome["winner"]], correct=outcome["correct"]
            )
            count.created += 1
        for name, correct in q["players"].items():
            if (question.pk, players[name].pk) in have_players:
                count.kept += 1
                continue
            PlayerOutcome.objects.create(question=question, player=players[name], correct=correct)
            count.created += 1


def load_bench(path: Path = BENCH_FIXTURE) -> int:
    """The live council's measured rows (benchmark result rows, experiment local-council); 0 when none are shipped."""
    if not path.is_file():
        return 0
    from results.records import ingest_records

    records = json.loads(path.read_text())["records"]
    return ingest_records(records, source_name="fixtures/council_bench.json")


def seed(path: Path | None = None) -> str:
    data = json.loads((path or FIXTURE).read_text())
    count = load(data)
    bench = load_bench() if path is None else 0
    return (
        f"council record: {count.created} rows created, {count.kept} already present; "
        f"live council bench: {bench} new result rows"
    )
