"""Tokenizers by name: "bytes" (the 256 UTF-8 byte values) and "gpt2" (GPT-2's BPE); static/js/tokenizer.js twins it.

`get_tokenizer(name)` gives one cached object per name with the same surface: encode/decode, printable token names
that `token_from_string` reverses, a streaming decoder, and the begin/end-of-text tokens. A model's manifest names
its tokenizer (`tokenizer_name`). GPT-2 is loaded on first use (eqlm.bpe), so importing this module loads nothing.
"""

from __future__ import annotations

import codecs
import re
from functools import cache

from . import bpe
from . import tokenizer as byte_tokenizer

TOKENIZER_NAMES = ("bytes", "gpt2")
# What manifests written before the key named a tokenizer by carry under "tokenizer" (eqlm/onnx_io.py wrote it).
LEGACY_NAMES = {"utf-8 bytes (token id = byte value)": "bytes"}
BYTES_PREFIX = byte_tokenizer.BYTES_PREFIX


def tokenizer_name(manifest: dict) -> str:
    """The tokenizer a model's manifest names: "bytes" when it names none."""
    name = manifest.get("tokenizer") or "bytes"
    name = LEGACY_NAMES.get(name, name)
    if name not in TOKENIZER_NAMES:
        raise ValueError(f"unknown tokenizer {name!r}: the portal knows {', '.join(TOKENIZER_NAMES)}")
    return name


class IncrementalDecoder:
    """Turns a stream of token ids into text pieces, holding back bytes while a UTF-8 sequence is incomplete."""

    def __init__(self, tokenizer: Tokenizer):
        self._token_bytes = tokenizer.token_bytes
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")

    def push(self, token_id: int) -> str:
        return self._decoder.decode(self._token_bytes(token_id))

    def flush(self) -> str:
        return self._decoder.decode(b"", final=True)


class Tokenizer:
    """What every tokenizer offers. Token names are the token's text when its bytes are valid UTF-8 alone, else
    OpenAI's `bytes:\\xNN...` notation (every byte in hex), so each id has one name and `token_from_string` reverses
    it. `bos_token_id` is the token a text is scored after when it has no prompt (`add_special_tokens` prepends it);
    `eot_token_id` ends a document (None when the vocabulary has none)."""

    name: str
    vocab_size: int
    bos_token_id: int
    eot_token_id: int | None
    tokenizer_class: str

    def encode(self, text: str) -> list[int]:
        raise NotImplementedError

    def token_bytes(self, token_id: int) -> bytes:
        raise NotImplementedError

    def token_id(self, data: bytes) -> int:
        """The id whose bytes are `data` exactly (ValueError when no single token is)."""
        raise NotImplementedError

    def decode(self, token_ids: list[int]) -> str:
        """The text of the ids; bytes that are not valid UTF-8 become U+FFFD (never a lone surrogate)."""
        return b"".join(self.token_bytes(t) for t in token_ids).decode("utf-8", errors="replace")

    def incremental_decoder(self) -> IncrementalDecoder:
        return IncrementalDecoder(self)

    @property
    def bos_token(self) -> str:
        return self.token_string(self.bos_token_id)

    @property
    def eot_token(self) -> str | None:
        return None if self.eot_token_id is None else self.token_string(self.eot_token_id)

    def check_id(self, token_id: int) -> None:
        if not 0 <= token_id < self.vocab_size:
            raise ValueError(f"token ids of {self.name} are 0..{self.vocab_size - 1}, not {token_id}")

    def token_string(self, token_id: int) -> str:
        data = self.token_bytes(token_id)
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError:
            return BYTES_PREFIX + "".join(f"\\x{b:02x}" for b in data)

    def token_from_string(self, name: str) -> int:
        """The id `token_string` names (ValueError for any other string)."""
        data = hex_bytes(name[len(BYTES_PREFIX) :]) if name.startswith(BYTES_PREFIX) else name.encode("utf-8")
        token_id = self.token_id(data) if data else None
        if token_id is None or self.token_string(token_id) != name:
            raise ValueError(f"not a {self.name} token name: {name!r}")
        return token_id


def hex_bytes(text: str) -> bytes:
    """The bytes `\\xNN\\xNN...` spells (b"" when it spells none)."""
    if not re.fullmatch(r"(\\x[0-9a-f]{2})+", text):
        return b""
    return bytes(int(text[i + 2 : i + 4], 16) for i in range(0, len(text), 4))


class ByteTokenizer(Tokenizer):
    """eqlm.tokenizer behind the common surface: token names are exactly eqlm.tokenizer.token_string's."""

    name = "bytes"
    vocab_size = byte_tokenizer.VOCAB_SIZE
    bos_token_id = byte_tokenizer.BOS_TOKEN_ID
    eot_token_id = None
    tokenizer_class = "EqLMByteTokenizer"

    def encode(self, text: str) -> list[int]:
        return byte_tokenizer.encode(text)

    def decode(self, token_ids: list[int]) -> str:
        return byte_tokenizer.decode(token_ids)

    def token_bytes(self, token_id: int) -> bytes:
        self.check_id(token_id)
        return bytes([token_id])

    def token_id(self, data: bytes) -> int:
        if len(data) != 1:
            raise ValueError(f"not one byte: {data!r}")
        return data[0]

    def token_string(self, token_id: int) -> str:
        return byte_tokenizer.token_string(token_id)

    def token_from_string(self, name: str) -> int:
        return byte_tokenizer.token_from_string(name)


class GPT2Tokenizer(Tokenizer):
    """GPT-2's BPE through tiktoken. Text that spells `<|endoftext|>` encodes to its id, as GPT-2's own tokenizer
    (Hugging Face's, which the programme's models were trained with) does."""

    name = "gpt2"
    vocab_size = bpe.GPT2_VOCAB_SIZE
    bos_token_id = bpe.ENDOFTEXT_ID
    eot_token_id = bpe.ENDOFTEXT_ID
    tokenizer_class = "GPT2Tokenizer"

    def __init__(self):
        self.encoding = bpe.gpt2_encoding()

    def encode(self, text: str) -> list[int]:
        return self.encoding.encode(text, allowed_special="all")

    def token_bytes(self, token_id: int) -> bytes:
        self.check_id(token_id)
        return self.encoding.decode_single_token_bytes(token_id)

    def token_id(self, data: bytes) -> int:
        try:
            return self.encoding.encode_single_token(data)
        except KeyError:
            raise ValueError(f"no single GPT-2 token is {data!r}") from None


@cache
def get_tokenizer(name: str) -> Tokenizer:
    """The tokenizer called `name` ("bytes" or "gpt2"), built once per process."""
    if name == "bytes":
        return ByteTokenizer()
    if name == "gpt2":
        return GPT2Tokenizer()
    raise ValueError(f"unknown tokenizer {name!r}: the portal knows {', '.join(TOKENIZER_NAMES)}")
