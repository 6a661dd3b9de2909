"""Tokenizers by name: GPT-2's BPE gives GPT-2's ids offline, and "bytes" is the byte tokenizer unchanged."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from eqlm import bpe, tokenizer
from eqlm.tokenizers import get_tokenizer, tokenizer_name

from .tokenizer_corpus import blimp_sentences, corpus

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def gpt2():
    if not bpe.ranks_present():
        pytest.fail(f"GPT-2's ranks are not at {bpe.ranks_path()}: run make setup")
    return get_tokenizer("gpt2")


def run_python(code: str, **env) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env={**os.environ, **env}, capture_output=True, text=True, timeout=60
    )


def test_the_ranks_file_is_the_pinned_one_and_gpt2_has_50257_ids(gpt2):
    assert bpe.file_sha256(bpe.ranks_path()) == bpe.GPT2_RANKS_SHA256
    assert gpt2.encoding.n_vocab == gpt2.vocab_size == 50257
    assert gpt2.encoding.max_token_value == gpt2.eot_token_id == 50256


def test_gpt2_ids_are_the_programmes_ids_of_its_texts(gpt2, shared_dir):
    files = sorted((shared_dir / "programme-models").glob("*.expected.json"))
    if not files:
        pytest.skip("no programme reference files in ../shared/programme-models")
    texts = [(t["text"], t["ids"]) for f in files for t in json.loads(f.read_text())["texts"]]
    assert texts
    for text, ids in texts:
        assert gpt2.encode(text) == ids, text
        assert gpt2.decode(ids) == text


def test_gpt2_gives_the_known_ids_of_a_sentence(gpt2):
    # GPT-2's own ids of this sentence (the programme's reference files hold the same)
    assert gpt2.encode("The quick brown fox jumps over the lazy dog.") == [
        464, 2068, 7586, 21831, 18045, 625, 262, 16931, 3290, 13
    ]  # fmt: skip


def test_gpt2_round_trips_unicode_whitespace_code_and_emoji(gpt2, settings):
    texts = corpus() + blimp_sentences(Path(settings.BLIMP_DIR), pairs=5)
    for text in texts:
        ids = gpt2.encode(text)
        assert all(0 <= i < 50257 for i in ids)
        assert gpt2.decode(ids) == text, text


def test_text_that_spells_endoftext_is_its_token(gpt2):
    assert gpt2.encode("a<|endoftext|>b") == [64, 50256, 65]
    assert gpt2.decode([50256]) == "<|endoftext|>"
    assert gpt2.bos_token == gpt2.eot_token == "<|endoftext|>"


def test_every_gpt2_token_has_one_name_that_names_it_back(gpt2):
    names = [gpt2.token_string(i) for i in range(gpt2.vocab_size)]
    assert len(set(names)) == gpt2.vocab_size
    assert [gpt2.token_from_string(name) for name in names] == list(range(gpt2.vocab_size))
    # a token whose bytes are not UTF-8 alone is named byte by byte, as OpenAI does
    broken = gpt2.encode("🚀")
    assert [gpt2.token_string(i) for i in broken] == ["bytes:\\xf0\\x9f", "bytes:\\x9a", "bytes:\\x80"]


@pytest.mark.parametrize("name", ["bytes:\\xF0\\x9F", "bytes:\\x41", "bytes:", "bytes:\\x4", "no such token", "\ud800"])
def test_a_string_that_names_no_gpt2_token_is_refused(gpt2, name):
    with pytest.raises(ValueError):
        gpt2.token_from_string(name)


def test_gpt2_streaming_decode_holds_back_split_utf8_until_it_is_whole(gpt2):
    for text in corpus():
        decoder = gpt2.incremental_decoder()
        pieces = [decoder.push(i) for i in gpt2.encode(text)] + [decoder.flush()]
        assert "".join(pieces) == text
        assert "\ufffd" not in "".join(pieces) or "\ufffd" in text
    decoder = gpt2.incremental_decoder()
    assert [decoder.push(i) for i in gpt2.encode("🚀")] == ["", "", "🚀"]
    assert decoder.push(gpt2.encode("é")[0]) == "é"
    assert decoder.push(gpt2.token_from_string("bytes:\\xf0\\x9f")) == "" and decoder.flush() == "\ufffd"


def test_the_bytes_tokenizer_is_eqlm_tokenizer_unchanged():
    byte = get_tokenizer("bytes")
    assert (byte.vocab_size, byte.bos_token_id, byte.bos_token, byte.eot_token_id) == (256, 10, "\n", None)
    for text in corpus():
        assert byte.encode(text) == tokenizer.encode(text)
        assert byte.decode(byte.encode(text)) == tokenizer.decode(tokenizer.encode(text))
    assert [byte.token_string(i) for i in range(256)] == [tokenizer.token_string(i) for i in range(256)]
    assert [byte.token_from_string(byte.token_string(i)) for i in range(256)] == list(range(256))
    stream = list("naïve 🚀".encode()) + [0xE2, 0x28]
    ours, theirs = byte.incremental_decoder(), tokenizer.IncrementalDecoder()
    assert [ours.push(b) for b in stream] + [ours.flush()] == [theirs.push(b) for b in stream] + [theirs.flush()]


def test_a_manifest_names_its_tokenizer_and_one_that_names_none_is_bytes():
    assert tokenizer_name({}) == "bytes"
    assert tokenizer_name({"tokenizer": "utf-8 bytes (token id = byte value)"}) == "bytes"  # manifests before the key
    assert tokenizer_name({"tokenizer": "gpt2"}) == "gpt2"
    with pytest.raises(ValueError, match="unknown tokenizer 'llama'"):
        tokenizer_name({"tokenizer": "llama"})


def test_get_tokenizer_builds_each_once_and_refuses_unknown_names(gpt2):
    assert get_tokenizer("gpt2") is gpt2 and get_tokenizer("bytes") is get_tokenizer("bytes")
    with pytest.raises(ValueError, match="unknown tokenizer"):
        get_tokenizer("GPT2")


def test_importing_the_tokenizers_loads_neither_tiktoken_nor_torch():
    code = "import sys, eqlm.tokenizers; print(sorted({'tiktoken', 'torch'} & set(sys.modules)))"
    result = run_python(code)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"


def test_a_fresh_environment_encodes_with_no_cache_and_no_network(tmp_path, gpt2):
    """Nothing in ~/.cache or tiktoken's cache, and every socket refused: GPT-2 still loads from the ranks file."""
    code = (
        "import socket\n"
        "def refuse(*args, **kwargs): raise OSError('the network was used')\n"
        "socket.socket.connect = refuse\n"
        "socket.create_connection = refuse\n"
        "from eqlm.tokenizers import get_tokenizer\n"
        "print(get_tokenizer('gpt2').encode('Hello world'))\n"
    )
    home, cache = tmp_path / "home", tmp_path / "tiktoken-cache"
    home.mkdir()
    result = run_python(
        code, HOME=str(home), XDG_CACHE_HOME=str(home / ".cache"), TIKTOKEN_CACHE_DIR=str(cache),
        GPT2_RANKS_PATH=str(bpe.ranks_path()),
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[15496, 995]"
    assert not (home / ".cache").exists()


def test_without_the_ranks_file_gpt2_says_to_run_make_setup(tmp_path):
    code = "from eqlm.tokenizers import get_tokenizer\nget_tokenizer('gpt2')"
    result = run_python(code, GPT2_RANKS_PATH=str(tmp_path / "absent.tiktoken"))
    assert result.returncode != 0 and "RanksMissing" in result.stderr and "make setup" in result.stderr


def test_another_ranks_file_is_refused(tmp_path):
    wrong = tmp_path / "gpt2.tiktoken"
    wrong.write_bytes(b"IQ== 0\n")
    code = "from eqlm.tokenizers import get_tokenizer\nget_tokenizer('gpt2')"
    result = run_python(code, GPT2_RANKS_PATH=str(wrong), TIKTOKEN_CACHE_DIR="")
    assert result.returncode != 0 and "is not the pinned GPT-2 ranks file" in result.stderr
