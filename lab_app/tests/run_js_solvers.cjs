// Reads a JSON list of solver specs on stdin, runs each through static/js/lab/solvers.js (an ES module), prints the results.
"use strict";
const path = require("path");
const { pathToFileURL } = require("url");
const entry = pathToFileURL(path.join(__dirname, "..", "..", "static", "js", "lab", "solvers.js")).href;

let input = "";
process.stdin.on("data", (chunk) => (input += chunk));
process.stdin.on("end", async () => {
  const solvers = await import(entry);
  const { specs, limits } = JSON.parse(input);
  const out = specs.map((spec) => {
    try {
      return { ok: true, result: solvers.solve(spec, limits) };
    } catch (err) {
      return { ok: false, field: err.field || null, message: String(err.message) };
    }
  });
  process.stdout.write(JSON.stringify(out));
});
