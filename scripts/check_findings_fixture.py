#!/usr/bin/env python
"""Check fixtures/findings.yaml against ../shared/findings/facts.json; exits 1 and lists every difference."""

import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "portal.settings")

import django

django.setup()

from django.conf import settings  # noqa: E402

from findings_app.fixture_check import compare, read_facts  # noqa: E402
from findings_app.services import read_fixture  # noqa: E402


def main() -> int:
    if not (Path(settings.SHARED_DIR) / "findings" / "facts.json").exists():
        print(f"No facts sheet under {settings.SHARED_DIR}; nothing to check against.")
        return 0
    problems = compare(read_fixture(), read_facts(settings.SHARED_DIR))
    for line in problems:
        print(line)
    print("fixture agrees with facts.json" if not problems else f"{len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
