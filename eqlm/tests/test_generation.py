"""The onnxruntime generation service: exact cached decoding, halting, warm start, sampling, stop strings."""

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from eqlm.decoder import DecodeCache, OnnxEqLM, process
from eqlm.generation import GenerationRequest, Generator
from eqlm.testing import tiny_model

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def generator(tiny_onnx_dir):
    return Generator(tiny_onnx_dir)


def test_incremental_decoding_with_per_iteration_cache_equals_one_batch(tiny_onnx_dir):
    model = OnnxEqLM(tiny_onnx_dir)
    ids = list(b"And God said, Let there be light")
    batch = DecodeCache(model, 6)
    z_all, _, _ = process(model, batch, ids, 6, None, "picard")
    one_by_one = DecodeCache(model, 6)
    zs = [process(model, one_by_one, [t], 6, None, "picard")[0] for t in ids]
    assert np.abs(np.concatenate(zs, axis=1) - z_all).max() < 1e-5


def test_greedy_text_equals_full_recomputation_in_torch(generator):
    import torch

    model = tiny_model()
    prompt = "In the beginning"
    result = generator.generate(GenerationRequest(prompt=prompt, max_tokens=12, depth=5))
    ids = list(prompt.encode())
    with torch.no_grad():
        for _ in range(12):
            logits = model.solve(torch.tensor([ids]), max_iter=5).logits[5]
            ids.append(int(logits[0, -1].argmax()))
    assert [e.token_id for e in result.tokens] == ids[len(prompt.encode()) :]
    assert result.completion_tokens == 12 and result.finish_reason == "length"
    assert result.mean_iterations == 5


def test_greedy_is_deterministic_and_seeded_sampling_repeats(generator):
    greedy = [generator.generate(GenerationRequest(prompt="Lord", max_tokens=8)).text for _ in range(2)]
    assert greedy[0] == greedy[1]
    sampled = [
        generator.generate(GenerationRequest(prompt="Lord", max_tokens=16, temperature=1.0, seed=7)).text
        for _ in range(2)
    ]
    assert sampled[0] == sampled[1]
    other = generator.generate(GenerationRequest(prompt="Lord", max_tokens=16, temperature=1.0, seed=8)).text
    assert other != sampled[0]


def test_top_p_near_zero_is_greedy(generator):
    greedy = generator.generate(GenerationRequest(prompt="Amen", max_tokens=8)).text
    nucleus = generator.generate(GenerationRequest(prompt="Amen", max_tokens=8, temperature=1.0, top_p=1e-6, seed=1))
    assert nucleus.text == greedy


def test_stop_string_ends_generation_before_it(generator):
    free = generator.generate(GenerationRequest(prompt="Amen", max_tokens=24, temperature=1.0, seed=3)).text
    stop = free[5:7]
    result = generator.generate(GenerationRequest(prompt="Amen", max_tokens=24, temperature=1.0, seed=3, stop=(stop,)))
    assert result.finish_reason == "stop"
    assert result.text == free[: free.find(stop)]
    streamed = "".join(
        e.text
        for e in generator.stream(
            GenerationRequest(prompt="Amen", max_tokens=24, temperature=1.0, seed=3, stop=(stop,))
        )
    )
    assert streamed == result.text


def test_a_stream_says_why_it_ended_once_it_is_exhausted(generator):
    free = generator.generate(GenerationRequest(prompt="Amen", max_tokens=24, temperature=1.0, seed=3)).text
    stop = free[5:7]
    stopped = generator.stream(GenerationRequest(prompt="Amen", max_tokens=24, temperature=1.0, seed=3, stop=(stop,)))
    assert "".join(e.text for e in stopped) == free[: free.find(stop)]
    assert stopped.finish_reason == "stop"
    full = generator.stream(GenerationRequest(prompt="Amen", max_tokens=3))
    assert len(list(full)) == 3 and full.finish_reason == "length"
    assert full.stats.completion_tokens == 3 and len(full.stats.iterations) == 3


def test_adaptive_halting_reports_iterations_below_cap_and_residuals_below_tol(generator):
    tol, cap = 0.05, 32
    result = generator.generate(GenerationRequest(prompt="The grace of our Lord", max_tokens=10, tol=tol))
    assert any(e.iterations < cap for e in result.tokens)
    assert result.mean_iterations < cap
    for event in result.tokens:
        assert event.residual < tol or event.iterations == cap


def test_adaptive_halting_in_onnx_matches_torch_solver(tiny_onnx_dir):
    import torch

    model = OnnxEqLM(tiny_onnx_dir)
    ids = list(b"grace and peace")
    z, iterations, residual = process(model, DecodeCache(model, 32), ids, 32, 0.05, "picard")
    ref = tiny_model().solve(torch.tensor([ids]), max_iter=32, tol=0.05)
    assert iterations.tolist() == ref.iterations[0].tolist()
    assert np.abs(ref.z.numpy() - z).max() < 1e-4


def test_warm_start_changes_the_start_not_the_interface(generator):
    cold = generator.generate(GenerationRequest(prompt="Jesus wept", max_tokens=8, tol=0.05))
    warm = generator.generate(GenerationRequest(prompt="Jesus wept", max_tokens=8, tol=0.05, warm_start=True))
    assert warm.completion_tokens == cold.completion_tokens == 8
    assert warm.mean_iterations > 0


def test_a_settled_solve_leaves_its_final_states_keys_and_values_in_every_iteration_slot(tiny_onnx_dir):
    """Warm start: later positions attend to the context's solved states from their first iteration on."""
    model = OnnxEqLM(tiny_onnx_dir)
    ids = list(b"grace and peace")
    cache = DecodeCache(model, 12)
    z, _, _ = process(model, cache, ids, 12, 0.05, "picard", settle=True)
    empty = model.empty_kv()
    _, k, v, _ = model.step(z, model.embed(np.asarray([ids]), np.arange(len(ids))[None, :]), empty, empty)
    for slot in range(12):
        past_k, past_v = cache.past(slot)
        assert np.array_equal(past_k, k) and np.array_equal(past_v, v)
    # a cold solve keeps the states each iteration passed through
    cold = DecodeCache(model, 12)
    process(model, cold, ids, 12, 0.05, "picard")
    assert not np.array_equal(cold.past(0)[0], cold.past(11)[0])


def test_anderson_solver_runs_and_reports_residuals(generator):
    result = generator.generate(GenerationRequest(prompt="Selah", max_tokens=6, tol=0.05, solver="anderson"))
    assert len(result.tokens) == 6
    assert all(np.isfinite(e.residual) for e in result.tokens)


def test_context_limit_ends_with_length(generator):
    result = generator.generate(GenerationRequest(prompt="x" * 200, max_tokens=40, depth=2))
    assert result.finish_reason == "length"
    assert result.completion_tokens <= 40


@pytest.mark.parametrize("bad", [{"depth": 0}, {"depth": 65}, {"solver": "newton"}, {"top_p": 0}, {"tol": -1}])
def test_bad_requests_are_refused(generator, bad):
    with pytest.raises(ValueError):
        generator.generate(GenerationRequest(prompt="a", **bad))


def test_generation_module_never_imports_torch(tiny_onnx_dir):
    probe = (
        "import sys; from pathlib import Path; from eqlm.generation import Generator, GenerationRequest; "
        f"g = Generator(Path({str(tiny_onnx_dir)!r})); g.generate(GenerationRequest(prompt='a', max_tokens=2)); "
        "print('torch' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "False"
