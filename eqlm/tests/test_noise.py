"""The noise start's generator: splitmix64 as published, normal enough, and the browser's twin equal bit for bit."""

import json
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from eqlm.noise import NOISE_RNG, splitmix64, standard_normal, start_states

ROOT = Path(__file__).resolve().parents[2]
JS_TWIN = ROOT / "static" / "js" / "eqlm-noise.js"
# (seed, count, offset): seeds past 2^53 and negative ones (taken mod 2^64), odd offsets that begin mid-pair
CASES = [(0, 1, 0), (0, 64, 0), (1, 333, 7), (7, 4096, 64 * 255), (2**63 + 5, 129, 1), (-1, 100, 0), (12345, 2, 3)]
NODE_SCRIPT = """
import { NOISE_RNG, standardNormal, startStates } from %s;
const cases = JSON.parse(process.argv[1]);
const bits = (a) => Array.from(new Uint32Array(a.buffer));
const out = cases.map(([seed, count, offset]) => bits(standardNormal(BigInt(seed), count, offset)));
out.push(bits(startStates(3n, 5, 2, 4)));
process.stdout.write(JSON.stringify({ name: NOISE_RNG, out }));
"""


def test_splitmix64_gives_the_reference_outputs():
    """Vigna's splitmix64.c: seed 0 begins 0xe220a8397b1dcdaf; seed 1234567 begins with these three."""
    assert int(splitmix64(0, 1)[0]) == 0xE220A8397B1DCDAF
    assert [int(v) for v in splitmix64(1234567, 3)] == [6457827717110365317, 3203168211198807973, 9817491932198370423]
    assert splitmix64(1234567, 2, 1).tolist() == splitmix64(1234567, 3)[1:].tolist()


def test_normals_are_standard_and_addressed_by_index():
    z = standard_normal(0, 200_000)
    assert z.dtype == np.float32
    assert abs(z.mean()) < 0.01 and abs(z.std() - 1) < 0.01
    assert abs(np.mean(z.astype(np.float64) ** 4) - 3) < 0.05  # Gaussian tails, not a sum of uniforms
    assert np.array_equal(standard_normal(0, 37, 13), z[13:50])
    assert not np.array_equal(standard_normal(1, 50), z[:50])
    states = start_states(9, 3, 4, 8)
    assert states.shape == (1, 4, 8)
    assert np.array_equal(states[0, 1], standard_normal(9, 8, 4 * 8))  # position 4's start


@pytest.mark.slow  # node
def test_the_browser_twin_draws_the_same_float32_normals(tmp_path):
    if not shutil.which("node"):
        pytest.skip("node is missing")
    module = tmp_path / "eqlm-noise.mjs"  # an ES module; the .mjs name tells node so without a package.json
    shutil.copy(JS_TWIN, module)
    script = NODE_SCRIPT % json.dumps(module.as_uri())
    cases = [[str(seed), count, offset] for seed, count, offset in CASES]
    result = subprocess.run(
        ["node", "--input-type=module", "-e", script, json.dumps(cases)], capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["name"] == NOISE_RNG
    expected = [standard_normal(seed, count, offset) for seed, count, offset in CASES] + [start_states(3, 5, 2, 4)]
    for got, want in zip(data["out"], expected, strict=True):
        assert got == want.ravel().view(np.uint32).tolist()
