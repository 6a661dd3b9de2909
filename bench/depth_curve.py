"""The depth curve of checkpoints: bits/byte by depth from zero, noise and warm starts, and path independence.

Usage: .venv/bin/python bench/depth_curve.py CHECKPOINT [CHECKPOINT ...] [--windows 24] [--whole]
       [--depths 1,2,4,8,12,16,24,32,48,64,96,128] [--starts zero,noise,warm] [--threads 1] [--json]

On the first --windows held-out windows of 256 bytes of the KJV corpus (eqlm.corpus.split: the last 5%), or on the
whole held-out slice with --whole, each checkpoint is solved by Picard from every start (eqlm/path_independence.py).
Printed per checkpoint: bits/byte at each depth from zero, the best depth, the largest excess over the best from the
best depth to the deepest ("overthinking"), depth 12 and depth 4 against the best, and per other start at the
deepest depth: the asymptotic-alignment (AA) cosine, the teacher-forced greedy agreement and the bits/byte there.
The depth-curve targets read from it: no overthinking (excess <= 0.01), fast settling (depth 12 within 0.03 of the
best), quality (best <= 2.18, depth 4 <= 2.35), path independence at depth 64 (AA >= 0.99, agreement >= 99%).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

DEFAULT_DEPTHS = "1,2,4,8,12,16,24,32,48,64,96,128"


def curve_summary(bpb: dict[int, float]) -> dict:
    """Best depth, overthinking (the largest excess over the best from the best depth on), and the shallow gaps."""
    best = min(bpb, key=bpb.get)
    excess = max(bpb[d] - bpb[best] for d in bpb if d >= best)
    return {
        "best_depth": best,
        "best": bpb[best],
        "overthinking": excess,
        "d12_gap": bpb[12] - bpb[best] if 12 in bpb else None,
        "d4": bpb.get(4),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("checkpoints", nargs="+")
    parser.add_argument("--windows", type=int, default=24)
    parser.add_argument("--whole", action="store_true", help="the whole held-out slice instead of --windows")
    parser.add_argument("--depths", default=DEFAULT_DEPTHS)
    parser.add_argument("--starts", default="zero,noise,warm")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()

    import torch

    from eqlm.checkpoint import load_checkpoint
    from eqlm.convergence import windows_of
    from eqlm.corpus import load_corpus, split
    from eqlm.path_independence import path_independence

    torch.set_num_threads(args.threads)
    _, heldout = split(load_corpus(None)[0])
    windows = windows_of(heldout, 257, None if args.whole else args.windows)
    depths = [int(d) for d in args.depths.split(",")]
    starts = tuple(args.starts.split(","))
    results = {}
    for path in args.checkpoints:
        model, data = load_checkpoint(path)
        figures = path_independence(model, windows, depths, starts=starts, seed=0)
        zero = figures.starts["zero"].bits_per_byte
        summary = curve_summary(zero)
        others = {
            s: {"aa_cosine": f.aa_cosine, "greedy_agreement": f.greedy_agreement, "bpb": f.bits_per_byte[depths[-1]]}
            for s, f in figures.starts.items()
            if s != "zero"
        }
        steps = data["provenance"].get("steps")
        results[path] = {"steps": steps, "bpb": zero, **summary, "starts": others, "positions": figures.positions}
        if not args.json:
            print(f"== {path} ({steps} steps; {figures.positions:,} positions)")
            print("   " + " ".join(f"d{d}={v:.3f}" for d, v in zero.items()))
            shallow = " ".join(
                f"{label} {value:.3f}"
                for label, value in (("d12 +", summary["d12_gap"]), ("d4", summary["d4"]))
                if value is not None
            )
            print(
                f"   best d{summary['best_depth']} {summary['best']:.3f}; "
                f"overthinking +{summary['overthinking']:.3f}; {shallow}"
            )
            for s, o in others.items():
                print(
                    f"   {s} @ d{depths[-1]}: AA {o['aa_cosine']:.4f}, agreement {100 * o['greedy_agreement']:.1f}%, "
                    f"bits/byte {o['bpb']:.3f}"
                )
    if args.json:
        print(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
