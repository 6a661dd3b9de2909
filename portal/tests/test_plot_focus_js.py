"""static/js/plot-focus.js: the y range covers the points from the first depth that matters, and every earlier
point outside it is listed (to be marked at the edge), never dropped."""

import json
import shutil
import subprocess
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # node

ROOT = Path(__file__).resolve().parents[2]

NODE_SCRIPT = """
import(require("url").pathToFileURL(process.argv[1])).then((F) => {
const series = [{ name: "demo", x: [1, 2, 3, 4, 8, 64], y: [16.5, 8.2, 4.5, 2.28, 2.25, 2.45] }];
const linear = F.focus(series, { from: 4 });
const residual = F.focus([{ name: "r", x: [1, 2, 3, 4], y: [1.2e7, 0.3, 0.01, 0.002] }], { from: 2, log: true });
const flat = F.focus([{ name: "one", x: [1, 2], y: [3, 3] }], { from: 1 });
const trace = F.offScaleTrace(linear, { xName: "depth" });
console.log(JSON.stringify({ linear, residual, flat, note: F.note(linear, "depth"), trace }));
});
"""


def run_node() -> dict:
    node = shutil.which("node")
    if node is None:
        pytest.fail("node is missing (the JS tests need it)")
    out = subprocess.run(
        [node, "-e", NODE_SCRIPT, str(ROOT / "static/js/plot-focus.js")], capture_output=True, text=True, check=True
    )
    return json.loads(out.stdout)


def test_the_range_covers_depth_4_on_and_the_first_depths_are_listed_off_the_scale():
    result = run_node()
    low, high = result["linear"]["range"]
    assert 2.2 < low < 2.25 and 2.45 < high < 2.5  # 2.25-2.45 padded by 6% of the span each side
    assert [(p["x"], p["y"], p["side"]) for p in result["linear"]["off"]] == [
        (1, 16.5, "above"),
        (2, 8.2, "above"),
        (3, 4.5, "above"),
    ]
    assert result["note"] == "Off the scale, marked ▲ at the edge: depth 1 (16.5), depth 2 (8.2), depth 3 (4.5)."
    assert result["trace"]["y"] == [high] * 3 and result["trace"]["marker"]["symbol"] == ["triangle-up"] * 3


def test_a_log_axis_range_is_in_decades_and_iteration_1_is_off_it():
    residual = run_node()["residual"]
    low, high = residual["range"]
    assert -3.0 < low < -2.69 and -0.53 < high < 0  # log10(0.002) to log10(0.3), padded
    assert [p["x"] for p in residual["off"]] == [1]


def test_a_flat_series_still_gets_a_range_and_nothing_is_off_it():
    flat = run_node()["flat"]
    assert flat["range"][0] < 3 < flat["range"][1] and flat["off"] == [] and flat["clipped"] is False
