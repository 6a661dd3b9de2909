"""bench/council.py's records and printout: the long-format result rows `--record`/`--fixture` store, and the tables.

Kept apart from the measuring so that each file stays short; bench/council.py imports these names.
"""

from __future__ import annotations

import hashlib
import json
import os
from typing import TYPE_CHECKING

from eqlm.provenance import git_commit

if TYPE_CHECKING:
    from eqlm.generation import Generator

EXPERIMENT = "local-council"
PASSAGE = 128
HELDOUT = "heldout-128"  # the mix whose arms keep their plain labels
MIX_TITLES = {
    "heldout-128": "held-out mix, 128-byte passages",
    "heldout-512": "held-out mix, 512-byte passages",
    "tuning-128": "tuning mix (training side), 128-byte passages",
    "pure-kjv": "held-out KJV alone",
    "pure-code": "held-out code alone",
}


def arm_label(label: str, mix: str) -> str:
    return label if mix == HELDOUT else f"{label} · {MIX_TITLES[mix]}"


def to_records(report: dict, members: list[Generator], label: str = "") -> list[dict]:
    """Long-format benchmark records (results.records.ingest_records)."""
    ids = report["members"]
    graphs = [
        {role: hashlib.sha256((g.model.onnx_dir / name).read_bytes()).hexdigest() for role, name in sorted(
            (r, n) for r, n in g.manifest["graphs"].items() if r in ("embed", "step", "head"))}
        for g in members
    ]  # fmt: skip
    config = json.dumps({"members": ids, "graphs": graphs, **report["corpora"]}, sort_keys=True)
    config_hash = hashlib.sha256(config.encode()).hexdigest()[:16]
    base = {
        "run": f"{EXPERIMENT}:{'+'.join(ids)}:{config_hash}" + (f":{label}" if label else ""),
        "experiment": EXPERIMENT,
        "seed": None,
        "step": None,
        "model_family": "eqlm_council",
        "config_hash": config_hash,
        "git_commit": git_commit()[:64],
    }
    out = []
    mixes = report.get("mixes") or {HELDOUT: {"rows": report["rows"], "scored_bytes": report["scored_bytes"]}}
    for mix, result in mixes.items():  # the held-out 128-byte mix first: its arms lead the table
        passage_bytes = result.get("passage_bytes", PASSAGE)
        scored = result["scored_bytes"]
        for row in result["rows"]:
            arm = arm_label(row["arm"], mix)
            about = {"mix": mix, "passage_bytes": passage_bytes, "decoder": row["arm"]}
            for domain, value in row["bits_per_byte"].items():
                out.append({**base, "arm": arm, "metric": "bits_per_byte", "value": value, "unit": "bits/byte",
                            "n": scored[domain], "condition": {"domain": domain, **about}})  # fmt: skip
            if "mean_iterations" in row:
                out.append({**base, "arm": arm, "metric": "equilibrium_iterations", "value": row["mean_iterations"],
                            "unit": "iterations", "n": sum(scored[d] for d in ("kjv", "code") if d in scored),
                            "condition": about})  # fmt: skip
            for kind in ("weight", "reputation"):
                for domain in ("kjv", "code"):
                    for i, value in enumerate(row.get(f"mean_{kind}s_{domain}", [])):
                        condition = {"domain": domain, "member_index": i, "member": ids[i], **about}
                        out.append({**base, "arm": arm, "metric": f"mean_{kind}", "value": value, "unit": "fraction",
                                    "n": scored[domain], "condition": condition})  # fmt: skip
    timing = report["ms_per_token"]
    memory_arm = next((r["arm"] for r in report["rows"] if r["arm"].startswith("memory (defaults")), None)
    timed = [(f"{ids[0]} alone", "single"), ("equilibrium (defaults)", "council"), (memory_arm, "memory")]
    for arm, key in timed:
        if arm is not None and key in timing:
            out.append({**base, "arm": arm, "metric": "ms_per_token", "value": timing[key], "unit": "ms",
                        "condition": {"mix": "timing", "decoder": arm}})  # fmt: skip
    return out


def record(records: list[dict]) -> int:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "portal.settings")
    import django

    django.setup()
    from results.records import ingest_records

    return ingest_records(records, source_name=f"bench:council:{records[0]['run']}")


def print_rows(rows: list[dict]) -> None:
    print(f"{'condition':52} {'mixed':>7} {'kjv':>7} {'code':>7}  iters  weights kjv / code")
    for row in rows:
        b = row["bits_per_byte"]
        iters = f"{row['mean_iterations']:5.1f}" if "mean_iterations" in row else "     "
        weights = " / ".join(
            "(" + ", ".join(f"{w:.2f}" for w in row[f"mean_weights_{d}"]) + ")"
            for d in ("kjv", "code")
            if f"mean_weights_{d}" in row
        )
        cells = " ".join(f"{b[d]:7.4f}" if d in b else f"{'':7}" for d in ("mixed", "kjv", "code"))
        print(f"{row['arm']:52} {cells}  {iters}  {weights}")


def summary_table(report: dict) -> list[tuple[str, list[float | None]]]:
    """The decoders with and without memory on the held-out mixes and on each domain alone (bits/byte)."""
    mixes = report["mixes"]
    columns = [("heldout-128", "mixed"), ("heldout-512", "mixed"), ("pure-kjv", "kjv"), ("pure-code", "code")]

    def value(mix: str, prefix: str, domain: str) -> float | None:
        row = next((r for r in mixes[mix]["rows"] if r["arm"].startswith(prefix)), None)
        return None if row is None else row["bits_per_byte"].get(domain)

    decoders = [(f"{m} alone", f"{m} alone") for m in report["members"]]
    decoders += [("average (beta=0)", "average (beta=0)"), ("today's equilibrium (defaults)", "equilibrium (defaults)")]
    decoders += [("fixed-share mixture", "fixed-share mixture"), ("council with memory (defaults)", "memory (defaults")]
    decoders += [
        ("memory, the other pool's best", "memory (other pool"),
        ("memory reset per window", "memory reset per window"),
    ]
    decoders += [("oracle", "oracle")]
    return [(label, [value(mix, prefix, d) for mix, d in columns]) for label, prefix in decoders]


def print_report(report: dict) -> None:
    print(f"members: {', '.join(report['members'])}; window {report['window']}")
    for name, mix in report["mixes"].items():
        print(f"\n== {mix['title']} ({name}); scored bytes {mix['scored_bytes']}")
        print_rows(mix["rows"])
    c, other = report["chosen"], report["chosen"]["runner_up"]
    tuned = c.get("tuned", c)
    print(
        f"\nserved defaults: memory pool={c['pool']} beta={c['beta']:g} share={c['share']:g} "
        f"learning_rate={c['learning_rate']:g}; best on the tuning mix: share={tuned['share']:g} "
        f"learning_rate={tuned['learning_rate']:g} (the {other['pool']} pool's best: beta={other['beta']:g} "
        f"share={other['share']:g} learning_rate={other['learning_rate']:g}); "
        f"fixed-share mixture share={c['mixture_share']:g}"
    )
    print(f"\n{'decoder':34} {'mixed128':>9} {'mixed512':>9} {'pure KJV':>9} {'pure code':>9}")
    for label, values in summary_table(report):
        print(f"{label:34} " + " ".join(f"{v:9.4f}" if v is not None else f"{'':9}" for v in values))
    t = report["ms_per_token"]
    print(
        f"time per token: one member {t['single']:.2f} ms, today's council {t['council']:.2f} ms (x{t['ratio']:.2f}), "
        f"council with memory {t['memory']:.2f} ms (x{t['memory_vs_council']:.2f} today's council)"
    )
    goal = report["goal"]
    print(
        f"goal: equilibrium < best member: {'holds' if goal['equilibrium_beats_best_member'] else 'MISSED'}; "
        f"equilibrium < averaging: {'holds' if goal['equilibrium_beats_average'] else 'MISSED'} "
        f"(load average {report['load_average']:.1f})"
    )
    for target, ok in report["targets"].items():
        print(f"target: {target}: {'holds' if ok else 'MISSED'}")
    for mix, pairs in report.get("intervals", {}).items():
        for name, i in pairs.items():
            print(
                f"{mix}: memory {name.replace('_', ' ')}: {i['difference']:+.4f} bits/byte, 95% interval "
                f"[{i['low']:+.4f}, {i['high']:+.4f}] over {i['passages']} resampled passages (paired)"
            )
