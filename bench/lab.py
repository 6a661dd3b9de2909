"""Times the lab's solvers against the issue's goals and against nashpy (and pygambit when installed).

Run: .venv/bin/python bench/lab.py [--quick]. Prints one row per task: median wall time, the goal, and the
ratio to the baseline library where one solves the same problem. JS timings come from node on the same module
the browser loads (static/js/lab/solvers.js).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402

from lab_app.solvers import random_game  # noqa: E402
from lab_app.solvers.dynamics import mmd  # noqa: E402
from lab_app.solvers.games import PRESETS  # noqa: E402
from lab_app.solvers.nash import lemke_howson, vertex_enumeration  # noqa: E402
from lab_app.solvers.qre import qre, trace_path  # noqa: E402


def median_ms(fn, reps: int) -> float:
    fn()  # warm-up
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1000)
    return statistics.median(times)


def row(task: str, ours_ms: float, goal: str, baseline: str = "", ratio: str = "") -> None:
    print(f"| {task:<46} | {ours_ms:>10.3f} | {goal:>10} | {baseline:>16} | {ratio:>8} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="fewer repetitions and games")
    args = parser.parse_args()
    reps = 3 if args.quick else 9
    seeds = range(2) if args.quick else range(5)
    print(f"# lab solver bench — numpy {np.__version__}, {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.2f}")
    print("| task | ours (ms, median) | goal (ms) | baseline (ms) | speed-up |")
    print("|---|---:|---:|---:|---:|")

    A = np.array(PRESETS["biased_rps"]["payoffs"][0], dtype=float)
    row("QRE λ=100, biased RPS (residual ≤ 1e-10)", median_ms(lambda: qre(A, -A, 100.0, zero_sum=True), reps * 5), "5")
    for size, goal in ((10, "3"), (50, "80")):
        games = [random_game(size, size, s) for s in seeds]
        times = [median_ms(lambda g=g: qre(g.A, g.B, 10.0), reps) for g in games]
        row(f"QRE λ=10, random {size}×{size}: median of {len(games)} games", statistics.median(times), goal)
        row(f"QRE λ=10, random {size}×{size}: worst of {len(games)} games", max(times), goal)
    games = [random_game(50, 50, s) for s in seeds]
    times = [median_ms(lambda g=g: trace_path(g.A, g.B, lam_max=1000.0), max(1, reps // 3)) for g in games]
    row(f"QRE path to λ=1000, random 50×50: median of {len(games)}", statistics.median(times), "200")
    row(f"QRE path to λ=1000, random 50×50: worst of {len(games)}", max(times), "200")

    try:
        import nashpy
    except ImportError:  # pragma: no cover - dev dependency
        nashpy = None
    for size in (4, 6):
        g = random_game(size, size, 1)
        ours = median_ms(lambda g=g: vertex_enumeration(g.A, g.B), reps)
        if nashpy:
            base = median_ms(lambda g=g: list(nashpy.Game(g.A, g.B).vertex_enumeration()), max(1, reps // 3))
            row(f"vertex enumeration, random {size}×{size}", ours, "", f"nashpy {base:.1f}", f"{base / ours:.1f}×")
        else:
            row(f"vertex enumeration, random {size}×{size}", ours, "")
    g15 = random_game(15, 15, 1)
    ours = median_ms(lambda: lemke_howson(g15.A, g15.B), reps)
    if nashpy:
        base = median_ms(lambda: nashpy.Game(g15.A, g15.B).lemke_howson(initial_dropped_label=0), reps)
        row("Lemke–Howson, random 15×15", ours, "", f"nashpy {base:.1f}", f"{base / ours:.1f}×")
    g = random_game(50, 50, 1)
    # nashpy's tableau overflows to non-finite numbers from about 20×20, so 50×50 has no baseline.
    row("Lemke–Howson, random 50×50", median_ms(lambda: lemke_howson(g.A, g.B), reps), "10", "nashpy: overflows")
    try:
        import pygambit  # noqa: F401

        print("pygambit is installed but not yet compared here")
    except ImportError:
        print("(pygambit is not installed: no gambit comparison)")

    x0 = np.full(50, 1 / 50)
    steps = 2000
    per_step = median_ms(
        lambda: mmd(g.A, g.B, x0, x0, eta=0.1, tau=0.1, steps=steps, magnet_x=x0, magnet_y=x0, record=50), 3
    )
    row("MMD per iteration, 50×50 (µs → shown in ms)", per_step / steps, "0.050")

    node = shutil.which("node")
    if node:
        script = """
const S = require(process.argv[1]);
const time = (f, reps) => {
  f();
  const ts = [];
  for (let i = 0; i < reps; i++) { const t = performance.now(); f(); ts.push(performance.now() - t); }
  ts.sort((a, b) => a - b);
  return ts[Math.floor(ts.length / 2)];
};
const rand10 = {preset: 'random', m: 10, n: 10, seed: 1};
const out = {
  mmd10k: time(() => S.solve({game: 'biased_rps', solver: 'mmd', params: {steps: 10000}}), 9),
  qre100: time(() => S.solve({game: 'biased_rps', solver: 'qre', params: {lambda: 100}}), 9),
  path10: time(() => S.solve({game: rand10, solver: 'qre_path', params: {lambda_max: 1000}}), 3),
};
console.log(JSON.stringify(out));
"""
        done = subprocess.run(
            [node, "-e", script, str(ROOT / "static/js/lab/solvers.js")], capture_output=True, text=True, check=True
        )
        js = json.loads(done.stdout)
        row("JS (node): 10,000 MMD steps, 3×3", js["mmd10k"], "50")
        row("JS (node): QRE λ=100, biased RPS", js["qre100"], "")
        row("JS (node): QRE path to λ=1000, random 10×10", js["path10"], "")
    else:
        print("(node is not installed: no JS timings)")


if __name__ == "__main__":
    main()
