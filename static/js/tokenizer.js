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
