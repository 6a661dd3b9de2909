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
touch "$out/.stamp"
echo "vendored: $(ls "$out" "$out/ort" | tr '\n' ' ')"
