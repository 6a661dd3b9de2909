"""Per-iteration residuals: the browser runtime's token events carry the same residual curves as eqlm.runtime.

The JS runtime (static/js/eqlm-runtime.js) runs under node on onnxruntime-web's wasm backend; each event's
`residuals` (the residual after each iteration of the position whose logits chose the token) is compared with the
`history` that eqlm.runtime.process records for the same positions.
"""

import json
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from eqlm.runtime import DecodeCache, OnnxEqLM, process

ROOT = Path(__file__).resolve().parents[2]
ORT_WEB = ROOT / "node_modules" / "onnxruntime-web"
PROMPT = "And God said"
CASES = {
    "fixed depth": {"depth": 6},
    "adaptive": {"depth": 20, "tol": 0.05},
    "adaptive + warm": {"depth": 20, "tol": 0.05, "warm_start": True},
    "anderson": {"depth": 8, "tol": 0.02, "solver": "anderson"},
}
NODE_SCRIPT = r"""
globalThis.self = globalThis;
const fs = require("fs");
const [ortPath, tokenizerPath, runtimePath, dir, prompt, casesJson] = process.argv.slice(1);
const ort = require(ortPath);
globalThis.EqlmTokenizer = require(tokenizerPath);
const { EqlmRuntime } = require(runtimePath);
(async () => {
  ort.env.wasm.numThreads = 1;
  ort.env.logLevel = "error";
  const manifest = JSON.parse(fs.readFileSync(dir + "/manifest.json"));
  const open = (name) => ort.InferenceSession.create(new Uint8Array(fs.readFileSync(dir + "/" + name)));
  const sessions = { embed: await open(manifest.graphs.embed), step: await open(manifest.graphs.step),
                     head: await open(manifest.graphs.head) };
  const runtime = new EqlmRuntime(ort, manifest, sessions, 1);
  const out = {};
  for (const [name, c] of Object.entries(JSON.parse(casesJson))) {
    const events = [];
    const request = { prompt, maxTokens: 10, depth: c.depth, tol: c.tol ?? null, warmStart: !!c.warm_start,
                      solver: c.solver || "picard" };
    for await (const e of runtime.generate(request)) events.push([e.tokenId, e.iterations, Array.from(e.residuals)]);
    out[name] = events;
  }
  process.stdout.write(JSON.stringify(out));
})().catch((error) => { console.error(error); process.exit(1); });
"""


@pytest.fixture(scope="module")
def js_events(tiny_onnx_dir):
    if not shutil.which("node") or not ORT_WEB.exists():
        pytest.skip("node or node_modules/onnxruntime-web is missing (make vendor installs it)")
    args = [str(ORT_WEB), str(ROOT / "static/js/tokenizer.js"), str(ROOT / "static/js/eqlm-runtime.js")]
    result = subprocess.run(
        ["node", "-e", NODE_SCRIPT, *args, str(tiny_onnx_dir), PROMPT, json.dumps(CASES)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def server_curves(onnx_dir, tokens: list[int], depth: int, tol=None, warm_start=False, solver="picard"):
    """The residual curve of each position whose logits chose a token, from process(history=...)."""
    model = OnnxEqLM(onnx_dir)
    cache = DecodeCache(model, depth)
    ids = list(PROMPT.encode())
    history: list[np.ndarray] = []
    z, iterations, _ = process(model, cache, ids, depth, tol, solver, history=history)
    curves = [[float(h[-1]) for h in history[: iterations[-1]]]]
    last_z = z[:, -1:]
    for token in tokens[:-1]:
        history = []
        z, iterations, _ = process(
            model, cache, [token], depth, tol, solver, last_z if warm_start else None, history=history
        )
        curves.append([float(h[0]) for h in history[: iterations[0]]])
        last_z = z
    return curves


@pytest.mark.parametrize("case", list(CASES))
def test_each_token_event_carries_the_residual_of_every_iteration(js_events, tiny_onnx_dir, case):
    events = js_events[case]
    assert len(events) == 10
    for _, iterations, residuals in events:
        assert len(residuals) == iterations >= 1
    c = CASES[case]
    if c.get("tol") is not None:  # a halted position's last residual is the first one below the tolerance
        for _, iterations, residuals in events:
            assert iterations == c["depth"] or (residuals[-1] < c["tol"] and min(residuals[:-1] or [1]) >= c["tol"])
    expected = server_curves(
        tiny_onnx_dir,
        [e[0] for e in events],
        c["depth"],
        c.get("tol"),
        c.get("warm_start", False),
        c.get("solver", "picard"),
    )
    for (_, _, residuals), curve in zip(events, expected, strict=True):
        assert residuals == pytest.approx(curve, rel=1e-4, abs=1e-7)
