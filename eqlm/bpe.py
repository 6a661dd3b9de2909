"""GPT-2's byte-pair encoding (50,257 ids) read with tiktoken from a pinned local ranks file, never the network.

The ranks file is `whisper/assets/gpt2.tiktoken` of the openai-whisper sdist on PyPI (the same bytes as tiktoken's
own r50k_base ranks); `scripts/fetch_gpt2_ranks.py` (`make setup`) extracts it once to GPT2_RANKS_PATH. tiktoken is
imported on the first load only, so importing this module costs nothing.
"""

from __future__ import annotations

import hashlib
import os
import sys
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import tiktoken

# Where the ranks come from: one file of one pinned sdist, checked by its sha256 (tiktoken_ext.openai_public's
# expected hash of r50k_base.tiktoken is the same).
WHISPER_VERSION = "20250625"
WHISPER_SDIST_MEMBER = f"openai_whisper-{WHISPER_VERSION}/whisper/assets/gpt2.tiktoken"
GPT2_RANKS_SHA256 = "306cd27f03c1a714eca7108e03d66b7dc042abe8c258b44c199a7ed9838dd930"

# tiktoken's GPT-2 definition (tiktoken_ext/openai_public.py, `gpt2` and `r50k_base`): the original GPT-2 pattern
# `'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+` written with possessive quantifiers.
GPT2_PATTERN = r"""'(?:[sdmt]|ll|ve|re)| ?\p{L}++| ?\p{N}++| ?[^\s\p{L}\p{N}]++|\s++$|\s+(?!\S)|\s"""
ENDOFTEXT = "<|endoftext|>"
ENDOFTEXT_ID = 50256
GPT2_VOCAB_SIZE = 50257


class RanksMissing(RuntimeError):
    """The GPT-2 ranks file is absent or is not the pinned one."""


def ranks_path() -> Path:
    """GPT2_RANKS_PATH when set, else share/eqlm/gpt2.tiktoken inside the running environment (.venv), where
    `make clean` (var/) does not remove it."""
    configured = os.environ.get("GPT2_RANKS_PATH", "").strip()
    return Path(configured) if configured else Path(sys.prefix) / "share" / "eqlm" / "gpt2.tiktoken"


def file_sha256(path: Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def ranks_present(path: Path | None = None) -> bool:
    """Whether the ranks file is there with the pinned sha256."""
    path = ranks_path() if path is None else path
    return path.is_file() and file_sha256(path) == GPT2_RANKS_SHA256


@cache
def gpt2_encoding() -> tiktoken.Encoding:
    """The GPT-2 Encoding, built once per process from the local ranks file (tiktoken downloads nothing)."""
    path = ranks_path()
    if not path.is_file():
        raise RanksMissing(f"the GPT-2 ranks file {path} is missing: run `make setup` (or set GPT2_RANKS_PATH)")
    if file_sha256(path) != GPT2_RANKS_SHA256:  # checked here: tiktoken skips its check when caching is off
        raise RanksMissing(f"{path} is not the pinned GPT-2 ranks file (sha256 {GPT2_RANKS_SHA256})")
    import tiktoken
    import tiktoken.load

    ranks = tiktoken.load.load_tiktoken_bpe(str(path), expected_hash=GPT2_RANKS_SHA256)
    return tiktoken.Encoding(
        name="gpt2",
        explicit_n_vocab=GPT2_VOCAB_SIZE,
        pat_str=GPT2_PATTERN,
        mergeable_ranks=ranks,
        special_tokens={ENDOFTEXT: ENDOFTEXT_ID},
    )
