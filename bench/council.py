"""The live council on held-out MIXED text: bits/byte of each member, logit averaging, the equilibrium, an oracle.

Usage: .venv/bin/python bench/council.py [--members eqlm-demo-anytime eqlm-code] [--models-dir DIR] [--passages 48]
       [--passages-512 24] [--record] [--fixture PATH]
       .venv/bin/python bench/council.py --defaults [--prompts 10] [--max-tokens 32] [--kinetic JSON] [--mixed]
       [--json PATH]

The mixed text interleaves 128-byte passages of the KJV held-out slice and of the held-out code (the last 5% of each
corpus, as eqlm.corpus.split cuts it) in a seeded order, scored in windows of the members' context (a window holds a
domain switch). Every byte is scored by each member alone, by logit averaging (beta = 0), by the equilibrium at the
default controls and over a beta x tau grid, and by a routing oracle that picks the better member per passage (an
upper reference, not a decoder); per domain and overall, with the cost per token against one member.

Memory: the fixed-share Bayesian mixture (the reputation-weighted arithmetic mean of the members' distributions) as
a baseline, and the council with memory (w_i = softmax_i(beta <y, l_i> + log pi_i)) over a pool x beta x share grid
(the geometric pool, ADR 0008's game, and the arithmetic pool y = sum_i w_i(y) p_i), then over the reputation's
learning rate x share at each pool's best beta, run over the whole text in order (a row with the memory reset at
each window shows what carrying it buys). Controls are chosen on a TUNING mix cut from the training side, then
judged on the held-out 128-byte mix, a 512-byte mix and each domain alone, beside the best of the other pool.
Targets: beat the oracle (128-byte mix) and the mixture (both), within 0.05 of the oracle (512) and of the matching
member on each domain, at most 1.2x today's council per token.

--defaults measures instead the served council at its default controls against its best member on that member's
own ground, through the API (bench/council_defaults.py: 10 KJV and 10 code prompts, bare and chat-framed).

The texts and decoders are bench/council_mix.py's, the records and printout bench/council_report.py's.
--record stores the figures as result rows (experiment "local-council"); --fixture writes records that `manage.py
seed` loads (fixtures/council_bench.json). Each record's condition names its mix; the held-out 128-byte mix keeps its
arm labels, the other mixes' arms end in the mix.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.council_mix import (  # noqa: E402
    LONG_PASSAGE,
    Mix,
    best_arm,
    domain_bytes,
    label_controls,
    label_value,
    memory_grid,
    memory_intervals,
    memory_rows,
    mixed_stream,
    passages,
    score_mix,
)
from bench.council_report import EXPERIMENT as EXPERIMENT  # noqa: E402
from bench.council_report import HELDOUT, MIX_TITLES, PASSAGE, print_report, record, to_records  # noqa: E402
from bench.council_report import arm_label as arm_label  # noqa: E402
from eqlm import corpus  # noqa: E402
from eqlm.council import MEMORY_DEFAULTS, POOLS, CouncilGenerator, Kinetic  # noqa: E402
from eqlm.generation import GenerationRequest, Generator  # noqa: E402


def time_per_token(generator, prompts: list[str], tokens: int, depth: int | None) -> float:
    started = time.perf_counter()
    count = 0
    for prompt in prompts:
        result = generator.generate(GenerationRequest(prompt=prompt, max_tokens=tokens, depth=depth))
        count += result.completion_tokens
    return (time.perf_counter() - started) / count * 1000


def interleaved_times(generators: dict, prompts: list[str], tokens: int, depth: int | None, rounds: int = 3) -> dict:
    """ms/token of each generator, the fastest of `rounds` rounds taken in turn (a shared machine's load moves)."""
    times: dict[str, list[float]] = {name: [] for name in generators}
    for _ in range(rounds):
        for name, generator in generators.items():
            times[name].append(time_per_token(generator, prompts, tokens, depth))
    return {name: min(values) for name, values in times.items()}


def build_mixes(members, texts: tuple[bytes, bytes], counts: tuple[int, int], seed: int, depth) -> dict[str, Mix]:
    """The held-out 128- and 512-byte mixes, each held-out domain alone, and the tuning mix (cut from the training
    side: its passages never overlap the held-out slices), scored in windows of the members' context. `texts`: the
    KJV and code corpora; `counts`: passages per domain in the 128-byte mixes and in the 512-byte mix."""
    window = min(g.max_positions for g in members)
    passages_per_domain, long_count = counts
    kjv_train, kjv_held = corpus.split(texts[0])
    code_train, code_held = corpus.split(texts[1])

    def mixed(kjv: bytes, code: bytes, count: int, length: int, name: str) -> Mix:
        data, domain, passage = mixed_stream(passages(kjv, count, length), passages(code, count, length), seed)
        return Mix(name, data, domain, passage, members, depth, window)

    def pure(text: bytes, d: int, name: str) -> Mix:
        parts = passages(text, passages_per_domain)
        data = b"".join(parts)
        passage = np.repeat(np.arange(len(parts)), [len(p) for p in parts])
        return Mix(name, data, np.full(len(data), d), passage, members, depth, window)

    return {
        "heldout-128": mixed(kjv_held, code_held, passages_per_domain, PASSAGE, "heldout-128"),
        "heldout-512": mixed(kjv_held, code_held, long_count, LONG_PASSAGE, "heldout-512"),
        "pure-kjv": pure(kjv_held, 0, "pure-kjv"),
        "pure-code": pure(code_held, 1, "pure-code"),
        "tuning-128": mixed(kjv_train, code_train, passages_per_domain, PASSAGE, "tuning-128"),
    }


def tune(tuning: Mix, ids: list[str]) -> tuple[list, dict, float]:
    """The tuning mix's rows (every grid, then the learning rate at each pool's best beta, beside the oracle's
    row), the memory configs scored on the held-out mixes, and the fixed-share mixture's best share."""
    rows = score_mix(tuning, ids, grid=True, memory={}, mixture_share=None)
    betas = {pool: label_controls(best_arm(rows, "memory beta=", pool=pool))["beta"] for pool in POOLS}
    rows[-1:-1] = memory_rows(tuning, ids, memory_grid(betas))
    tuned = label_controls(best_arm(rows, "memory beta="))
    other = next(pool for pool in POOLS if pool != tuned["pool"])
    # "defaults" are the served ones (eqlm.council.MEMORY_DEFAULTS), which trade some of the mix's score for greedy
    # generation that stays in the prompt's domain (bench/council.py --defaults); the mix's own optimum beside them,
    # and the other pool at its own best controls
    memory = {
        "defaults": {k: MEMORY_DEFAULTS[k] for k in ("beta", "share", "pool", "learning_rate")},
        "tuned on the mix": tuned,
        "other pool": label_controls(best_arm(rows, "memory beta=", pool=other)),
    }
    return rows, memory, label_value(best_arm(rows, "fixed-share mixture share="), "share")


def timings(members, chosen: dict, held: bytes, count: int, tokens: int, depth: int | None) -> dict:
    """ms/token of one member, the council and the council with memory, on KJV prompts; and their ratios."""
    prompts = [line[:24] for line in held.decode("utf-8", "replace").splitlines() if len(line) > 40][:count]
    generators = {
        "single": members[0],
        "council": CouncilGenerator(members, Kinetic()),
        "memory": CouncilGenerator(members, Kinetic(memory="fixed_share", **chosen)),
    }
    timing = interleaved_times(generators, prompts, tokens, depth)
    timing["ratio"] = timing["council"] / timing["single"]
    timing["memory_vs_council"] = timing["memory"] / timing["council"]
    return timing


def targets_met(results: dict, ids: list[str], timing: dict) -> dict[str, bool]:
    def figure(mix: str, prefix: str, domain: str = "mixed") -> float:
        return next(r for r in results[mix] if r[0].startswith(prefix))[1][domain]

    targets = {}
    for mix in ("heldout-128", "heldout-512"):
        with_memory, oracle_figure = figure(mix, "memory (defaults"), figure(mix, "oracle")
        targets[f"{mix}: memory beats the fixed-share mixture"] = with_memory < figure(mix, "fixed-share mixture")
        if mix == "heldout-128":
            targets[f"{mix}: memory beats the oracle"] = with_memory < oracle_figure
        else:
            targets[f"{mix}: memory within 0.05 of the oracle"] = with_memory <= oracle_figure + 0.05
    for mix, domain in (("pure-kjv", "kjv"), ("pure-code", "code")):
        gap = figure(mix, "memory (defaults", domain) - min(figure(mix, f"{m} alone", domain) for m in ids)
        targets[f"{mix}: memory within 0.05 of the better member"] = gap <= 0.05
    targets["memory costs at most 1.2x today's council per token"] = timing["memory_vs_council"] <= 1.2
    return targets


def rows_out(rows) -> list[dict]:
    return [{"arm": label, "bits_per_byte": figures, **extra} for label, figures, extra in rows]


def measure(
    members: list[Generator],
    ids: list[str],
    passages_per_domain: int = 48,
    seed: int = 0,
    depth: int | None = None,
    timing_prompts: int = 3,
    timing_tokens: int = 24,
    long_passages_per_domain: int | None = None,
) -> dict:
    """Score the mixes with every decoder and time the council (without and with memory) against its first member."""
    long_count = long_passages_per_domain or max(1, passages_per_domain // 2)
    (kjv, kjv_sha), (code, code_sha) = corpus.load_corpus(), corpus.load_code_corpus()
    mixes = build_mixes(members, (kjv, code), (passages_per_domain, long_count), seed, depth)
    tuning_rows, memory, mixture_share = tune(mixes["tuning-128"], ids)
    chosen = memory["defaults"]
    results = {"tuning-128": tuning_rows}
    for name in ("heldout-128", "heldout-512", "pure-kjv", "pure-code"):
        results[name] = score_mix(mixes[name], ids, grid=name == HELDOUT, memory=memory, mixture_share=mixture_share)
    timing = timings(members, chosen, corpus.split(kjv)[1], timing_prompts, timing_tokens, depth)
    rows = results[HELDOUT]
    default = next(r for r in rows if r[0].startswith("equilibrium (defaults)"))[1]["mixed"]
    average = next(r for r in rows if r[0].startswith("average (beta=0)"))[1]["mixed"]
    return {
        "members": ids,
        "corpora": {"kjv_sha256": kjv_sha, "code_sha256": code_sha, "code_corpus": corpus.CODE_CORPUS_NAME},
        "passages_per_domain": passages_per_domain,
        "long_passages_per_domain": long_count,
        "passage_bytes": PASSAGE,
        "window": min(g.max_positions for g in members),
        "scored_bytes": {"mixed": int(mixes[HELDOUT].dom.size), **domain_bytes(mixes[HELDOUT])},
        "rows": rows_out(rows),
        "mixes": {
            name: {
                "title": MIX_TITLES[name],
                "passage_bytes": LONG_PASSAGE if name == "heldout-512" else PASSAGE,
                "scored_bytes": {
                    **({"mixed": int(mix.dom.size)} if len(mix.domains) == 2 else {}),
                    **domain_bytes(mix),
                },  # fmt: skip
                "rows": rows_out(results[name]),
            }
            for name, mix in mixes.items()
        },
        "chosen": {
            **chosen,
            "mixture_share": mixture_share,
            "on": "served defaults (eqlm.council.MEMORY_DEFAULTS)",
            "tuned": memory["tuned on the mix"],
            "runner_up": memory["other pool"],
        },  # fmt: skip
        "ms_per_token": timing,
        "goal": {
            "equilibrium_beats_best_member": default < min(r[1]["mixed"] for r in rows[: len(ids)]),
            "equilibrium_beats_average": default < average,
        },
        "targets": targets_met(results, ids, timing),
        "intervals": {mix: memory_intervals(mixes[mix], chosen, mixture_share) for mix in (HELDOUT, "heldout-512")},
        "load_average": os.getloadavg()[0],
    }


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if "--defaults" in argv:  # the served council at its defaults against its members, through the API
        from bench import council_defaults

        return council_defaults.main([a for a in argv if a != "--defaults"])
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--defaults", action="store_true", help="measure the served defaults instead (see above)")
    parser.add_argument("--members", nargs="+", default=["eqlm-demo-anytime", "eqlm-code"], help="model ids (folders)")
    parser.add_argument("--models-dir", default=str(ROOT / "models"), help="one folder <id>/onnx/ per id")
    parser.add_argument("--passages", type=int, default=48, help="passages per domain (128-byte mixes)")
    parser.add_argument("--passages-512", type=int, default=24, help="passages per domain (512-byte mix)")
    parser.add_argument("--depth", type=int, default=None, help="member depth (default: each member's own)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--timing-prompts", type=int, default=3)
    parser.add_argument("--timing-tokens", type=int, default=24)
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--record", action="store_true", help="store result rows in the portal's database")
    parser.add_argument("--fixture", default=None, help="write the result records to this JSON file")
    parser.add_argument("--label", default="", help="appended to the run id (e.g. interim-step-400)")
    args = parser.parse_args(argv)

    members = [Generator(Path(args.models_dir) / m / "onnx") for m in args.members]
    report = measure(
        members,
        list(args.members),
        args.passages,
        args.seed,
        args.depth,
        args.timing_prompts,
        args.timing_tokens,
        args.passages_512,
    )
    records = to_records(report, members, args.label)
    if args.fixture:
        Path(args.fixture).write_text(json.dumps({"records": records}, indent=1) + "\n")
    if args.record:
        print(f"stored {record(records)} new result rows (experiment {EXPERIMENT!r})", file=sys.stderr)
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        print_report(report)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
