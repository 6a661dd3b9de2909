"""The README's "Finding a feature" table names paths that exist, and a model, service, view and tests for each."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FEATURES = ["findings", "uploads", "tables", "lab jobs", "demo model", "`/v1`", "council", "experiments"]


def feature_rows() -> dict[str, list[str]]:
    text = (ROOT / "README.md").read_text()
    table = text.split("### Finding a feature", 1)[1].split("\n\n", 2)[1]
    rows = {}
    for line in table.splitlines()[2:]:
        cells = [cell.strip() for cell in line.strip("|").split("|")]
        rows[cells[0]] = cells[1:]
    return rows


def test_every_feature_names_its_model_service_view_and_tests():
    rows = feature_rows()
    assert list(rows) == FEATURES
    for feature, cells in rows.items():
        assert len(cells) == 4 and all(re.search(r"`[\w/.]+`", cell) for cell in cells), feature


def test_every_path_in_the_table_exists():
    missing = [
        path
        for cells in feature_rows().values()
        for cell in cells
        for path in re.findall(r"`([\w.]+/[\w/.]*)`", cell)
        if not (ROOT / path).exists()
    ]
    assert missing == []
