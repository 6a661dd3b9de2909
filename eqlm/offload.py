"""Train an experiment's runs on a machine that cannot reach the portal (an accelerator machine), from a plan folder.

`manage.py offload_experiment SLUG --plan DIR` writes DIR/plan.json (one entry per run: its folder, recipe, stage and
resolved overrides) and DIR/kjv.txt (the corpus dump, for a machine without the Debian package). Copy DIR there and run

    python -m eqlm.offload DIR --device cuda --jobs 6 --max-minutes 8

Each run trains with `train_chain` into DIR/runs/<folder>/<stage>/, exactly the layout of the run's folder under
MEDIA_ROOT, one process per run, `--jobs` at a time, one thread each. Every run stops after --max-minutes with its
state saved (the trainer's own stop). DIR/summary.json then says, per run, whether it finished, its steps and the
device it ran on; `manage.py offload_experiment SLUG --import DIR` brings the finished runs back, and the workers
evaluate them. No Django here.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import sys
import time
from pathlib import Path

PLAN_VERSION = 1


def _train_one(entry: dict, root: str, device: str, max_minutes: float | None, commit: str | None) -> dict:
    """One run, in its own process: (folder, finished, step, planned, seconds, error)."""
    if (Path(root) / "kjv.txt").exists():
        os.environ["EQLM_KJV_FILE"] = str(Path(root) / "kjv.txt")
    if commit:
        os.environ["EQLM_GIT_COMMIT"] = commit
    from .recipe import load_recipe
    from .trainer import resolve_device, train_chain

    device = resolve_device(device)  # as the trainer falls back, so the summary names where it ran

    out = Path(root) / "runs" / entry["folder"]
    out.mkdir(parents=True, exist_ok=True)
    began = time.time()
    with open(out.parent / f"{entry['folder']}.log", "a", encoding="utf-8") as logfile:

        def log(line: str) -> None:
            logfile.write(f"{time.strftime('%H:%M:%S')} {line}\n")
            logfile.flush()

        try:
            outcome = train_chain(
                load_recipe(entry["recipe"]),
                out,
                entry["stage"] or None,
                entry["overrides"],
                log=log,
                threads=1,
                device=device,
                max_minutes=max_minutes,
                checkpoint_minutes=10**6,  # no held-out check mid-run: the device's minutes go to training
            )
        except Exception as exc:  # noqa: BLE001 - reported in the summary; the other runs go on
            log(f"failed: {type(exc).__name__}: {exc}")
            return {"folder": entry["folder"], "finished": False, "error": f"{type(exc).__name__}: {exc}"}
    return {
        "folder": entry["folder"],
        "finished": outcome.finished,
        "step": outcome.step,
        "planned_steps": outcome.planned_steps,
        "seconds": round(time.time() - began, 1),
        "device": device,
        "error": "",
    }


def needs_debian_corpus(plan: dict, root: Path) -> bool:
    """Whether a run of the plan reads the KJV from Debian's package: an entry's "corpora" (the corpora of its stage
    chain, written when the plan was frozen) names "kjv" and the plan folder carries no dump (kjv.txt)."""
    if (root / "kjv.txt").exists():
        return False
    return any("kjv" in entry["corpora"] for entry in plan["runs"])


def run_plan(root: Path, device: str, jobs: int, max_minutes: float | None) -> list[dict]:
    plan = json.loads((root / "plan.json").read_text())
    if plan.get("version") != PLAN_VERSION:
        raise SystemExit(f"{root / 'plan.json'} is plan version {plan.get('version')}, this code reads {PLAN_VERSION}")
    if needs_debian_corpus(plan, root):
        # here, once: runs that each found the package missing would race for apt's lock, and all but one fail
        from .corpus import ensure_bible_installed

        ensure_bible_installed()
    args = [(entry, str(root), device, max_minutes, plan.get("commit")) for entry in plan["runs"]]
    with multiprocessing.get_context("spawn").Pool(max(1, jobs)) as pool:
        results = pool.starmap(_train_one, args)
    (root / "summary.json").write_text(json.dumps({"device": device, "runs": results}, indent=1))
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m eqlm.offload", description=__doc__.split("\n\n")[0])
    parser.add_argument("root", type=Path, help="the plan folder (plan.json, kjv.txt)")
    parser.add_argument("--device", default="cuda", help="cuda or cpu (cuda falls back to cpu when absent)")
    parser.add_argument("--jobs", type=int, default=1, help="runs trained at once, one process each")
    parser.add_argument("--max-minutes", type=float, default=None, help="stop each run after this, state saved")
    options = parser.parse_args(argv)
    results = run_plan(options.root, options.device, options.jobs, options.max_minutes)
    for r in results:
        shown = (
            f"{r.get('step')}/{r.get('planned_steps')} steps in {r.get('seconds')} s" if not r["error"] else r["error"]
        )
        print(f"{r['folder']}: {'finished' if r['finished'] else 'NOT finished'}, {shown}")
    return 0 if all(r["finished"] for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
