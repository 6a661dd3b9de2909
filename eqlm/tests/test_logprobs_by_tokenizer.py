"""The logprob wire shapes in the model's own tokens: GPT-2 tokens are named by their text with their bytes and
character offsets; byte tokens keep their names and one offset per byte."""

import numpy as np
import pytest

from eqlm.generation import GenerationRequest
from eqlm.logprobs import TextOffsets, chat_logprob_entry, completion_logprobs
from eqlm.tokenizers import get_tokenizer

GPT2 = get_tokenizer("gpt2")
TEXT = "naïve 🚀 fox, café"


def test_gpt2_text_offsets_count_characters_and_a_token_inside_a_character_starts_at_it():
    ids = GPT2.encode(TEXT)
    offsets = TextOffsets(GPT2).take(ids)
    assert offsets[0] == 0 and offsets == sorted(offsets)
    for token, offset in zip(ids, offsets, strict=True):
        name = GPT2.token_string(token)
        if not name.startswith("bytes:"):
            assert TEXT[offset : offset + len(name)] == name
    rocket = TEXT.index("🚀")
    inside = [o for t, o in zip(ids, offsets, strict=True) if GPT2.token_string(t).startswith("bytes:")]
    assert inside and set(inside) <= {rocket - 1, rocket}  # " \xf0\x9f" and "\x9a\x80" (the space may lead)


def test_byte_offsets_stay_one_per_byte_from_the_given_start():
    ids = list("café".encode())
    assert TextOffsets(None, 3).take(ids) == [3, 4, 5, 6, 7]
    assert TextOffsets(get_tokenizer("bytes"), 3).take(ids) == [3, 4, 5, 6, 7]
    rows = [None, *np.log(np.full((4, 256), 1 / 256))]
    plain = completion_logprobs(ids, rows, 1, offset=3)
    assert completion_logprobs(ids, rows, 1, 3, get_tokenizer("bytes")) == plain
    assert plain["tokens"] == ["c", "a", "f", "bytes:\\xc3", "bytes:\\xa9"] and plain["text_offset"] == [3, 4, 5, 6, 7]


def test_gpt2_logprobs_name_tokens_and_alternatives_by_text_and_chat_gives_their_bytes():
    ids = GPT2.encode(" café au lait")
    rows = [None] + [np.log(np.full(GPT2.vocab_size, 1 / GPT2.vocab_size)) for _ in ids[1:]]
    for row, token in zip(rows[1:], ids[1:], strict=True):
        row[token] = 0.0  # each token the most likely: it leads its alternatives
    body = completion_logprobs(ids, rows, 2, tokenizer=GPT2)
    assert body["tokens"] == [GPT2.token_string(t) for t in ids]
    assert body["token_logprobs"][0] is None and body["token_logprobs"][1:] == [0.0] * (len(ids) - 1)
    assert all(next(iter(top)) == name for top, name in zip(body["top_logprobs"][1:], body["tokens"][1:], strict=True))
    entry = chat_logprob_entry(ids[-1], rows[-1], 1, GPT2)
    assert entry["token"] == GPT2.token_string(ids[-1]) and entry["bytes"] == list(GPT2.token_bytes(ids[-1]))
    assert entry["top_logprobs"][0]["bytes"] == entry["bytes"]


def test_a_request_encodes_its_prompt_in_the_given_tokenizer_and_checks_ids_against_the_vocabulary():
    request = GenerationRequest(prompt="The quick brown fox")
    assert request.ids() == list(b"The quick brown fox")
    assert request.ids(GPT2) == [464, 2068, 7586, 21831]
    GenerationRequest(prompt="", prompt_ids=(50256,)).validate(vocab_size=GPT2.vocab_size)
    with pytest.raises(ValueError, match="0..50256"):
        GenerationRequest(prompt="", prompt_ids=(50257,)).validate(vocab_size=GPT2.vocab_size)
    with pytest.raises(ValueError, match="bytes: 0..255"):
        GenerationRequest(prompt="", prompt_ids=(256,)).validate()
