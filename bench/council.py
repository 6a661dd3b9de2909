"""The live council on held-out MIXED text: bits/byte of each member, logit averaging, the equilibrium, an oracle.

Usage: .venv/bin/python bench/council.py [--members eqlm-demo eqlm-code] [--models-dir DIR] [--passages 48]
       [--passages-512 24] [--record] [--fixture PATH]

The mixed text interleaves 128-byte passages of the KJV held-out slice and of the held-out code (the last 5% of each
corpus, as eqlm.corpus.split cuts it) in a seeded order, scored in windows of the members' context (a window holds a
domain switch). Every byte is scored by each member alone, by logit averaging (beta = 0), by the equilibrium at the
default controls and over a beta x tau grid, and by a routing oracle that picks the better member per passage (an
upper reference, not a decoder); per domain and overall, with the cost per token against one member.

Memory: the fixed-share Bayesian mixture (the reputation-weighted arithmetic mean of the members' distributions) as
a baseline, and the council with memory (w_i = softmax_i(beta <y, l_i> + log pi_i)) over a beta x share grid, run
over the whole text in order (a row with the memory reset at each window shows what carrying it buys). Controls are
chosen on a TUNING mix cut from the training side, then judged on the held-out 128-byte mix, a 512-byte mix and each
domain alone. Targets: beat the oracle (128-byte mix) and the mixture (both), within 0.05 of the oracle (512) and of
the matching member on each domain, at most 1.2x today's council per token.

--record stores the figures as result rows (experiment "local-council"); --fixture writes records that `manage.py
seed` loads (fixtures/council_bench.json). Each record's condition names its mix; the held-out 128-byte mix keeps its
arm labels, the other mixes' arms end in the mix.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from eqlm import corpus  # noqa: E402
from eqlm.council import (  # noqa: E402
    CouncilGenerator,
    Kinetic,
    equilibrium,
    fixed_share_mixture,
    fixed_share_reputations,
    window_log_probs,
)
from eqlm.generation import GenerationRequest, Generator  # noqa: E402
from eqlm.provenance import git_commit  # noqa: E402

LN2 = math.log(2)
EXPERIMENT = "local-council"
PASSAGE = 128
LONG_PASSAGE = 512
BETAS = (0.5, 2.0, 8.0)
TAUS = (0.0, 0.5)
MEMORY_BETAS = (0.0, 0.5, 2.0)
SHARES = (0.001, 0.002, 0.005, 0.01, 0.02, 0.05)
HELDOUT = "heldout-128"  # the mix whose arms keep their plain labels
MIX_TITLES = {
    "heldout-128": "held-out mix, 128-byte passages",
    "heldout-512": "held-out mix, 512-byte passages",
    "tuning-128": "tuning mix (training side), 128-byte passages",
    "pure-kjv": "held-out KJV alone",
    "pure-code": "held-out code alone",
}


def passages(text: bytes, count: int, length: int = PASSAGE) -> list[bytes]:
    """`count` passages spread evenly over the text (deterministic)."""
    stride = max(length, (len(text) - length) // max(count, 1))
    return [text[i : i + length] for i in range(0, len(text) - length + 1, stride)][:count]


def mixed_stream(kjv: list[bytes], code: list[bytes], seed: int) -> tuple[bytes, np.ndarray, np.ndarray]:
    """The interleaved text, and for every byte its domain (0 KJV, 1 code) and passage index."""
    items = [(0, p) for p in kjv] + [(1, p) for p in code]
    order = np.random.default_rng(seed).permutation(len(items))
    data, domain, passage = b"", [], []
    for n, k in enumerate(order):
        dom, text = items[k]
        data += text
        domain += [dom] * len(text)
        passage += [n] * len(text)
    return data, np.asarray(domain), np.asarray(passage)


def oracle(nlls: list[np.ndarray], passage: np.ndarray, domain: np.ndarray) -> np.ndarray:
    """Per-byte losses of the better member per passage (chosen on the passage's whole loss)."""
    stacked = np.stack(nlls)
    best = np.empty_like(nlls[0])
    for p in np.unique(passage):
        at = passage == p
        best[at] = stacked[int(np.argmin(stacked[:, at].sum(axis=1))), at]
    return best


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


def arm_label(label: str, mix: str) -> str:
    return label if mix == HELDOUT else f"{label} · {MIX_TITLES[mix]}"


class Mix:
    """One text scored in windows: its windows, each scored byte's domain and passage, the members' log-probs."""

    def __init__(self, name: str, data: bytes, domain: np.ndarray, passage: np.ndarray, members, depth, window):
        self.name = name
        arr = np.frombuffer(data, dtype=np.uint8).astype(np.int64)
        n = (len(arr) // window) * window
        windows = arr[:n].reshape(-1, window)
        self.targets = windows[:, 1:]
        # labels of the scored bytes (each window's first byte is context only)
        self.dom = domain[:n].reshape(-1, window)[:, 1:].ravel()
        self.psg = passage[:n].reshape(-1, window)[:, 1:].ravel()
        lps = [window_log_probs(g, windows[:, :-1], depth or g.default_depth) for g in members]
        self.stacked = np.stack(lps, axis=-2)  # [B, T, M, V]
        self.member_nll = [self.nll_of(lp) for lp in lps]
        # each member's log-probability of every scored byte [B, T, M], in text order
        self.seen = np.take_along_axis(self.stacked, self.targets[..., None, None], -1)[..., 0]
        self.domains = [(name, d) for name, d in (("kjv", 0), ("code", 1)) if (self.dom == d).any()]

    def nll_of(self, log_y: np.ndarray) -> np.ndarray:
        return -np.take_along_axis(log_y, self.targets[..., None], -1)[..., 0].ravel()

    def scores(self, nll: np.ndarray) -> dict[str, float]:
        """Bits/byte per domain and overall (`mixed` only for a text that holds both domains)."""
        out = {"mixed": float(nll.mean() / LN2)} if len(self.domains) == 2 else {}
        for name, d in self.domains:
            out[name] = float(nll[self.dom == d].mean() / LN2)
        return out

    def reputations(self, share: float, carried: bool = True) -> np.ndarray:
        """Log pi before each scored byte [B, T, M]: over the whole text in order, or from uniform in each window."""
        if not carried:
            return fixed_share_reputations(self.seen, share)[..., :-1, :]
        flat = fixed_share_reputations(self.seen.reshape(-1, self.seen.shape[-1]), share)[:-1]
        return flat.reshape(self.seen.shape)


def score_mix(mix: Mix, ids: list[str], grid: bool, memory: tuple[float, float] | None, mixture_share: float | None):
    """Rows (arm, figures, extra) for one mix. grid: the beta x tau and beta x share grids too; memory: the
    council with memory at (beta, share); mixture_share: the fixed-share mixture at that share (else every share)."""
    rows: list[tuple[str, dict, dict]] = []
    for member_id, nll in zip(ids, mix.member_nll, strict=True):
        rows.append((f"{member_id} alone", mix.scores(nll), {}))

    def game(label: str, log_reputation=None, **controls) -> None:
        started = time.perf_counter()
        eq = equilibrium(mix.stacked, log_reputation=log_reputation, **controls)
        seconds = time.perf_counter() - started
        weights = eq.weights.reshape(-1, len(ids))
        extra = {
            "mean_iterations": float(eq.iterations.mean()),
            "converged_fraction": float(eq.converged.mean()),
            "solve_seconds": seconds,
        }
        for name, d in mix.domains:
            extra[f"mean_weights_{name}"] = [float(x) for x in weights[mix.dom == d].mean(axis=0)]
        if log_reputation is not None:
            pi = np.exp(log_reputation).reshape(-1, len(ids))
            for name, d in mix.domains:
                extra[f"mean_reputations_{name}"] = [float(x) for x in pi[mix.dom == d].mean(axis=0)]
        rows.append((label, mix.scores(mix.nll_of(eq.log_y)), extra))

    def mixture(share: float, label: str) -> None:
        log_y = fixed_share_mixture(mix.stacked, mix.reputations(share))
        rows.append((label, mix.scores(mix.nll_of(log_y)), {"share": share}))

    game("average (beta=0)", beta=0.0, tau=0.0)
    game("equilibrium (defaults)")
    if grid:
        for beta in BETAS:
            for tau in TAUS:
                if (beta, tau) != (2.0, 0.0):
                    game(f"equilibrium beta={beta:g} tau={tau:g}", beta=beta, tau=tau)
    if mixture_share is not None:
        mixture(mixture_share, f"fixed-share mixture (share={mixture_share:g})")
    else:
        for share in SHARES:
            mixture(share, f"fixed-share mixture share={share:g}")
    if memory is not None:
        beta, share = memory
        game(f"memory (defaults: beta={beta:g} share={share:g})", mix.reputations(share), beta=beta)
        game(f"memory reset per window (beta={beta:g} share={share:g})", mix.reputations(share, False), beta=beta)
    if grid:
        for share in SHARES:
            log_pi = mix.reputations(share)
            for beta in MEMORY_BETAS:
                game(f"memory beta={beta:g} share={share:g}", log_pi, beta=beta)
    rows.append(("oracle (better member per passage)", mix.scores(oracle(mix.member_nll, mix.psg, mix.dom)), {}))
    return rows


def best_arm(rows, prefix: str) -> str:
    """The arm with the lowest mixed bits/byte among those whose label starts with prefix."""
    return min((r for r in rows if r[0].startswith(prefix)), key=lambda r: r[1]["mixed"])[0]


def label_value(label: str, key: str) -> float:
    return float(label.split(f"{key}=")[1].split()[0].rstrip(")"))


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
    window = min(g.max_positions for g in members)
    long_count = long_passages_per_domain or max(1, passages_per_domain // 2)

    kjv_data, kjv_sha = corpus.load_corpus()
    code_data, code_sha = corpus.load_code_corpus()
    kjv_train, kjv_held = corpus.split(kjv_data)
    code_train, code_held = corpus.split(code_data)

    def mixed(kjv: bytes, code: bytes, count: int, length: int, name: str) -> Mix:
        data, domain, passage = mixed_stream(passages(kjv, count, length), passages(code, count, length), seed)
        return Mix(name, data, domain, passage, members, depth, window)

    def pure(text: bytes, d: int, name: str) -> Mix:
        parts = passages(text, passages_per_domain)
        data = b"".join(parts)
        passage = np.repeat(np.arange(len(parts)), [len(p) for p in parts])
        return Mix(name, data, np.full(len(data), d), passage, members, depth, window)

    # the tuning mix: the same cut from the training side (its passages never overlap the held-out slices)
    tuning = mixed(kjv_train, code_train, passages_per_domain, PASSAGE, "tuning-128")
    results = {"tuning-128": score_mix(tuning, ids, grid=True, memory=None, mixture_share=None)}
    chosen = best_arm(results["tuning-128"], "memory beta=")
    beta, share = label_value(chosen, "beta"), label_value(chosen, "share")
    mixture_share = label_value(best_arm(results["tuning-128"], "fixed-share mixture share="), "share")

    mixes = {
        "heldout-128": mixed(kjv_held, code_held, passages_per_domain, PASSAGE, "heldout-128"),
        "heldout-512": mixed(kjv_held, code_held, long_count, LONG_PASSAGE, "heldout-512"),
        "pure-kjv": pure(kjv_held, 0, "pure-kjv"),
        "pure-code": pure(code_held, 1, "pure-code"),
    }
    for name, mix in mixes.items():
        results[name] = score_mix(mix, ids, grid=name == HELDOUT, memory=(beta, share), mixture_share=mixture_share)
    mixes["tuning-128"] = tuning

    prompts = [line[:24] for line in kjv_held.decode("utf-8", "replace").splitlines() if len(line) > 40]
    prompts = prompts[:timing_prompts]
    timing = interleaved_times(
        {
            "single": members[0],
            "council": CouncilGenerator(members, Kinetic()),
            "memory": CouncilGenerator(members, Kinetic(beta=beta, memory="fixed_share", share=share)),
        },
        prompts,
        timing_tokens,
        depth,
    )
    timing["ratio"] = timing["council"] / timing["single"]
    timing["memory_vs_council"] = timing["memory"] / timing["council"]

    def figure(mix: str, prefix: str, domain: str = "mixed") -> float:
        return next(r for r in results[mix] if r[0].startswith(prefix))[1][domain]

    rows = results[HELDOUT]
    best_member = min(r[1]["mixed"] for r in rows[: len(ids)])
    average = figure(HELDOUT, "average (beta=0)")
    default = figure(HELDOUT, "equilibrium (defaults)")
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

    report = {
        "members": ids,
        "corpora": {"kjv_sha256": kjv_sha, "code_sha256": code_sha, "code_corpus": corpus.CODE_CORPUS_NAME},
        "passages_per_domain": passages_per_domain,
        "long_passages_per_domain": long_count,
        "passage_bytes": PASSAGE,
        "window": window,
        "scored_bytes": {"mixed": int(mixes[HELDOUT].dom.size), **domain_bytes(mixes[HELDOUT])},
        "rows": [{"arm": label, "bits_per_byte": figures, **extra} for label, figures, extra in rows],
        "mixes": {
            name: {
                "title": MIX_TITLES[name],
                "passage_bytes": LONG_PASSAGE if name == "heldout-512" else PASSAGE,
                "scored_bytes": {
                    **({"mixed": int(mix.dom.size)} if len(mix.domains) == 2 else {}),
                    **domain_bytes(mix),
                },
                "rows": [{"arm": label, "bits_per_byte": figures, **extra} for label, figures, extra in results[name]],
            }
            for name, mix in mixes.items()
        },  # fmt: skip
        "chosen": {"beta": beta, "share": share, "mixture_share": mixture_share, "on": "tuning-128"},
        "ms_per_token": timing,
        "goal": {
            "equilibrium_beats_best_member": default < best_member,
            "equilibrium_beats_average": default < average,
        },
        "targets": targets,
        "load_average": os.getloadavg()[0],
    }
    return report


def domain_bytes(mix: Mix) -> dict[str, int]:
    return {name: int((mix.dom == d).sum()) for name, d in mix.domains}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--members", nargs="+", default=["eqlm-demo", "eqlm-code"], help="model ids (folders)")
    parser.add_argument("--models-dir", default=str(ROOT / "static" / "models"), help="one ONNX folder per id")
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
    args = parser.parse_args()

    members = [Generator(Path(args.models_dir) / m) for m in args.members]
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


def to_records(report: dict, members: list[Generator], label: str = "") -> list[dict]:
    """Long-format benchmark records (benchmarks_app.services.ingest_records)."""
    import hashlib

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
    from benchmarks_app.records import ingest_records

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
    decoders += [("memory reset per window", "memory reset per window"), ("oracle", "oracle")]
    return [(label, [value(mix, prefix, d) for mix, d in columns]) for label, prefix in decoders]


def print_report(report: dict) -> None:
    print(f"members: {', '.join(report['members'])}; window {report['window']}")
    for name, mix in report["mixes"].items():
        print(f"\n== {mix['title']} ({name}); scored bytes {mix['scored_bytes']}")
        print_rows(mix["rows"])
    chosen = report["chosen"]
    print(
        f"\nchosen on the tuning mix: memory beta={chosen['beta']:g} share={chosen['share']:g}; "
        f"fixed-share mixture share={chosen['mixture_share']:g}"
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


if __name__ == "__main__":
    raise SystemExit(main())
