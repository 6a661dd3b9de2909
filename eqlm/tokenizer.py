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


BYTES_PREFIX = "bytes:"
BOS_TOKEN = "\n"  # the beginning-of-text byte the portal's own evaluator (eqlm.blimp.BOS) scores after
BOS_TOKEN_ID = 10


def token_string(token_id: int) -> str:
    """The printable name of one byte token: the character for ASCII, OpenAI's `bytes:\\xe2` notation otherwise.

    A byte >= 0x80 is never valid UTF-8 alone, so it is named by its hex value: every one of the 256 tokens has a
    distinct name and `token_from_string` reverses it.
    """
    if not 0 <= token_id < VOCAB_SIZE:
        raise ValueError(f"token ids are bytes: 0..{VOCAB_SIZE - 1}, not {token_id}")
    return chr(token_id) if token_id < 0x80 else f"{BYTES_PREFIX}\\x{token_id:02x}"


def token_from_string(name: str) -> int:
    """The byte a `token_string` names."""
    if len(name) == 1 and ord(name) < 0x80:
        return ord(name)
    if name.startswith(BYTES_PREFIX + "\\x") and len(name) == len(BYTES_PREFIX) + 4:
        value = int(name[len(BYTES_PREFIX) + 2 :], 16)
        if value >= 0x80:
            return value
    raise ValueError(f"not a byte token name: {name!r}")
