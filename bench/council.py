"""The live council on held-out MIXED text: bits/byte of each member, logit averaging, the equilibrium, an oracle.

Usage: .venv/bin/python bench/council.py [--members eqlm-demo-anytime eqlm-code] [--models-dir DIR] [--passages 48]
       [--passages-512 24] [--record] [--fixture PATH]

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

from bench.council_report import EXPERIMENT as EXPERIMENT  # noqa: E402
from bench.council_report import HELDOUT, MIX_TITLES, PASSAGE, print_report, record, to_records  # noqa: E402
from bench.council_report import arm_label as arm_label  # noqa: E402
from eqlm import corpus  # noqa: E402
from eqlm.council import (  # noqa: E402
    MEMORY_DEFAULTS,
    POOLS,
    CouncilGenerator,
    Kinetic,
    equilibrium,
    window_log_probs,
)
from eqlm.council_memory import fixed_share_mixture, fixed_share_reputations  # noqa: E402
from eqlm.generation import GenerationRequest, Generator  # noqa: E402
from eqlm.units import mean_bits, mean_bits_of_sum  # noqa: E402

LONG_PASSAGE = 512
BETAS = (0.5, 2.0, 8.0)
TAUS = (0.0, 0.5)
MEMORY_BETAS = (0.0, 0.5, 2.0)
SHARES = (0.001, 0.002, 0.005, 0.01, 0.02, 0.05)
RATES = (0.25, 0.5, 0.75, 1.5)  # the reputation's learning rate beside 1 (Bayes' rule), tried at each pool's best beta


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
        self._reputations: dict[tuple, np.ndarray] = {}

    def nll_of(self, log_y: np.ndarray) -> np.ndarray:
        return -np.take_along_axis(log_y, self.targets[..., None], -1)[..., 0].ravel()

    def scores(self, nll: np.ndarray) -> dict[str, float]:
        """Bits/byte per domain and overall (`mixed` only for a text that holds both domains)."""
        out = {"mixed": mean_bits(nll)} if len(self.domains) == 2 else {}
        for name, d in self.domains:
            out[name] = mean_bits(nll[self.dom == d])
        return out

    def reputations(self, share: float, carried: bool = True, rate: float = 1.0) -> np.ndarray:
        """Log pi before each scored byte [B, T, M]: over the whole text in order, or from uniform in each window."""
        key = (share, carried, rate)
        if key not in self._reputations:
            if not carried:
                log_pi = fixed_share_reputations(self.seen, share, learning_rate=rate)[..., :-1, :]
            else:
                flat = self.seen.reshape(-1, self.seen.shape[-1])
                log_pi = fixed_share_reputations(flat, share, learning_rate=rate)[:-1].reshape(self.seen.shape)
            self._reputations[key] = log_pi
        return self._reputations[key]

    def memory(self, config: dict, carried: bool = True) -> np.ndarray:
        return self.reputations(config["share"], carried, config["learning_rate"])


def memory_label(config: dict) -> str:
    """The memory controls of an arm as its label spells them: "beta=0 share=0.02 rate=0.5 arithmetic" (short: an arm
    label, with its mix's title, holds at most 100 characters)."""
    beta, share, pool, rate = (config[k] for k in ("beta", "share", "pool", "learning_rate"))
    return f"beta={beta:g} share={share:g} rate={rate:g} {pool}"


def label_controls(label: str) -> dict:
    """The memory controls a label spells (memory_label's inverse)."""
    parts = [part.rstrip(")") for part in label.split()]
    found = dict(part.split("=", 1) for part in parts if "=" in part)
    return {
        "beta": float(found["beta"]),
        "share": float(found["share"]),
        "pool": next(part for part in parts if part in POOLS),
        "learning_rate": float(found["rate"]),
    }


def memory_grid(betas_by_pool: dict[str, float] | None = None) -> list[dict]:
    """The memory's grid: every pool x beta x share at learning rate 1; or, given each pool's beta, every other
    learning rate x share at it."""
    if betas_by_pool is None:
        return [
            {"pool": pool, "beta": beta, "share": share, "learning_rate": 1.0}
            for pool in POOLS
            for share in SHARES
            for beta in MEMORY_BETAS
        ]
    return [
        {"pool": pool, "beta": beta, "share": share, "learning_rate": rate}
        for pool, beta in betas_by_pool.items()
        for rate in RATES
        for share in SHARES
    ]


def game_row(mix: Mix, ids: list[str], label: str, log_reputation=None, **controls) -> tuple[str, dict, dict]:
    """One decoder's row: the game at these controls over the whole mix (arm, bits/byte, extra figures)."""
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
    return label, mix.scores(mix.nll_of(eq.log_y)), extra


def memory_rows(mix: Mix, ids: list[str], configs: list[dict]) -> list[tuple[str, dict, dict]]:
    """The council with memory at each config, labelled "memory beta=... share=... rate=... <pool>"."""
    return [
        game_row(mix, ids, f"memory {memory_label(c)}", mix.memory(c), beta=c["beta"], pool=c["pool"]) for c in configs
    ]


def score_mix(mix: Mix, ids: list[str], grid: bool, memory: dict[str, dict], mixture_share: float | None):
    """Rows (arm, figures, extra) for one mix. grid: the beta x tau and pool x beta x share grids too; memory: named
    configs of the council with memory ("defaults" also reset per window); mixture_share: the fixed-share mixture
    at that share (else every share)."""
    rows: list[tuple[str, dict, dict]] = []
    for member_id, nll in zip(ids, mix.member_nll, strict=True):
        rows.append((f"{member_id} alone", mix.scores(nll), {}))

    def mixture(share: float, label: str) -> None:
        log_y = fixed_share_mixture(mix.stacked, mix.reputations(share))
        rows.append((label, mix.scores(mix.nll_of(log_y)), {"share": share}))

    rows.append(game_row(mix, ids, "average (beta=0)", beta=0.0, tau=0.0))
    rows.append(game_row(mix, ids, "equilibrium (defaults)"))
    if grid:
        for beta in BETAS:
            for tau in TAUS:
                if (beta, tau) != (2.0, 0.0):
                    rows.append(game_row(mix, ids, f"equilibrium beta={beta:g} tau={tau:g}", beta=beta, tau=tau))
    if mixture_share is not None:
        mixture(mixture_share, f"fixed-share mixture (share={mixture_share:g})")
    else:
        for share in SHARES:
            mixture(share, f"fixed-share mixture share={share:g}")
    for name, c in memory.items():
        controls = {"beta": c["beta"], "pool": c["pool"]}
        rows.append(game_row(mix, ids, f"memory ({name}: {memory_label(c)})", mix.memory(c), **controls))
        if name == "defaults":
            label = "memory reset per window (defaults)"
            rows.append(game_row(mix, ids, label, mix.memory(c, carried=False), **controls))
    if grid:
        rows += memory_rows(mix, ids, memory_grid())
    rows.append(("oracle (better member per passage)", mix.scores(oracle(mix.member_nll, mix.psg, mix.dom)), {}))
    return rows


def paired_interval(mix: Mix, nll: np.ndarray, other: np.ndarray, draws: int = 2000, seed: int = 0) -> dict:
    """Bits/byte of nll minus other over the mix, with a 95% interval from resampling its passages (both decoders
    on the same resampled passages: a paired bootstrap)."""
    ids, at = np.unique(mix.psg, return_inverse=True)
    gaps = np.bincount(at, weights=nll - other, minlength=len(ids))
    counts = np.bincount(at, minlength=len(ids)).astype(float)
    pick = np.random.default_rng(seed).integers(0, len(ids), size=(draws, len(ids)))
    resampled = mean_bits_of_sum(gaps[pick].sum(axis=1), counts[pick].sum(axis=1))
    low, high = np.quantile(resampled, [0.025, 0.975])
    difference = mean_bits(nll - other)
    return {"difference": difference, "low": float(low), "high": float(high), "passages": len(ids)}


def memory_intervals(mix: Mix, chosen: dict, mixture_share: float) -> dict:
    """The council with memory at its defaults against the fixed-share mixture and the oracle, passage-paired."""
    eq = equilibrium(mix.stacked, log_reputation=mix.memory(chosen), beta=chosen["beta"], pool=chosen["pool"])
    memory = mix.nll_of(eq.log_y)
    mixture = mix.nll_of(fixed_share_mixture(mix.stacked, mix.reputations(mixture_share)))
    best = oracle(mix.member_nll, mix.psg, mix.dom)
    return {"minus_mixture": paired_interval(mix, memory, mixture), "minus_oracle": paired_interval(mix, memory, best)}


def best_arm(rows, prefix: str, **controls) -> str:
    """The arm with the lowest mixed bits/byte among those whose label starts with prefix (and, given controls,
    whose label spells them)."""

    def spells(label: str) -> bool:
        return all(label_controls(label)[k] == v for k, v in controls.items())

    chosen = [r for r in rows if r[0].startswith(prefix) and (not controls or spells(r[0]))]
    return min(chosen, key=lambda r: r[1]["mixed"])[0]


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
    rows = score_mix(tuning, ids, grid=True, memory={}, mixture_share=None)
    # the learning rate at each pool's best beta (at rate 1), beside the oracle's row
    betas = {pool: label_controls(best_arm(rows, "memory beta=", pool=pool))["beta"] for pool in POOLS}
    rows[-1:-1] = memory_rows(tuning, ids, memory_grid(betas))
    results = {"tuning-128": rows}
    tuned = label_controls(best_arm(rows, "memory beta="))
    other = next(pool for pool in POOLS if pool != tuned["pool"])
    runner_up = "other pool"  # the other pool at its own best controls, scored beside the defaults
    # "defaults" are the served ones (eqlm.council.MEMORY_DEFAULTS), which trade some of the mix's score for greedy
    # generation that stays in the prompt's domain (bench/council_defaults.py); the mix's own optimum is scored beside
    chosen = {k: MEMORY_DEFAULTS[k] for k in ("beta", "share", "pool", "learning_rate")}
    memory = {
        "defaults": chosen,
        "tuned on the mix": tuned,
        runner_up: label_controls(best_arm(rows, "memory beta=", pool=other)),
    }
    mixture_share = label_value(best_arm(rows, "fixed-share mixture share="), "share")

    mixes = {
        "heldout-128": mixed(kjv_held, code_held, passages_per_domain, PASSAGE, "heldout-128"),
        "heldout-512": mixed(kjv_held, code_held, long_count, LONG_PASSAGE, "heldout-512"),
        "pure-kjv": pure(kjv_held, 0, "pure-kjv"),
        "pure-code": pure(code_held, 1, "pure-code"),
    }
    for name, mix in mixes.items():
        results[name] = score_mix(mix, ids, grid=name == HELDOUT, memory=memory, mixture_share=mixture_share)
    mixes["tuning-128"] = tuning

    prompts = [line[:24] for line in kjv_held.decode("utf-8", "replace").splitlines() if len(line) > 40]
    prompts = prompts[:timing_prompts]
    timing = interleaved_times(
        {
            "single": members[0],
            "council": CouncilGenerator(members, Kinetic()),
            "memory": CouncilGenerator(members, Kinetic(memory="fixed_share", **chosen)),
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
    intervals = {mix: memory_intervals(mixes[mix], chosen, mixture_share) for mix in ("heldout-128", "heldout-512")}

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
        "chosen": {
            **chosen,
            "mixture_share": mixture_share,
            "on": "served defaults (eqlm.council.MEMORY_DEFAULTS)",
            "tuned": tuned,
            "runner_up": memory[runner_up],
        },
        "ms_per_token": timing,
        "goal": {
            "equilibrium_beats_best_member": default < best_member,
            "equilibrium_beats_average": default < average,
        },
        "targets": targets,
        "intervals": intervals,
        "load_average": os.getloadavg()[0],
    }
    return report


def domain_bytes(mix: Mix) -> dict[str, int]:
    return {name: int((mix.dom == d).sum()) for name, d in mix.domains}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
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
    args = parser.parse_args()

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
