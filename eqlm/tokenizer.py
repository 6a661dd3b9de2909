"""Byte-level tokenizer (vocabulary = the 256 UTF-8 byte values); JavaScript does the same with TextEncoder."""

from __future__ import annotations

import codecs

VOCAB_SIZE = 256


def encode(text: str) -> list[int]:
    return list(text.encode("utf-8"))


def decode(token_ids: list[int]) -> str:
    return bytes(token_ids).decode("utf-8", errors="replace")


class IncrementalDecoder:
    """Turns a stream of byte tokens into text pieces; returns "" while a UTF-8 sequence is incomplete."""

    def __init__(self):
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")

    def push(self, token_id: int) -> str:
        return self._decoder.decode(bytes([token_id]))

    def flush(self) -> str:
        return self._decoder.decode(b"", final=True)
