/* Byte-level tokenizer of the demo EqLM, identical to eqlm/tokenizer.py: tokens are UTF-8 bytes (0-255).
   An ES module (the runtime imports it; node tests too). */
export const VOCAB_SIZE = 256;

export function encode(text) {
  return Array.from(new TextEncoder().encode(text));
}

export function decode(tokenIds) {
  return new TextDecoder("utf-8", { fatal: false }).decode(new Uint8Array(tokenIds));
}

/* Streaming decoder: push(token) returns the new text, "" while a UTF-8 sequence is incomplete
   (as Python's codecs incremental decoder with errors="replace"). */
export class IncrementalDecoder {
  constructor() {
    this.decoder = new TextDecoder("utf-8", { fatal: false });
  }
  push(tokenId) {
    return this.decoder.decode(new Uint8Array([tokenId]), { stream: true });
  }
  flush() {
    return this.decoder.decode();
  }
}

/* Tokenizers by name, as eqlm/tokenizers.py: "bytes" (the functions above) and "gpt2" (GPT-2's BPE, the vendored
   gpt-tokenizer's r50k_base encoding, imported only when asked for). Token names are the token's text when its bytes
   are valid UTF-8 alone, else "bytes:\xNN..." (every byte in hex); tokenFromString reverses them. */
export const TOKENIZER_NAMES = ["bytes", "gpt2"];
// What manifests written before the key named a tokenizer carry under "tokenizer" (eqlm/tokenizers.py LEGACY_NAMES).
const LEGACY_NAMES = { "utf-8 bytes (token id = byte value)": "bytes" };
const BYTES_PREFIX = "bytes:";
const ENDOFTEXT = "<|endoftext|>";
const ENDOFTEXT_ID = 50256;
// GPT-2's pre-tokenizer with Unicode's White_Space for \s, as tiktoken (and Python's `regex`) read it. JavaScript's
// own \s also takes U+FEFF and leaves out U+0085: gpt-tokenizer's pattern splits text holding them otherwise.
const WS = "\\t-\\r \\x85\\xa0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000";
const GPT2_SPLIT = new RegExp(
  `'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^${WS}\\p{L}\\p{N}]+|[${WS}]+(?![^${WS}])|[${WS}]+`,
  "gu",
);
const strictUtf8 = new TextDecoder("utf-8", { fatal: true });

function hexName(bytes) {
  return BYTES_PREFIX + Array.from(bytes, (b) => "\\x" + b.toString(16).padStart(2, "0")).join("");
}

function hexBytes(text) {
  if (!/^(\\x[0-9a-f]{2})+$/.test(text)) return null;
  return Uint8Array.from(text.slice(2).split("\\x"), (h) => parseInt(h, 16));
}

function makeTokenizer({ name, vocabSize, bosTokenId, eotTokenId, encode: encodeText, tokenBytes, tokenId }) {
  const tokenString = (id) => {
    const bytes = tokenBytes(id);
    try {
      return strictUtf8.decode(bytes);
    } catch {
      return hexName(bytes);
    }
  };
  const concat = (ids) => {
    const parts = ids.map(tokenBytes);
    const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
    let at = 0;
    for (const part of parts) {
      out.set(part, at);
      at += part.length;
    }
    return out;
  };
  return {
    name,
    vocabSize,
    bosTokenId,
    eotTokenId,
    encode: encodeText,
    tokenBytes,
    tokenString,
    decode: (ids) => new TextDecoder("utf-8", { fatal: false }).decode(concat(ids)),
    tokenFromString(text) {
      const named = text.startsWith(BYTES_PREFIX);
      const bytes = named ? hexBytes(text.slice(BYTES_PREFIX.length)) : new TextEncoder().encode(text);
      const id = bytes && bytes.length ? tokenId(bytes) : undefined;
      if (id === undefined || tokenString(id) !== text) {
        throw new Error(`not a ${name} token name: ${JSON.stringify(text)}`);
      }
      return id;
    },
    incrementalDecoder() {
      const decoder = new TextDecoder("utf-8", { fatal: false });
      return { push: (id) => decoder.decode(tokenBytes(id), { stream: true }), flush: () => decoder.decode() };
    },
  };
}

function checkId(name, vocabSize, id) {
  if (!(Number.isInteger(id) && id >= 0 && id < vocabSize)) {
    throw new RangeError(`token ids of ${name} are 0..${vocabSize - 1}, not ${id}`);
  }
}

function byteTokenizer() {
  return makeTokenizer({
    name: "bytes",
    vocabSize: VOCAB_SIZE,
    bosTokenId: 10, // "\n", the beginning-of-text byte (eqlm/tokenizer.py BOS_TOKEN_ID)
    eotTokenId: null,
    encode,
    tokenBytes: (id) => (checkId("bytes", VOCAB_SIZE, id), Uint8Array.of(id)),
    tokenId: (bytes) => (bytes.length === 1 ? bytes[0] : undefined),
  });
}

async function gpt2Tokenizer() {
  // One entry module: in a collected (hashed) deployment a second import would load the ranks a second time.
  const encoding = await import("../vendor/gpt-tokenizer/encoding/r50k_base.js");
  const core = encoding.default.bytePairEncodingCoreProcessor; // pinned gpt-tokenizer 4.0.0 (package.json)
  core.tokenSplitRegex = GPT2_SPLIT; // its instance's pattern: the vendored file is kept as published
  const vocabSize = encoding.vocabularySize;
  const utf8 = new TextEncoder();
  const bytesOf = (id) => {
    checkId("gpt2", vocabSize, id);
    const value = core.tryDecodeToken(id); // the token's text when it is valid UTF-8, else its bytes
    return typeof value === "string" ? utf8.encode(value) : Uint8Array.from(value);
  };
  let index = null; // the bytes of every token, as a latin-1 string, to its id: built on the first lookup
  const key = (bytes) => String.fromCharCode(...bytes);
  const tokenId = (bytes) => {
    if (index === null) {
      index = new Map();
      for (let id = 0; id < vocabSize; id++) index.set(key(bytesOf(id)), id);
    }
    return index.get(key(bytes));
  };
  return makeTokenizer({
    name: "gpt2",
    vocabSize,
    bosTokenId: ENDOFTEXT_ID,
    eotTokenId: ENDOFTEXT_ID,
    // Text that spells <|endoftext|> is that token, as in Python. Split here: gpt-tokenizer 4.0.0 finds an allowed
    // special token only at the start of the text.
    encode: (text) =>
      text.split(ENDOFTEXT).flatMap((part, i) => (i ? [ENDOFTEXT_ID] : []).concat(encoding.encode(part))),
    tokenBytes: bytesOf,
    tokenId,
  });
}

/* The tokenizer a model's manifest names, "bytes" when it names none (eqlm/tokenizers.py tokenizer_name). */
export function tokenizerName(manifest) {
  const given = (manifest && manifest.tokenizer) || "bytes";
  const name = LEGACY_NAMES[given] ?? given;
  if (!TOKENIZER_NAMES.includes(name)) {
    throw new Error(`unknown tokenizer ${JSON.stringify(name)}: the portal knows ${TOKENIZER_NAMES.join(", ")}`);
  }
  return name;
}

const loaded = new Map();

/* The tokenizer called `name` ("bytes" | "gpt2"), loaded once per page. */
export function getTokenizer(name) {
  if (!TOKENIZER_NAMES.includes(name)) {
    return Promise.reject(new Error(`unknown tokenizer ${JSON.stringify(name)}: ${TOKENIZER_NAMES.join(", ")}`));
  }
  if (!loaded.has(name)) loaded.set(name, name === "gpt2" ? gpt2Tokenizer() : Promise.resolve(byteTokenizer()));
  return loaded.get(name);
}
