#!/usr/bin/env bash
# Copy the pinned npm assets into static/vendor/ (served by whitenoise; nothing comes from a CDN).
set -euo pipefail
cd "$(dirname "$0")/.."
out=static/vendor
rm -rf "$out" && mkdir -p "$out/ort"
cp node_modules/plotly.js-dist-min/plotly.min.js "$out/plotly.min.js"
cp node_modules/axe-core/axe.min.js "$out/axe.min.js"
cp node_modules/onnxruntime-web/dist/ort.wasm.min.js "$out/ort/"
cp node_modules/onnxruntime-web/dist/ort-wasm-simd-threaded.wasm "$out/ort/"
cp node_modules/onnxruntime-web/dist/ort-wasm-simd-threaded.mjs "$out/ort/"
for f in node_modules/onnxruntime-web/dist/ort.wasm.min.js.map; do [ -f "$f" ] && cp "$f" "$out/ort/"; done
# gpt-tokenizer's GPT-2 encoding (r50k_base: GPT-2's ranks and pattern), as its dependency-free ES modules: the entry
# module and every module it imports, relative paths kept (static/js/tokenizer.js imports it on demand).
gpt=node_modules/gpt-tokenizer
mkdir -p "$out/gpt-tokenizer"
cp "$gpt/LICENSE" "$gpt/esm/package.json" "$out/gpt-tokenizer/"  # package.json: {"type": "module"} for node
node --input-type=module - "$gpt/esm" encoding/r50k_base.js <<'JS' | while read -r f; do
import fs from "node:fs";
import path from "node:path";
const [root, entry] = process.argv.slice(2);
const seen = new Set();
const stack = [entry];
const specifier = /^\s*(?:import|export)\b[^"';]*?["']([^"']+)["']/gm;
while (stack.length) {
  const file = stack.pop();
  if (seen.has(file)) continue;
  seen.add(file);
  for (const [, spec] of fs.readFileSync(path.join(root, file), "utf8").matchAll(specifier)) {
    if (!spec.startsWith(".")) throw new Error(`${file} imports the package ${spec}: vendor it too`);
    stack.push(path.posix.normalize(path.posix.join(path.posix.dirname(file), spec)));
  }
}
console.log([...seen].sort().join("\n"));
JS
  mkdir -p "$out/gpt-tokenizer/$(dirname "$f")" && cp "$gpt/esm/$f" "$out/gpt-tokenizer/$f"
done
test -f "$out/gpt-tokenizer/encoding/r50k_base.js"
touch "$out/.stamp"
echo "vendored: $(ls "$out" "$out/ort" | tr '\n' ' ') gpt-tokenizer: $(find "$out/gpt-tokenizer" -name '*.js' | wc -l) modules"
