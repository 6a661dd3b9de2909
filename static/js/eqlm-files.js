/* A model's files in the browser: which precision to run, whether the device can hold it, and its graphs and external
   data fetched with download progress and kept in Cache Storage, keyed by each file's sha256.

   - precision: the manifest lists `precisions` (["fp32", "int8"] when the export has int8 graphs beside the fp32
     ones, each named `<role>_int8` under `graphs`); the dial runs int8 when every role has it, else fp32;
   - memory: the bytes of the chosen graphs and external data (the manifest's `graph_bytes`), twice (the fetched
     bytes and onnxruntime's copy in WebAssembly memory while a session is created), plus the per-iteration K/V
     cache, against the device's limit: the page's own (a server setting), else half of navigator.deviceMemory,
     and never more than WebAssembly's 4 GiB;
   - files: each is read from Cache Storage under its sha256 when it is there (no network at all), else streamed
     with fetch + ReadableStream (progress as bytes arrive) and put into the cache. The cache keys are URLs of this
     origin that are never fetched (`/eqlm-cache/sha256/<hex>`), so one file is stored once whatever page or
     model names it. Each model's list of the sha256 it last used is kept too (`/eqlm-cache/model/<id>`): files of
   its earlier export that the new one does not use are deleted, so a re-exported model does not pile up. Without
   Cache Storage (node, an insecure origin) files are fetched each time. */

const CACHE_NAME = "eqlm-model-files-v1";
const WASM_LIMIT = 4 * 1024 ** 3; // wasm32: 4 GiB of linear memory at most
const GIB = 1024 ** 3;

function graphKey(role, precision) { return precision === "int8" ? `${role}_int8` : role; }

/* "int8" when the manifest lists it and names an int8 graph for every role, else "fp32"; `wanted` forces one. */
function choosePrecision(manifest, roles, wanted = null) {
  const graphs = manifest.graphs || {};
  const listed = (manifest.precisions || ["fp32"]).includes("int8");
  const hasInt8 = listed && roles.every((role) => graphs[graphKey(role, "int8")]);
  if (wanted === "int8" && !hasInt8) throw new Error("this model has no int8 export");
  if (wanted === "fp32") return "fp32";
  return hasInt8 ? "int8" : "fp32";
}

/* The files one precision reads: [{key, name, roles}] for its graphs, then its external data (read by those graphs). */
function filesOf(manifest, roles, precision) {
  const keys = roles.map((role) => graphKey(role, precision));
  const graphs = keys.map((key) => ({ key, name: manifest.graphs[key], roles: [key] }));
  const external = Object.entries(manifest.external_data || {})
    .map(([name, readers]) => ({ key: name, name, roles: readers.filter((reader) => keys.includes(reader)) }))
    .filter((file) => file.roles.length);
  return [...graphs, ...external];
}

/* Bytes to download (null when the manifest does not say) and the memory the model needs (estimate). */
function sizeOf(manifest, files) {
  const sizes = manifest.graph_bytes || {};
  const known = files.every((file) => Number(sizes[file.key]) > 0);
  const download = known ? files.reduce((sum, file) => sum + Number(sizes[file.key]), 0) : null;
  const cacheBytes = 2 * 4 * Number(manifest.n_heads) * Number(manifest.max_positions) * Number(manifest.head_dim)
    * Number(manifest.max_depth || 1);
  return { download, memory: download === null ? null : 2 * download + cacheBytes };
}

/* The most memory the dial lets a model take on this device, and how it knows. */
function deviceLimit(configured = 0) {
  if (Number(configured) > 0) return { bytes: Math.min(Number(configured), WASM_LIMIT), from: "the server's setting" };
  const gib = Number(globalThis.navigator && globalThis.navigator.deviceMemory);
  if (gib > 0) return { bytes: Math.min((gib * GIB) / 2, WASM_LIMIT), from: `half of this device's ${gib} GiB` };
  return { bytes: WASM_LIMIT, from: "WebAssembly's 4 GiB" };
}

/* An error that says the device cannot hold the model (the page then offers the server instead). */
class CannotHold extends Error {
  constructor(message, { needed = null, limit = null, cause = null } = {}) {
    super(message);
    Object.assign(this, { name: "CannotHold", needed, limit, cause });
  }
}

async function openCache() {
  try {
    return globalThis.caches && globalThis.isSecureContext !== false ? await globalThis.caches.open(CACHE_NAME) : null;
  } catch {
    return null; // storage disabled (a private window, a policy): fetch every time
  }
}

function cacheKey(sha256) { return new URL(`/eqlm-cache/sha256/${sha256}`, globalThis.location.href).href; }

/* The body of a response as bytes, reporting each chunk's size as it arrives. */
async function readStreaming(response, onBytes) {
  if (!response.body || !response.body.getReader) {
    const bytes = new Uint8Array(await response.arrayBuffer());
    onBytes(bytes.length);
    return bytes;
  }
  const length = Number(response.headers.get("Content-Length")) || 0;
  const reader = response.body.getReader();
  let out = length ? new Uint8Array(length) : new Uint8Array(1 << 20);
  let used = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    if (used + value.length > out.length) {
      const bigger = new Uint8Array(Math.max(out.length * 2, used + value.length));
      bigger.set(out.subarray(0, used));
      out = bigger;
    }
    out.set(value, used);
    used += value.length;
    onBytes(value.length);
  }
  return used === out.length ? out : out.slice(0, used);
}

/* {bytes: {key: Uint8Array}, fromCache: [key], notCached: [key]} of `files` ([{key, name, url, sha256}]): notCached
   lists the files downloaded that the cache refused (over the origin's quota). onProgress({loaded, total, cached,
   file}) after each chunk or cached file. */
async function fetchFiles(files, { total = null, onProgress = () => {}, credentials = "same-origin" } = {}) {
  const cache = await openCache();
  const progress = { loaded: 0, total, cached: 0, file: null };
  const fromCache = [];
  const notCached = [];
  const read = async (file) => {
    const key = cache && file.sha256 ? cacheKey(file.sha256) : null;
    const hit = key ? await cache.match(key) : null;
    if (hit) {
      const bytes = new Uint8Array(await hit.arrayBuffer());
      fromCache.push(file.key);
      Object.assign(progress, { loaded: progress.loaded + bytes.length, cached: progress.cached + bytes.length, file: file.name });
      onProgress({ ...progress });
      return bytes;
    }
    // kept in Cache Storage: not in the HTTP cache as well (a second copy of hundreds of MB)
    const response = await fetch(file.url, { credentials, ...(key ? { cache: "no-store" } : {}) });
    if (!response.ok) throw new Error(`${file.name}: HTTP ${response.status}`);
    const bytes = await readStreaming(response, (n) => {
      Object.assign(progress, { loaded: progress.loaded + n, file: file.name });
      onProgress({ ...progress });
    });
    if (key) {
      try {
        await cache.put(key, new Response(bytes, { headers: { "Content-Type": "application/octet-stream" } }));
      } catch {
        notCached.push(file.key); // over the origin's quota: the next visit downloads it again
      }
    }
    return bytes;
  };
  const bytes = {};
  for (const file of files) bytes[file.key] = await read(file); // one at a time: the progress reads in order
  return { bytes, fromCache, notCached };
}

/* Keep `modelId`'s list of files (sha256) and delete the files of its previous list that this one does not name. */
async function forgetReplaced(modelId, digests) {
  const cache = await openCache();
  if (!cache || !modelId) return;
  const key = new URL(`/eqlm-cache/model/${encodeURIComponent(modelId)}`, globalThis.location.href).href;
  try {
    const previous = await cache.match(key);
    const old = previous ? await previous.json() : [];
    await Promise.all(old.filter((sha) => !digests.includes(sha)).map((sha) => cache.delete(cacheKey(sha))));
    await cache.put(key, new Response(JSON.stringify(digests), { headers: { "Content-Type": "application/json" } }));
  } catch { /* storage refused: the old files stay until the browser evicts them */ }
}

export { CannotHold, forgetReplaced, CACHE_NAME, cacheKey, choosePrecision, deviceLimit, fetchFiles, filesOf, graphKey, sizeOf };
