/* Byte-level tokenizer of the demo EqLM, identical to eqlm/tokenizer.py: tokens are UTF-8 bytes (0-255).
   Works as a browser global (window.EqlmTokenizer) and as a CommonJS module (node tests). */
(function (root) {
  "use strict";

  const VOCAB_SIZE = 256;

  function encode(text) {
    return Array.from(new TextEncoder().encode(text));
  }

  function decode(tokenIds) {
    return new TextDecoder("utf-8", { fatal: false }).decode(new Uint8Array(tokenIds));
  }

  /* Streaming decoder: push(token) returns the new text, "" while a UTF-8 sequence is incomplete
     (as Python's codecs incremental decoder with errors="replace"). */
  class IncrementalDecoder {
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

  const api = { VOCAB_SIZE, encode, decode, IncrementalDecoder };
  if (typeof module !== "undefined" && module.exports) module.exports = api;
  else root.EqlmTokenizer = api;
})(typeof self !== "undefined" ? self : this);
