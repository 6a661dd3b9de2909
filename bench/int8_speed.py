"""One reader's tokens/s at depth 12, fp32 against int8, on the full-size random-weight anytime model (120.7M
parameters; eqlm.programme.config.published_config), through the portal's own generator (eqlm.generation).

    .venv/bin/python bench/int8_speed.py [--folder DIR] [--tokens 16] [--threads 2] [--depth 12] [--json]

Builds the checkpoint and its export (fp32 and int8 graphs) in DIR (a temporary folder by default; an export already
there is reused), then for each precision greedy-generates `--tokens` tokens from a short prompt, after one warm-up
run, and reports the best and the median of `--runs` runs. It prints the load average before and after, since the
figures depend on it.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

PROMPT = "The cat that the dogs chased"


def export(folder: Path) -> Path:
    """The full-size anytime model's export with int8 graphs, in folder/onnx (reused when already there)."""
    out = folder / "onnx"
    if (out / "manifest.json").exists() and "int8" in json.loads((out / "manifest.json").read_text())["precisions"]:
        return out
    import torch

    from eqlm.export_programme import export_programme_onnx
    from eqlm.programme.config import PUBLISHED_SIZES, published_config
    from eqlm.programme.model import build_programme_model

    model_class, _, n_layers, _ = PUBLISHED_SIZES["anytime"]
    torch.manual_seed(0)
    model = build_programme_model(published_config("anytime"), model_class, n_layers)
    export_programme_onnx(model, out, model_id="anytime-random", int8=True)
    return out


def tokens_per_second(onnx_dir: Path, precision: str, tokens: int, depth: int, threads: int, runs: int) -> dict:
    from eqlm.generation import GenerationRequest, Generator

    generator = Generator(onnx_dir, threads=threads, precision=precision)
    request = GenerationRequest(prompt=PROMPT, max_tokens=tokens, depth=depth, temperature=0.0)
    generator.generate(request)  # warm-up
    rates, text = [], ""
    for _ in range(runs):
        started = time.perf_counter()
        result = generator.generate(request)
        rates.append(result.completion_tokens / (time.perf_counter() - started))
        text = result.text
    rates.sort()
    return {
        "precision": precision,
        "tokens_per_s": round(rates[-1], 2),
        "median_tokens_per_s": round(rates[len(rates) // 2], 2),
        "text": text,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--folder", default=None)
    parser.add_argument("--tokens", type=int, default=16)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--depth", type=int, default=12)
    parser.add_argument("--runs", type=int, default=3, help="timed runs after one warm-up (best and median shown)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    folder = Path(args.folder) if args.folder else Path(tempfile.mkdtemp(prefix="int8-speed-"))
    started = time.perf_counter()
    onnx_dir = export(folder)
    export_s = time.perf_counter() - started
    load_before = os.getloadavg()
    rows = [tokens_per_second(onnx_dir, p, args.tokens, args.depth, args.threads, args.runs) for p in ("fp32", "int8")]
    report = {
        "depth": args.depth,
        "tokens": args.tokens,
        "threads": args.threads,
        "export_s": round(export_s, 1),
        "rows": rows,
        "int8_over_fp32": round(rows[1]["tokens_per_s"] / rows[0]["tokens_per_s"], 2),
        "load_before": [round(x, 2) for x in load_before],
        "load_after": [round(x, 2) for x in os.getloadavg()],
    }
    if args.json:
        print(json.dumps(report))
        return
    for row in rows:
        print(
            f"{row['precision']:>5}: {row['tokens_per_s']:7.2f} tokens/s at depth {args.depth} (best of {args.runs}; "
            f"median {row['median_tokens_per_s']:.2f})"
        )
    print(f"int8 / fp32: {report['int8_over_fp32']}x; load average before {report['load_before']}, after "
          f"{report['load_after']}")  # fmt: skip


if __name__ == "__main__":
    main()
