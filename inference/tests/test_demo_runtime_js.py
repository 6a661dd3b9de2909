"""The browser runtime (static/js/eqlm-runtime.js) decodes exactly as the server's generation service.

Runs the JS runtime under node with onnxruntime-web's wasm backend (the same package the page uses) on a tiny
random model exported by the project's own code, and compares tokens and iterations per token with
eqlm.runtime for fixed depth, adaptive halting, warm start and Anderson acceleration.
"""

import json
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
ORT_WEB = ROOT / "node_modules" / "onnxruntime-web"
PROMPT = "In the beginning"
CASES = {
    "depth 4": {"depth": 4},
    "depth 12": {"depth": 12},
    "adaptive": {"depth": 12, "tol": 0.05},
    "warm start": {"depth": 6, "warm_start": True},
    "adaptive + warm": {"depth": 10, "tol": 0.03, "warm_start": True},
    "anderson": {"depth": 6, "solver": "anderson"},
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
    const request = { prompt, maxTokens: 24, depth: c.depth, tol: c.tol ?? null, warmStart: !!c.warm_start,
                      solver: c.solver || "picard" };
    for await (const e of runtime.generate(request)) events.push([e.tokenId, e.iterations, e.text]);
    out[name] = events;
  }
  process.stdout.write(JSON.stringify(out));
})().catch((error) => { console.error(error); process.exit(1); });
"""


@pytest.fixture(scope="module")
def js_events(tiny_onnx_dir):
    if not shutil.which("node") or not ORT_WEB.exists():
        pytest.skip("node or node_modules/onnxruntime-web is missing (make vendor installs it)")
    result = subprocess.run(
        [
            "node",
            "-e",
            NODE_SCRIPT,
            str(ORT_WEB),
            str(ROOT / "static/js/tokenizer.js"),
            str(ROOT / "static/js/eqlm-runtime.js"),
            str(tiny_onnx_dir),
            PROMPT,
            json.dumps(CASES),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


@pytest.mark.parametrize("case", list(CASES))
def test_the_browser_runtime_generates_what_the_server_generates(js_events, tiny_onnx_dir, case):
    from eqlm.runtime import GenerationRequest, Generator

    result = Generator(tiny_onnx_dir).generate(GenerationRequest(prompt=PROMPT, max_tokens=24, **CASES[case]))
    server = [[e.token_id, e.iterations, e.text] for e in result.tokens]
    assert js_events[case] == server
