"""`make reliability`: run every hardening check, then write docs/RELIABILITY.md with what was tried and what held.

    .venv/bin/python scripts/reliability.py [--skip-load] [--fuzz-examples 100] [--hostile-examples 10]
        [--load-seconds 60] [--only input_classes]

Sections: persona and CSRF tests, security headers and secrets, the schema fuzz (many examples per operation),
classes of hostile input on every operation, upload and route (`--only input_classes` runs this one alone),
faults (database down, full and read-only disk, kill -9 of a worker mid-ingest and mid-evaluation, a Redis
restart with its queue on disk and one without, where the sweeper re-sends the lost jobs), accessibility on every
seeded page (axe, light and dark, 375 px, keyboard), load (bench/load.py) and streaming (bench/streams.py).
Each section prints a PASS/FAIL line; the script exits 1 when any failed.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PYTHON = str(ROOT / ".venv" / "bin" / "python") if (ROOT / ".venv" / "bin" / "python").exists() else sys.executable
DOC = ROOT / "docs" / "RELIABILITY.md"
sys.path.insert(0, str(ROOT))

from scripts.reliability_report import (  # noqa: E402
    SECTIONS,
    replace_input_classes,
    write_report,
)


def run_pytest(label: str, paths: list[str], out: Path, **env: str) -> dict:
    junit = out / f"{label}.xml"
    environment = {k: v for k, v in os.environ.items() if not k.startswith(("CELERY_", "DATABASE_URL"))}
    environment.update(RELIABILITY_OUT=str(out), TEST_REDIS_DB=environment.get("TEST_REDIS_DB", "7"), **env)
    started = time.monotonic()
    proc = subprocess.run(
        [PYTHON, "-m", "pytest", *paths, "-q", "-p", "no:randomly", f"--junitxml={junit}"],
        cwd=ROOT,
        env=environment,
        capture_output=True,
        text=True,
    )
    result = read_junit(label, junit, proc.returncode == 0, round(time.monotonic() - started, 1))
    result["tail"] = proc.stdout[-3000:] if proc.returncode else ""
    verdict = "PASS" if result["ok"] else "FAIL"
    counts = f"{result['passed']} passed, {result['failed']} failed"
    print(f"{verdict} {label}: {counts} in {result['seconds']} s", flush=True)
    if not result["ok"]:
        print(result["tail"], flush=True)
    return result


def run_input_classes(out: Path, examples: int) -> dict:
    paths = ["tests/test_input_classes.py", "tests/test_upload_input_classes.py"]
    return run_pytest("input_classes", paths, out, HOSTILE_EXAMPLES=str(examples))


def read_junit(label: str, junit: Path, ok: bool | None = None, seconds: float | None = None) -> dict:
    cases = []
    if junit.exists():
        for case in ET.parse(junit).getroot().iter("testcase"):
            failed = case.find("failure") is not None or case.find("error") is not None
            skipped = case.find("skipped") is not None
            cases.append(
                {"name": case.get("name"), "status": "failed" if failed else "skipped" if skipped else "passed"}
            )
    if seconds is None and junit.exists():
        seconds = round(float(ET.parse(junit).getroot().find("testsuite").get("time", 0)), 1)
    failed = sum(c["status"] == "failed" for c in cases)
    return {
        "label": label,
        "seconds": seconds,
        "passed": sum(c["status"] == "passed" for c in cases),
        "failed": failed,
        "skipped": sum(c["status"] == "skipped" for c in cases),
        "cases": cases,
        "ok": ok if ok is not None else (failed == 0 and bool(cases)),
    }


def run_script(label: str, args: list[str], json_path: Path) -> dict:
    started = time.monotonic()
    proc = subprocess.run([PYTHON, *args, "--json", str(json_path)], cwd=ROOT, capture_output=True, text=True)
    data = json.loads(json_path.read_text()) if json_path.exists() else {}
    lines = [line for line in proc.stdout.splitlines() if line.startswith(("PASS", "FAIL"))]
    print(lines[-1] if lines else f"FAIL {label}: no result ({proc.stderr[-500:]})", flush=True)
    return {"label": label, "ok": proc.returncode == 0, "data": data, "seconds": round(time.monotonic() - started, 1)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--fuzz-examples", type=int, default=100)
    parser.add_argument("--hostile-examples", type=int, default=10, help="inputs per class and target")
    parser.add_argument("--only", choices=["input_classes"], help="run one section and rewrite its part of the report")
    parser.add_argument("--load-seconds", type=float, default=60)
    parser.add_argument("--users", type=int, default=50)
    parser.add_argument("--skip-load", action="store_true", help="skip bench/load.py and bench/streams.py")
    parser.add_argument("--out", help="folder for the raw JSON (default: a temporary folder)")
    parser.add_argument("--report-only", action="store_true", help="rewrite the report from the raw results in --out")
    args = parser.parse_args()
    out = Path(args.out or tempfile.mkdtemp(prefix="eqlm-reliability-"))
    out.mkdir(parents=True, exist_ok=True)
    if args.only == "input_classes":
        if args.report_only:
            result = read_junit("input_classes", out / "input_classes.xml")
        else:
            result = run_input_classes(out, args.hostile_examples)
        text = DOC.read_text() if DOC.exists() else ""
        DOC.write_text(replace_input_classes(text, result, out, args.hostile_examples))
        print(f"{'PASS' if result['ok'] else 'FAIL'} input classes: rewrote its part of {DOC.relative_to(ROOT)}")
        return 0 if result["ok"] else 1
    if args.report_only:
        results = {name: read_junit(name, out / f"{name}.xml") for name in SECTIONS}
        for name in ("load", "streams"):
            if (out / f"{name}.json").exists():
                data = json.loads((out / f"{name}.json").read_text())
                results[name] = {"label": name, "ok": data.get("5xx", 0) == 0 and not data.get("errors"), "data": data}
        DOC.write_text(write_report(results, out, args))
        print(f"wrote {DOC.relative_to(ROOT)} from {out}")
        return 0
    results = {
        "personas": run_pytest("personas", ["tests/test_personas.py"], out),
        "security": run_pytest(
            "security",
            ["tests/test_security.py", "portal/tests/test_login_throttle.py", "inference/tests/test_keys.py"],
            out,
        ),
        "fuzz": run_pytest("fuzz", ["tests/test_schema_fuzz.py"], out, FUZZ_EXAMPLES=str(args.fuzz_examples)),
        "input_classes": run_input_classes(out, args.hostile_examples),
        "faults": run_pytest(
            "faults",
            ["tests/test_faults.py", "portal/tests/test_health.py"],
            out,
            FAULT_INGEST_ROWS="120000",
            RELIABILITY_FULL="1",
        ),
        "accessibility": run_pytest("accessibility", ["tests/test_accessibility.py"], out, RELIABILITY_FULL="1"),
    }
    if not args.skip_load:
        results["load"] = run_script(
            "load",
            ["bench/load.py", "--users", str(args.users), "--seconds", str(args.load_seconds)],
            out / "load.json",
        )
        results["streams"] = run_script("streams", ["bench/streams.py"], out / "streams.json")
    DOC.parent.mkdir(exist_ok=True)
    DOC.write_text(write_report(results, out, args))
    ok = all(section["ok"] for section in results.values())
    print(f"{'PASS' if ok else 'FAIL'} reliability: wrote {DOC.relative_to(ROOT)} (raw results in {out})")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
