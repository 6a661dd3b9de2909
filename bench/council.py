"""The live council on held-out MIXED text: bits/byte of each member, logit averaging, the equilibrium, an oracle.

Usage: .venv/bin/python bench/council.py [--members eqlm-demo eqlm-code] [--models-dir DIR] [--passages 48]
       [--record] [--fixture PATH]

The mixed text interleaves passages (128 bytes each) of the KJV held-out slice (the last 5% of the corpus, as
eqlm.corpus.split cuts it) with passages of the held-out code (the last 5% of eqlm.corpus.load_code_corpus()), in a
seeded order; it is scored in windows of the members' context (each window's first byte is context only), so a
window holds a domain switch. Every byte is scored by each member alone at its default depth (or --depth), by plain
logit averaging (beta = 0), by the equilibrium at the default controls and over a small beta x tau grid, and by a
routing oracle that picks the better member per passage (an upper reference, not a decoder). Reported per domain and
overall, with the cost: greedy decoding time per token of the council against one member.

--record stores the figures as benchmark result rows (experiment "local-council") in the portal's database;
--fixture writes them as records that `manage.py seed` loads (fixtures/council_bench.json).
Goal: the equilibrium scores better bits/byte on the mixed text than either member and than averaging.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from eqlm import corpus  # noqa: E402
from eqlm.council import CouncilGenerator, Kinetic, equilibrium, window_log_probs  # noqa: E402
from eqlm.generation import GenerationRequest, Generator  # noqa: E402

LN2 = math.log(2)
EXPERIMENT = "local-council"
PASSAGE = 128
BETAS = (0.5, 2.0, 8.0)
TAUS = (0.0, 0.5)


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


def git_commit() -> str:
    try:
        return subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    except OSError:
        return ""


def scores(nll: np.ndarray, domain: np.ndarray) -> dict[str, float]:
    """Bits/byte per domain and overall from per-byte negative log-likelihoods (nats)."""
    out = {"mixed": float(nll.mean() / LN2)}
    for name, d in (("kjv", 0), ("code", 1)):
        out[name] = float(nll[domain == d].mean() / LN2)
    return out


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


def measure(
    members: list[Generator],
    ids: list[str],
    passages_per_domain: int = 48,
    seed: int = 0,
    depth: int | None = None,
    timing_prompts: int = 3,
    timing_tokens: int = 24,
) -> dict:
    """Score the mixed held-out text with every decoder and time the council against its first member."""
    window = min(g.max_positions for g in members)

    kjv_data, kjv_sha = corpus.load_corpus()
    code_data, code_sha = corpus.load_code_corpus()
    kjv_held = corpus.split(kjv_data)[1]
    code_held = corpus.split(code_data)[1]
    data, domain, passage = mixed_stream(
        passages(kjv_held, passages_per_domain), passages(code_held, passages_per_domain), seed
    )
    arr = np.frombuffer(data, dtype=np.uint8).astype(np.int64)
    n = (len(arr) // window) * window
    windows = arr[:n].reshape(-1, window)
    targets = windows[:, 1:]
    # labels of the scored bytes (each window's first byte is context only)
    dom = domain[:n].reshape(-1, window)[:, 1:].ravel()
    psg = passage[:n].reshape(-1, window)[:, 1:].ravel()

    lps = [window_log_probs(g, windows[:, :-1], depth or g.default_depth) for g in members]
    stacked = np.stack(lps, axis=-2)  # [B, T, M, V]

    def nll_of(log_y: np.ndarray) -> np.ndarray:
        return -np.take_along_axis(log_y, targets[..., None], -1)[..., 0].ravel()

    rows: list[tuple[str, dict, dict]] = []  # (arm label, figures, extra)
    member_nll = [nll_of(lp) for lp in lps]
    for member_id, nll in zip(ids, member_nll, strict=True):
        rows.append((f"{member_id} alone", scores(nll, dom), {}))

    def game(label: str, **controls) -> None:
        started = time.perf_counter()
        eq = equilibrium(stacked, **controls)
        seconds = time.perf_counter() - started
        figures = scores(nll_of(eq.log_y), dom)
        weights = eq.weights.reshape(-1, len(ids))
        extra = {
            "mean_iterations": float(eq.iterations.mean()),
            "converged_fraction": float(eq.converged.mean()),
            "solve_seconds": seconds,
        }
        for name, d in (("kjv", 0), ("code", 1)):
            extra[f"mean_weights_{name}"] = [float(x) for x in weights[dom == d].mean(axis=0)]
        rows.append((label, figures, extra))

    game("average (beta=0)", beta=0.0, tau=0.0)
    game("equilibrium (defaults)")
    for beta in BETAS:
        for tau in TAUS:
            if (beta, tau) != (2.0, 0.0):
                game(f"equilibrium beta={beta:g} tau={tau:g}", beta=beta, tau=tau)
    rows.append(("oracle (better member per passage)", scores(oracle(member_nll, psg, dom), dom), {}))

    prompts = [line[:24] for line in kjv_held.decode("utf-8", "replace").splitlines() if len(line) > 40]
    prompts = prompts[:timing_prompts]
    single_ms = time_per_token(members[0], prompts, timing_tokens, depth)
    council_ms = time_per_token(CouncilGenerator(members, Kinetic()), prompts, timing_tokens, depth)

    best_member = min(r[1]["mixed"] for r in rows[: len(ids)])
    average = next(r for r in rows if r[0] == "average (beta=0)")[1]["mixed"]
    default = next(r for r in rows if r[0] == "equilibrium (defaults)")[1]["mixed"]
    report = {
        "members": ids,
        "corpora": {"kjv_sha256": kjv_sha, "code_sha256": code_sha, "code_corpus": corpus.CODE_CORPUS_NAME},
        "passages_per_domain": passages_per_domain,
        "passage_bytes": PASSAGE,
        "window": window,
        "scored_bytes": {"mixed": int(dom.size), "kjv": int((dom == 0).sum()), "code": int((dom == 1).sum())},
        "rows": [{"arm": label, "bits_per_byte": figures, **extra} for label, figures, extra in rows],
        "ms_per_token": {"single": single_ms, "council": council_ms, "ratio": council_ms / single_ms},
        "goal": {
            "equilibrium_beats_best_member": default < best_member,
            "equilibrium_beats_average": default < average,
        },
        "load_average": os.getloadavg()[0],
    }
    return report


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--members", nargs="+", default=["eqlm-demo", "eqlm-code"], help="model ids (folders)")
    parser.add_argument("--models-dir", default=str(ROOT / "static" / "models"), help="one ONNX folder per id")
    parser.add_argument("--passages", type=int, default=48, help="passages per domain")
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
        members, list(args.members), args.passages, args.seed, args.depth, args.timing_prompts, args.timing_tokens
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
    for row in report["rows"]:
        for domain, value in row["bits_per_byte"].items():
            out.append({**base, "arm": row["arm"], "metric": "bits_per_byte", "value": value, "unit": "bits/byte",
                        "n": report["scored_bytes"][domain], "condition": {"domain": domain}})  # fmt: skip
        if "mean_iterations" in row:
            out.append({**base, "arm": row["arm"], "metric": "equilibrium_iterations", "value": row["mean_iterations"],
                        "unit": "iterations", "n": report["scored_bytes"]["mixed"], "condition": {}})  # fmt: skip
        for domain in ("kjv", "code"):
            for i, weight in enumerate(row.get(f"mean_weights_{domain}", [])):
                condition = {"domain": domain, "member_index": i, "member": ids[i]}
                out.append({**base, "arm": row["arm"], "metric": "mean_weight", "value": weight, "unit": "fraction",
                            "n": report["scored_bytes"][domain], "condition": condition})  # fmt: skip
    timing = report["ms_per_token"]
    out.append({**base, "arm": f"{ids[0]} alone", "metric": "ms_per_token", "value": timing["single"], "unit": "ms",
                "condition": {}})  # fmt: skip
    out.append({**base, "arm": "equilibrium (defaults)", "metric": "ms_per_token", "value": timing["council"],
                "unit": "ms", "condition": {}})  # fmt: skip
    return out


def record(records: list[dict]) -> int:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "portal.settings")
    import django

    django.setup()
    from benchmarks_app.records import ingest_records

    return ingest_records(records, source_name=f"bench:council:{records[0]['run']}")


def print_report(report: dict) -> None:
    print(f"members: {', '.join(report['members'])}; scored bytes {report['scored_bytes']}; window {report['window']}")
    print(f"{'condition':40} {'mixed':>7} {'kjv':>7} {'code':>7}  iters  weights kjv / code")
    for row in report["rows"]:
        b = row["bits_per_byte"]
        iters = f"{row['mean_iterations']:5.1f}" if "mean_iterations" in row else "     "
        weights = ""
        if "mean_weights_kjv" in row:
            weights = " / ".join(
                "(" + ", ".join(f"{w:.2f}" for w in row[f"mean_weights_{d}"]) + ")" for d in ("kjv", "code")
            )
        print(f"{row['arm']:40} {b['mixed']:7.4f} {b['kjv']:7.4f} {b['code']:7.4f}  {iters}  {weights}")
    t = report["ms_per_token"]
    print(f"time per token: one member {t['single']:.2f} ms, council {t['council']:.2f} ms (x{t['ratio']:.2f})")
    goal = report["goal"]
    print(
        f"goal: equilibrium < best member: {'holds' if goal['equilibrium_beats_best_member'] else 'MISSED'}; "
        f"equilibrium < averaging: {'holds' if goal['equilibrium_beats_average'] else 'MISSED'} "
        f"(load average {report['load_average']:.1f})"
    )


if __name__ == "__main__":
    raise SystemExit(main())
