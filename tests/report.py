"""Numbers for docs/RELIABILITY.md: when RELIABILITY_OUT is set, tests write what they tried there as JSON."""

import json
import os
from pathlib import Path


def record(name: str, data: dict) -> None:
    folder = os.environ.get("RELIABILITY_OUT")
    if folder:
        Path(folder).mkdir(parents=True, exist_ok=True)
        (Path(folder) / f"{name}.json").write_text(json.dumps(data, indent=2, default=str))
