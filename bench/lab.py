"""Times the lab's solvers against Gambit 17 (pygambit) in the same run, and against the issue's goals and nashpy.

Run: .venv/bin/python bench/lab.py [--quick] [--agreement N]. Gambit and the portal solve the same games (the
lab's `random_game(n, n, seed)`, seeds 0..2), built beforehand on both sides, so a time is the solver call
alone; each cell is the median over the games of each game's median time. Ratios are Gambit's time over the
portal's (above 1: the portal is faster); "max diff" is the largest difference of any probability between the
two answers. `--agreement N` also solves N games per size at λ ∈ {1, 10, 100} with both and reports the worst
difference (the issue asks for ≥ 100 games, every answer within 1e-8). JS timings come from node and from
headless Chromium on the module the browser loads (static/js/lab/solvers.js).
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

from lab_app.solvers import kernel, random_game  # noqa: E402
from lab_app.solvers.dynamics import mmd  # noqa: E402
from lab_app.solvers.games import PRESETS  # noqa: E402
from lab_app.solvers.nash import lemke_howson, polish, vertex_enumeration  # noqa: E402
from lab_app.solvers.qre import _newton, _System, qre, trace_path  # noqa: E402

try:
    import pygambit as gbt
except ImportError:  # pragma: no cover - dev dependency
    gbt = None

SIZES = (2, 3, 5, 10, 30, 50)


def median_ms(fn, reps: int, budget_s: float = 0.4) -> float:
    t0 = time.perf_counter()
    fn()  # warm-up, and a guess at how many repetitions fit the budget
    first = time.perf_counter() - t0
    reps = max(3, min(reps, int(budget_s / max(first, 1e-6))))
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1000)
    return statistics.median(times)


def row(task: str, ours_ms: float, goal: str, baseline: str = "", ratio: str = "") -> None:
    print(f"| {task:<46} | {ours_ms:>10.3f} | {goal:>10} | {baseline:>16} | {ratio:>8} |")


def gambit_game(A: np.ndarray, B: np.ndarray):
    return gbt.StrategicGame.from_arrays(A, B)


def gambit_profile(profile) -> tuple[np.ndarray, np.ndarray]:
    return tuple(np.array([p for _, p in profile[player]]) for player in ("1", "2"))


def gambit_qre(game, lam: float) -> tuple[np.ndarray, np.ndarray]:
    return gambit_profile(gbt.qre.logit_solve_lambda(game, lam=[lam])[0].profile)


def difference(xy: tuple, answer: dict) -> float:
    return max(np.abs(np.array(answer["x"]) - xy[0]).max(), np.abs(np.array(answer["y"]) - xy[1]).max())


def qre_against_gambit(reps: int, seeds: range) -> None:
    print(f"\n## Logit QRE against Gambit 17 (pygambit {gbt.__version__}), {len(seeds)} games per size")
    print(f"kernel: {'compiled (qre_kernel.c)' if kernel.load() else 'numpy (no C compiler)'}")
    print("| size | λ | Gambit (ms) | portal qre (ms) | speed-up | portal trace_path (ms) | speed-up | max diff |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for lam in (10.0, 1000.0):
        for size in SIZES:
            games = [random_game(size, size, s) for s in seeds]
            gambit = [gambit_game(g.A, g.B) for g in games]
            t_gambit = [
                median_ms(lambda gg=gg, lam=lam: gbt.qre.logit_solve_lambda(gg, lam=[lam]), reps) for gg in gambit
            ]
            t_qre = [median_ms(lambda g=g, lam=lam: qre(g.A, g.B, lam), reps) for g in games]
            path = ""
            if lam == 1000.0:
                t_path = [median_ms(lambda g=g, lam=lam: trace_path(g.A, g.B, lam_max=lam), reps) for g in games]
                tp = statistics.median(t_path)
                path = f"| {tp:.3f} | {statistics.median(t_gambit) / tp:.1f}× "
            else:
                path = "| | "
            worst = max(
                difference(gambit_qre(gg, lam), qre(g.A, g.B, lam)) for g, gg in zip(games, gambit, strict=True)
            )
            tg, tq = statistics.median(t_gambit), statistics.median(t_qre)
            print(f"| {size}×{size} | {lam:g} | {tg:.3f} | {tq:.3f} | {tg / tq:.1f}× {path}| {worst:.1e} |")


def agreement(count: int) -> None:
    """Worst difference from Gambit per size; where it is over 1e-8, Gambit's own fixed-point residual, and the
    difference once Gambit's answer is finished by Newton (tiny: the same point of the branch, less exactly)."""
    print(f"\n## Agreement with Gambit 17: {count} games per size (seeds 0..{count - 1}), λ ∈ {{1, 10, 100}}")
    print("| size | answers | worst difference | over 1e-8 | worst after Newton on Gambit's answer | not converged |")
    print("|---|---:|---:|---:|---:|---:|")
    for size in SIZES:
        worst, worst_polished, over, unconverged, answers = 0.0, 0.0, 0, 0, 0
        for seed in range(count):
            g = random_game(size, size, seed)
            gg = gambit_game(g.A, g.B)
            for lam in (1.0, 10.0, 100.0):
                ours = qre(g.A, g.B, lam)
                theirs = gambit_qre(gg, lam)
                diff = difference(theirs, ours)
                worst, answers = max(worst, diff), answers + 1
                unconverged += not ours["converged"]
                if diff > 1e-8:
                    over += 1
                    sys_ = _System(g.A, g.B)
                    gx, gy = (np.maximum(v, 1e-300) for v in theirs)
                    _, px, py, _, _, _ = _newton(sys_, lam, sys_.log_odds(gx, gy), 1e-12)
                    polished = difference((px, py), ours)
                    worst_polished = max(worst_polished, polished)
                    print(
                        f"  {size}×{size} seed {seed} λ = {lam:g}: {diff:.3g} from Gambit, whose residual is "
                        f"{sys_.residual(*theirs, lam):.2g}; after Newton {polished:.2g}"
                    )
        print(
            f"| {size}×{size} | {answers} | {worst:.1e} | {over} | {worst_polished:.1e} | {unconverged} |", flush=True
        )


def nash_against_gambit(reps: int) -> None:
    print("\n## Nash equilibria against Gambit 17 (floats)")
    print("| task | Gambit (ms) | portal (ms) | speed-up | max diff |")
    print("|---|---:|---:|---:|---:|")
    for size in (4, 6):
        g = random_game(size, size, 1)
        gg = gambit_game(g.A, g.B)
        tg = median_ms(lambda gg=gg: gbt.nash.enummixed_solve(gg, rational=False), reps)
        tp = median_ms(lambda g=g: vertex_enumeration(g.A, g.B), reps)
        key = lambda v: tuple(np.round(v, 6))  # noqa: E731
        theirs = sorted(
            (np.concatenate(gambit_profile(e)) for e in gbt.nash.enummixed_solve(gg, rational=False).equilibria),
            key=key,
        )
        ours = sorted((np.concatenate(e) for e in vertex_enumeration(g.A, g.B)[0]), key=key)
        if len(theirs) == len(ours):
            diff = f"{max(np.abs(a - b).max() for a, b in zip(theirs, ours, strict=True)):.1e}"
        else:
            diff = f"{len(ours)} vs {len(theirs)} equilibria"
        print(
            f"| all equilibria, random {size}×{size} (enummixed_solve) "
            f"| {tg:.3f} | {tp:.3f} | {tg / tp:.1f}× | {diff} |"
        )
    for size in (15, 50):
        g = random_game(size, size, 1)
        gg = gambit_game(g.A, g.B)
        tg = median_ms(lambda gg=gg: gbt.nash.lcp_solve(gg, rational=False, stop_after=1), reps)
        tp = median_ms(lambda g=g: polish(g.A, g.B, *lemke_howson(g.A, g.B)[:2], thresholds=(1e-9,)), reps)
        theirs = np.concatenate(gambit_profile(gbt.nash.lcp_solve(gg, rational=False, stop_after=1).equilibria[0]))
        x, y, _ = polish(g.A, g.B, *lemke_howson(g.A, g.B)[:2], thresholds=(1e-9,))
        diff = np.abs(np.concatenate((x, y)) - theirs).max()
        note = f"{diff:.1e}" if diff < 1e-6 else f"other equilibrium ({diff:.2f})"
        print(f"| one equilibrium, random {size}×{size} (lcp_solve) | {tg:.3f} | {tp:.3f} | {tg / tp:.1f}× | {note} |")


def goals(reps: int, seeds: range) -> None:
    print("\n## Goals and nashpy")
    print("| task | ours (ms, median) | goal (ms) | baseline (ms) | speed-up |")
    print("|---|---:|---:|---:|---:|")
    A = np.array(PRESETS["biased_rps"]["payoffs"][0], dtype=float)
    row("QRE λ=100, biased RPS (residual ≤ 1e-10)", median_ms(lambda: qre(A, -A, 100.0, zero_sum=True), reps * 5), "5")
    for size, goal in ((10, "3"), (50, "80")):
        games = [random_game(size, size, s) for s in seeds]
        times = [median_ms(lambda g=g: qre(g.A, g.B, 10.0), reps) for g in games]
        row(f"QRE λ=10, random {size}×{size}: worst of {len(games)} games", max(times), goal)
    games = [random_game(50, 50, s) for s in seeds]
    times = [median_ms(lambda g=g: trace_path(g.A, g.B, lam_max=1000.0), reps) for g in games]
    row(f"QRE path to λ=1000, random 50×50: worst of {len(games)}", max(times), "200")
    try:
        import nashpy
    except ImportError:  # pragma: no cover - dev dependency
        nashpy = None
    for size in (4, 6):
        g = random_game(size, size, 1)
        ours = median_ms(lambda g=g: vertex_enumeration(g.A, g.B), reps)
        if nashpy:
            base = median_ms(lambda g=g: list(nashpy.Game(g.A, g.B).vertex_enumeration()), reps)
            row(f"vertex enumeration, random {size}×{size}", ours, "", f"nashpy {base:.1f}", f"{base / ours:.1f}×")
    g15 = random_game(15, 15, 1)
    ours = median_ms(lambda: lemke_howson(g15.A, g15.B), reps)
    if nashpy:
        base = median_ms(lambda: nashpy.Game(g15.A, g15.B).lemke_howson(initial_dropped_label=0), reps)
        row("Lemke–Howson, random 15×15", ours, "", f"nashpy {base:.1f}", f"{base / ours:.1f}×")
    g = random_game(50, 50, 1)
    # nashpy's tableau overflows to non-finite numbers from about 20×20, so 50×50 has no baseline.
    row("Lemke–Howson, random 50×50", median_ms(lambda: lemke_howson(g.A, g.B), reps), "10", "nashpy: overflows")
    x0 = np.full(50, 1 / 50)
    steps = 2000
    per_step = median_ms(
        lambda: mmd(g.A, g.B, x0, x0, eta=0.1, tau=0.1, steps=steps, magnet_x=x0, magnet_y=x0, record=50), 3
    )
    row("MMD per iteration, 50×50 (µs → shown in ms)", per_step / steps, "0.050")


JS_BENCH = """
const M = await import(process.argv[1]);
const S = M.solve ? M : M.default;
const time = (f, reps) => {
  for (let i = 0; i < 5; i++) f(); // let the JIT compile it first, as it has in a page that has been used
  const ts = [];
  for (let i = 0; i < reps; i++) { const t = performance.now(); f(); ts.push(performance.now() - t); }
  ts.sort((a, b) => a - b);
  return ts[Math.floor(ts.length / 2)];
};
const qre = (n, seed, lambda) => ({game: {preset: 'random', m: n, n, seed}, solver: 'qre', params: {lambda}});
const out = {
  mmd10k: time(() => S.solve({game: 'biased_rps', solver: 'mmd', params: {steps: 10000}}), 9),
  qre100: time(() => S.solve({game: 'biased_rps', solver: 'qre', params: {lambda: 100}}), 9),
  path10: time(() => S.solve({game: {preset: 'random', m: 10, n: 10, seed: 1}, solver: 'qre_path',
                                params: {lambda_max: 1000}}), 3),
  qre12: Math.max(...[0, 1, 2].map((seed) => time(() => S.solve(qre(12, seed, 10)), 9))),
};
console.log(JSON.stringify(out));
"""


def js_timings() -> None:
    node = shutil.which("node")
    if not node:
        print("(node is not installed: no JS timings)")
        return
    module = (ROOT / "static/js/lab/solvers.js").as_uri()
    done = subprocess.run(
        [node, "--input-type=module", "-e", JS_BENCH, module], capture_output=True, text=True, check=True
    )
    js = json.loads(done.stdout)
    print("\n## JS twin (node, the module the browser loads)")
    print("| task | ours (ms, median) | goal (ms) | baseline (ms) | speed-up |")
    print("|---|---:|---:|---:|---:|")
    row("JS (node): 10,000 MMD steps, 3×3", js["mmd10k"], "50")
    row("JS (node): QRE λ=100, biased RPS", js["qre100"], "")
    row("JS (node): QRE λ=10, random 12×12, worst of 3", js["qre12"], "5")
    row("JS (node): QRE path to λ=1000, random 10×10", js["path10"], "")


BROWSER_BENCH = """async () => {
  const S = await import('/solvers.js');
  const time = (f, reps) => {
    for (let i = 0; i < 5; i++) f();
    const ts = [];
    for (let i = 0; i < reps; i++) { const t = performance.now(); f(); ts.push(performance.now() - t); }
    ts.sort((a, b) => a - b);
    return ts[Math.floor(ts.length / 2)];
  };
  const out = {};
  for (const n of [2, 3, 5, 8, 10, 12]) {
    const ts = [0, 1, 2].map((seed) =>
      time(() => S.solve({game: {preset: 'random', m: n, n, seed}, solver: 'qre', params: {lambda: 10}}), 15));
    out[n] = Math.max(...ts);
  }
  return out;
}"""


def browser_timings() -> None:
    """The JS QRE in headless Chromium (the lab's browser), the module served as the page would load it."""
    import functools
    import http.server
    import threading

    from playwright.sync_api import sync_playwright

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args) -> None:
            pass

    handler = functools.partial(Quiet, directory=str(ROOT / "static/js/lab"))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        with sync_playwright() as pw:
            browser = pw.chromium.launch(
                executable_path="/usr/bin/chromium", headless=True, args=["--no-sandbox", "--disable-gpu"]
            )
            page = browser.new_page()
            page.goto(f"http://127.0.0.1:{server.server_port}/package.json")
            times = page.evaluate(BROWSER_BENCH)
            browser.close()
    finally:
        server.shutdown()
    print("\n## JS QRE at λ = 10 in headless Chromium (worst of 3 games, median of 15 runs each)")
    print("| task | ours (ms, median) | goal (ms) | baseline (ms) | speed-up |")
    print("|---|---:|---:|---:|---:|")
    for n, ms in times.items():
        row(f"Chromium: QRE λ=10, random {n}×{n}, worst of 3", ms, "5")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="fewer repetitions")
    parser.add_argument("--agreement", type=int, default=0, metavar="N", help="also check N games per size")
    parser.add_argument("--only", choices=("gambit", "goals", "js", "browser"), help="run one section")
    args = parser.parse_args()
    reps = 3 if args.quick else 9
    seeds = range(3)
    load = os.getloadavg()
    print(f"# lab solver bench — numpy {np.__version__}, {os.cpu_count()} CPUs, load {load[0]:.2f} {load[1]:.2f}")
    if args.only in (None, "gambit"):
        if gbt is None:
            print("(pygambit is not installed: no Gambit comparison; pip install -r requirements-dev.txt)")
        else:
            qre_against_gambit(reps, seeds)
            nash_against_gambit(reps)
            if args.agreement:
                agreement(args.agreement)
    if args.only in (None, "goals"):
        goals(reps, seeds)
    if args.only in (None, "js"):
        js_timings()
    if args.only in (None, "browser"):
        if Path("/usr/bin/chromium").exists():
            browser_timings()
        else:
            print("(chromium is not installed: no browser timings)")
    print(f"\nload at the end {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
