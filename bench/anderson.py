"""Anderson against Picard on a model: the same fixed point in fewer iterations? Both solvers in the same run.

Usage: .venv/bin/python bench/anderson.py [--model eqlm-demo] [--onnx-dir DIR] [--tol 0.01 0.001] [--cap 128]
       [--windows 16] [--heldout] [--prompts 34] [--tokens 25] [--json]

The runtime's Anderson (decoder.process) iterates every new position against its context's solved states (a secant
method needs the map to stay put) and mixes after limits.ANDERSON_PICARD_FIRST Picard iterations. The fair baseline
is Picard on the same map, so both are measured the same way: held-out windows of 256 bytes decoded one byte at a
time, teacher-forced, each position from zero against the settled context, halting on the residual at each tol
(cap 128). The reference is that decoding at fixed depth `cap` with Picard (the fixed point). Greedy generation
through the server's service (34 prompts x 25 tokens) adds Anderson's iterations per token beside cold Picard's
(the per-iteration cache) at the same tol, capped at the model's own max_depth.

The target (the depth issue's): Anderson reaches the same point, bits/byte within 0.01 of Picard's at the same tol,
in fewer iterations per position.
"""

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from decode import SLICE, decode, prompts_from_slice, settled_bits_per_byte  # noqa: E402

from eqlm import convergence as cv  # noqa: E402
from eqlm.evaluate import heldout_text  # noqa: E402
from eqlm.generation import Generator  # noqa: E402
from eqlm.limits import ANDERSON_PICARD_FIRST  # noqa: E402

SAME_POINT = 0.01  # bits/byte


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="eqlm-demo", help="a bundled model id (models/<id>/onnx/)")
    parser.add_argument("--onnx-dir", help="an exported model folder (overrides --model)")
    parser.add_argument("--tol", type=float, nargs="+", default=[0.01, 0.001])
    parser.add_argument("--cap", type=int, default=128)
    parser.add_argument("--windows", type=int, default=16, help="held-out windows of 256 bytes")
    parser.add_argument("--heldout", action="store_true", help="windows from the corpus's held-out slice")
    parser.add_argument("--prompts", type=int, default=34)
    parser.add_argument("--tokens", type=int, default=25)
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args()

    generator = Generator(Path(args.onnx_dir) if args.onnx_dir else ROOT / "models" / args.model / "onnx", threads=1)
    model = generator.model
    if args.heldout:
        text, source = heldout_text("heldout")
    else:
        text, source = SLICE.read_bytes(), str(SLICE.relative_to(ROOT))
    windows = cv.windows_of(text, model.max_positions, limit=args.windows)
    prompts = prompts_from_slice(SLICE, args.prompts)
    started = time.perf_counter()
    fixed, _ = settled_bits_per_byte(model, windows, None, args.cap, "picard", warm=False)
    rows = []
    for tol in args.tol:
        row = {"tol": tol}
        for solver in ("picard", "anderson"):
            t0 = time.perf_counter()
            bpb, its = settled_bits_per_byte(model, windows, tol, args.cap, solver, warm=False)
            row[solver] = {"bits_per_byte": round(bpb, 4), "iterations": round(its, 3)}
            row[solver]["seconds"] = round(time.perf_counter() - t0, 1)
        for solver, request in (("picard_cold", {"solver": "picard"}), ("anderson", {"solver": "anderson"})):
            run = decode(generator, prompts, args.tokens, tol=tol, depth=min(args.cap, generator.max_depth), **request)
            row[f"generation_{solver}_iterations"] = round(run["mean_iterations"], 3)
        gap = row["anderson"]["bits_per_byte"] - row["picard"]["bits_per_byte"]
        fewer = 1 - row["anderson"]["iterations"] / row["picard"]["iterations"]
        row["gap"], row["fewer_iterations"] = round(gap, 4), round(fewer, 4)
        row["holds"] = abs(gap) <= SAME_POINT and fewer > 0
        rows.append(row)
    report = {
        "model": generator.model_id,
        "windows": len(windows),
        "source": source,
        "cap": args.cap,
        "anderson_picard_first": ANDERSON_PICARD_FIRST,
        "fixed_point_bits_per_byte": round(fixed, 4),
        "rows": rows,
        "seconds": round(time.perf_counter() - started, 1),
    }
    if args.json:
        print(json.dumps(report))
        return 0
    print(
        f"{report['model']}: {len(windows)} windows of {model.max_positions} bytes ({source}), one byte at a time "
        f"against the settled context, from zero; cap {args.cap}; Anderson mixes after {ANDERSON_PICARD_FIRST} "
        f"Picard iterations. Fixed point (Picard, depth {args.cap}): {fixed:.4f} bits/byte. {report['seconds']} s"
    )
    print(f"{'tol':>8}{'solver':>10}{'iterations':>12}{'bits/byte':>11}{'generation its':>16}")
    for row in rows:
        print(
            f"{row['tol']:>8g}{'picard':>10}{row['picard']['iterations']:>12.2f}"
            f"{row['picard']['bits_per_byte']:>11.4f}{row['generation_picard_cold_iterations']:>12.2f} (cold)"
        )
        print(
            f"{'':>8}{'anderson':>10}{row['anderson']['iterations']:>12.2f}"
            f"{row['anderson']['bits_per_byte']:>11.4f}{row['generation_anderson_iterations']:>12.2f}"
        )
        print(
            f"  [{'holds' if row['holds'] else 'MISSED'}] the same point (|gap| {abs(row['gap']):.4f} <= {SAME_POINT})"
            f" in fewer iterations ({row['fewer_iterations']:.1%} fewer)"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
