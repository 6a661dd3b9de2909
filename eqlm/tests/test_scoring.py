"""Prompt scoring on the ONNX runtime: one batched solve, the generator's own log-softmax, byte token names."""

import math

import numpy as np
import pytest

from eqlm.decoder import ContextLengthExceeded
from eqlm.generation import GenerationRequest, Generator
from eqlm.logprobs import chat_logprob_entry, completion_logprobs, log_softmax, top_k
from eqlm.scoring import rolling_bits_per_byte, rolling_windows, score_prompt
from eqlm.tokenizer import token_from_string, token_string


@pytest.fixture(scope="module")
def generator(tiny_onnx_dir):
    return Generator(tiny_onnx_dir)


def test_every_byte_has_a_distinct_reversible_token_name():
    names = [token_string(b) for b in range(256)]
    assert len(set(names)) == 256
    assert [token_from_string(n) for n in names] == list(range(256))
    assert token_string(ord("A")) == "A" and token_string(0xE2) == "bytes:\\xe2"
    with pytest.raises(ValueError):
        token_string(256)


@pytest.mark.parametrize("solver,tol", [("picard", None), ("anderson", None), ("picard", 0.05)])
def test_echoed_prompt_logprobs_are_the_generators_own_log_softmax(generator, solver, tol):
    prompt = "In the beginning"
    request = GenerationRequest(
        prompt=prompt, max_tokens=3, depth=12, tol=tol, solver=solver, temperature=0, logprobs=True, echo_logprobs=True
    )
    stream = generator.stream(request)
    events = list(stream)
    score = score_prompt(generator.model, list(prompt.encode()), 12, tol, solver)
    assert np.abs(stream.stats.prompt_logprobs - score.logprobs[:-1]).max() <= 1e-5
    assert np.abs(events[0].logprobs - score.logprobs[-1]).max() <= 1e-5
    for event in events:
        assert event.token_id == top_k(event.logprobs, 1)[0][0]
        assert math.isclose(np.exp(event.logprobs).sum(), 1.0, rel_tol=1e-9)


def test_prompt_token_ids_are_raw_bytes_never_reencoded(generator):
    stream = generator.stream(GenerationRequest(prompt="", prompt_ids=(195, 65), max_tokens=0, echo_logprobs=True))
    list(stream)
    assert stream.stats.prompt_ids == [195, 65] and stream.stats.prompt_logprobs.shape == (1, 256)


def test_a_prompt_past_the_context_is_refused_when_scored_and_truncated_when_generated(generator):
    long = "a" * (generator.max_positions + 1)
    with pytest.raises(ContextLengthExceeded):
        list(generator.stream(GenerationRequest(prompt=long, max_tokens=1, echo_logprobs=True)))
    with pytest.raises(ContextLengthExceeded):
        score_prompt(generator.model, list(long.encode()), 4)
    assert generator.generate(GenerationRequest(prompt=long, max_tokens=2, temperature=0)).completion_tokens == 2


def test_wire_shapes_name_bytes_and_count_offsets_in_bytes():
    rows = [None, log_softmax(np.arange(256.0)), log_softmax(np.zeros(256))]
    shape = completion_logprobs([0xC3, 0xA9, 65], rows, k=2, offset=5)
    assert shape["tokens"] == ["bytes:\\xc3", "bytes:\\xa9", "A"] and shape["text_offset"] == [5, 6, 7]
    assert shape["token_logprobs"][0] is None and shape["top_logprobs"][0] is None
    assert list(shape["top_logprobs"][1]) == ["bytes:\\xff", "bytes:\\xfe"]
    assert list(shape["top_logprobs"][2]) == ["\x00", "\x01"]  # ties: lowest id first, as greedy picks
    entry = chat_logprob_entry(0xE2, rows[1], 1)
    assert entry["bytes"] == [0xE2] and entry["top_logprobs"][0]["bytes"] == [255]


def test_rolling_windows_score_every_token_once_with_context():
    for n in (1, 10, 11, 25):
        windows = rolling_windows(n, 10)
        scored = [i for _, first, end in windows for i in range(first, end)]
        assert scored == list(range(1, n + 1))
        assert all(end - start <= 11 and first > start for start, first, end in windows)


def test_rolling_bits_per_byte_is_the_sum_of_window_scores(generator):
    text = b"And God said, Let there be light: and there was light. " * 3
    seq = [10, *text]
    total = 0.0
    for start, first, end in rolling_windows(len(text), 62):
        score = score_prompt(generator.model, seq[start:end], 4)
        total += sum(score.token_logprobs()[first - start - 1 :])
    measured = rolling_bits_per_byte(generator.model, text, 4, max_length=64)
    assert math.isclose(measured, -total / len(text) / math.log(2))
