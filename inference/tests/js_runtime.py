"""Run the browser runtime (static/js/eqlm-runtime.js) under node on onnxruntime-web's wasm backend.

The same package the page uses decodes a model folder for several requests; each token event comes back as
[token id, iterations, text, residuals] so a test can hold it against eqlm.generation (a request the runtime
refuses comes back as {"refused": its message}). The scripts are ES modules
(static/js/package.json says so to node), imported as the page imports them.
"""

import json
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
ORT_WEB = ROOT / "node_modules" / "onnxruntime-web"
NODE_SCRIPT = r"""
globalThis.self = globalThis;
const fs = require("fs");
const [ortPath, runtimeUrl, noiseUrl, dir, prompt, casesJson, maxTokens] = process.argv.slice(1);
const ort = require(ortPath);
(async () => {
  const { EqlmRuntime, graphRoles } = await import(runtimeUrl);
  ort.env.wasm.numThreads = 1;
  ort.env.logLevel = "error";
  const manifest = JSON.parse(fs.readFileSync(dir + "/manifest.json"));
  const open = (name) => ort.InferenceSession.create(new Uint8Array(fs.readFileSync(dir + "/" + name)));
  const sessions = {};
  for (const role of graphRoles(manifest)) sessions[role] = await open(manifest.graphs[role]);
  const runtime = new EqlmRuntime(ort, manifest, sessions, 1, await import(noiseUrl));
  const out = {};
  for (const [name, c] of Object.entries(JSON.parse(casesJson))) {
    const events = [];
    const request = { prompt, maxTokens: Number(maxTokens), depth: c.depth ?? null, tol: c.tol ?? null,
                      warmStart: !!c.warm_start, start: c.start || null, halt: c.halt || "residual",
                      seed: c.seed ?? 0, solver: c.solver || "picard" };
    try {
      for await (const e of runtime.generate(request)) {
        events.push([e.tokenId, e.iterations, e.text, Array.from(e.residuals || [])]);
      }
      out[name] = events;
    } catch (error) {
      out[name] = { refused: String(error.message || error) };  // a request the model does not take
    }
  }
  process.stdout.write(JSON.stringify(out));
})().catch((error) => { console.error(error); process.exit(1); });
"""


def js_runtime_events(onnx_dir: Path, prompt: str, cases: dict, max_tokens: int) -> dict[str, list[list]]:
    """{case name: [[token id, iterations, text, residuals], ...]} from the JS runtime, or {"refused": message} for a
    request the runtime refuses; skips without node."""
    if not shutil.which("node") or not ORT_WEB.exists():
        pytest.skip("node or node_modules/onnxruntime-web is missing (make vendor installs it)")
    runtime, noise = (ROOT / "static/js" / name for name in ("eqlm-runtime.js", "eqlm-noise.js"))
    arguments = [
        str(ORT_WEB),
        runtime.as_uri(),
        noise.as_uri(),
        str(onnx_dir),
        prompt,
        json.dumps(cases),
        str(max_tokens),
    ]
    result = subprocess.run(["node", "-e", NODE_SCRIPT, *arguments], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)
