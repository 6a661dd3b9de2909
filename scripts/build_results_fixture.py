"""Build fixtures/results.json (the project's normalized result rows) from the programme's result files.

Usage: .venv/bin/python scripts/build_results_fixture.py [ANCHOR_RESULTS_DIR] [-o fixtures/results.json]
Reads ../shared/anchor-results (settings.SHARED_DIR) by default, parses every result file with the same
parsers the upload path uses, and writes the compact fixture that `manage.py seed` loads.
"""

import argparse
import hashlib
import json
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "portal.settings")

SKIP = {"council.json", "leaderboard.json", "runs.json"}  # not result rows (council app / registry)


def main() -> int:
    import django

    django.setup()
    from django.conf import settings

    from benchmarks_app.fixture import FORMAT, VERSION, pack_source
    from benchmarks_app.parsers import parse_bytes

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("source", nargs="?", default=str(Path(settings.SHARED_DIR) / "anchor-results"))
    parser.add_argument("-o", "--output", default=str(ROOT / "fixtures" / "results.json"))
    args = parser.parse_args()
    root = Path(args.source)
    if not root.is_dir():
        print(f"no such folder: {root}", file=sys.stderr)
        return 1
    sources = []
    for path in sorted(root.rglob("*.json")):
        if path.name in SKIP:
            continue
        rel = path.relative_to(root).as_posix()
        data = path.read_bytes()
        companion = path.parent / "config.yaml"
        comp = companion.read_bytes() if path.name == "results.json" and companion.exists() else None
        parsed = parse_bytes(data, name=path.name, path_hint=rel, companion=comp)
        digest = hashlib.sha256(data + (b"\x00config.yaml\x00" + comp if comp else b"")).hexdigest()
        sources.append(pack_source(rel, digest, parsed))
        print(f"{rel}: {parsed.format}, {len(parsed.records)} rows")
    out = {"format": FORMAT, "version": VERSION, "generated_from": "anchor-results (SharathSPhD/game-llm results/)",
           "sources": sources}  # fmt: skip
    Path(args.output).write_text(json.dumps(out, separators=(",", ":"), sort_keys=True) + "\n")
    print(f"wrote {args.output}: {sum(len(s['rows']) for s in sources)} rows from {len(sources)} files")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
