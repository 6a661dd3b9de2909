"""The onnxruntime generation service: exact cached decoding, halting, warm start, sampling, stop strings."""

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from eqlm.decoder import DecodeCache, OnnxEqLM, process
from eqlm.generation import GenerationRequest, Generator
from eqlm.noise import start_states
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


def test_an_anderson_solve_settles_as_a_warm_start_does(tiny_onnx_dir):
    """Anderson needs the map to stay put: its positions iterate against, and leave, the context's solved states."""
    model = OnnxEqLM(tiny_onnx_dir)
    ids = list(b"grace and peace")
    cache = DecodeCache(model, 12)
    z, _, _ = process(model, cache, ids, 12, 0.05, "anderson")
    empty = model.empty_kv()
    _, k, v, _ = model.step(z, model.embed(np.asarray([ids]), np.arange(len(ids))[None, :]), empty, empty)
    for slot in range(12):
        past_k, past_v = cache.past(slot)
        assert np.array_equal(past_k, k) and np.array_equal(past_v, v)


def test_the_browser_runtime_runs_anderson_after_as_many_picard_iterations_as_the_server():
    from eqlm.limits import ANDERSON_PICARD_FIRST

    source = (ROOT / "static" / "js" / "eqlm-runtime.js").read_text()
    assert f"const ANDERSON_PICARD_FIRST = {ANDERSON_PICARD_FIRST};" in source


def test_anderson_solver_runs_and_reports_residuals(generator):
    result = generator.generate(GenerationRequest(prompt="Selah", max_tokens=6, tol=0.05, solver="anderson"))
    assert len(result.tokens) == 6
    assert all(np.isfinite(e.residual) for e in result.tokens)


def test_context_limit_ends_with_length(generator):
    result = generator.generate(GenerationRequest(prompt="x" * 200, max_tokens=40, depth=2))
    assert result.finish_reason == "length"
    assert result.completion_tokens <= 40


def test_a_generation_at_the_context_limit_yields_one_token_per_free_position_and_one_more(generator):
    """The cache is sized to the prompt and the tokens asked (capped at the context): the limit still ends it."""
    free = 3
    prompt = "x" * (generator.max_positions - free)
    result = generator.generate(GenerationRequest(prompt=prompt, max_tokens=10, depth=2))
    assert (result.completion_tokens, result.finish_reason) == (free + 1, "length")
    short = generator.generate(GenerationRequest(prompt=prompt, max_tokens=2, depth=2))
    assert short.text == result.text[: len(short.text)] and short.completion_tokens == 2


def test_a_decode_cache_holds_the_positions_asked_up_to_the_models_context(tiny_onnx_dir):
    model = OnnxEqLM(tiny_onnx_dir)
    assert DecodeCache(model, 2).k.shape == (2, 1, model.n_heads, model.max_positions, model.head_dim)
    assert DecodeCache(model, 2, positions=5).k.shape[3] == 5
    assert DecodeCache(model, 2, positions=10**6).v.shape[3] == model.max_positions
    cache = DecodeCache(model, 2, positions=5)
    kv = np.ones((1, model.n_heads, 5, model.head_dim), np.float32)
    cache.put(0, kv, kv)
    cache.length = 5
    with pytest.raises(ValueError, match="holds 5 positions, not 6"):
        cache.put(0, kv[:, :, :1], kv[:, :, :1])


def test_a_noise_start_generates_what_a_full_recomputation_from_the_same_normals_does(generator):
    """Each position, the prompt's and every generated one's, starts at its own normals of the seed's stream."""
    import torch

    model = tiny_model()
    prompt, depth, seed = "In the beginning", 5, 11
    result = generator.generate(GenerationRequest(prompt=prompt, max_tokens=10, depth=depth, start="noise", seed=seed))
    ids = list(prompt.encode())
    with torch.no_grad():
        for _ in range(10):
            z0 = torch.from_numpy(start_states(seed, 0, len(ids), model.config.d_model))
            logits = model.solve(torch.tensor([ids]), max_iter=depth, z0=z0).logits[depth]
            ids.append(int(logits[0, -1].argmax()))
    assert [e.token_id for e in result.tokens] == ids[len(prompt.encode()) :]
    assert result.stats.start == "noise" and result.stats.noise_seed == seed


def test_a_noise_start_repeats_for_its_seed_and_defaults_to_seed_0(generator):
    def run(**kw):
        request = GenerationRequest(prompt="Lord", max_tokens=12, depth=3, logprobs=True, start="noise", **kw)
        return np.stack([e.logprobs for e in generator.generate(request).tokens])

    assert np.array_equal(run(seed=0), run())
    assert np.array_equal(run(seed=4), run(seed=4))
    assert not np.array_equal(run(seed=4), run(seed=5))
    zero = generator.generate(GenerationRequest(prompt="Lord", max_tokens=12, depth=3, logprobs=True))
    assert not np.array_equal(run(), np.stack([e.logprobs for e in zero.tokens]))


def test_start_warm_is_warm_start_and_a_conflicting_pair_is_refused(generator):
    def tokens(**kw):
        result = generator.generate(GenerationRequest(prompt="Jesus wept", max_tokens=8, tol=0.05, **kw))
        return [(e.token_id, e.iterations, e.residual) for e in result.tokens], result.stats.start

    assert tokens(start="warm") == tokens(warm_start=True) == tokens(start="warm", warm_start=True)
    assert tokens(start="warm")[1] == "warm"
    assert tokens(start="zero", warm_start=False) == tokens() and tokens()[1] == "zero"
    for start, warm in (("zero", True), ("noise", True), ("warm", False)):
        with pytest.raises(ValueError, match=f"warm_start={warm} conflicts with start='{start}'"):
            generator.generate(GenerationRequest(prompt="a", start=start, warm_start=warm))


def test_kl_halting_in_onnx_matches_the_torch_solver(tiny_onnx_dir):
    import torch

    model = OnnxEqLM(tiny_onnx_dir)
    ids = list(b"grace and peace")
    tol = 3e-7  # the random model's next-byte distributions are near uniform: small KLs
    z, iterations, _ = process(model, DecodeCache(model, 32), ids, 32, tol, "picard", halt="kl")
    ref = tiny_model().solve(torch.tensor([ids]), max_iter=32, tol=tol, halt="kl")
    assert iterations.tolist() == ref.iterations[0].tolist()
    assert len(set(iterations.tolist())) > 1 and iterations.max() < 32
    assert np.abs(ref.z.numpy() - z).max() < 1e-4
    residual_rule = process(model, DecodeCache(model, 32), ids, 32, tol, "picard")[1]
    assert iterations.tolist() != residual_rule.tolist()  # another rule, not the residual's under a new name


@pytest.mark.parametrize("tol", [1e-2, 1e-3])
def test_kl_halting_on_the_served_model_matches_its_torch_checkpoint(tol):
    import torch

    from eqlm.checkpoint import load_checkpoint

    torch_model, _ = load_checkpoint(ROOT / "models" / "eqlm-demo" / "checkpoint.pt")
    model = OnnxEqLM(ROOT / "models" / "eqlm-demo" / "onnx")
    ids = list(b"In the beginning God created the heaven")
    z, iterations, _ = process(model, DecodeCache(model, 64), ids, 64, tol, "picard", halt="kl")
    with torch.no_grad():
        ref = torch_model.eval().solve(torch.tensor([ids]), max_iter=64, tol=tol, halt="kl")
    assert iterations.tolist() == ref.iterations[0].tolist()
    assert len(set(iterations.tolist())) > 3 and iterations.max() < 64
    assert np.abs(ref.z.numpy() - z).max() < 1e-3


def test_kl_halting_generates_with_its_iterations_and_reports_the_rule(generator):
    result = generator.generate(GenerationRequest(prompt="The grace of our Lord", max_tokens=10, tol=1e-3, halt="kl"))
    assert result.stats.halt == "kl" and result.stats.depth == 64  # with tol and no depth, the model's cap
    assert any(e.iterations < 64 for e in result.tokens)
    fixed = generator.generate(GenerationRequest(prompt="a", max_tokens=2, depth=6, halt="kl"))
    assert fixed.stats.halt is None and fixed.mean_iterations == 6  # without tol the depth is fixed


def test_a_models_manifest_sets_its_default_depth_and_its_cap(tiny_onnx_export):
    deep = Generator(tiny_onnx_export(0, max_depth=128, default_depth=5))
    assert (deep.default_depth, deep.max_depth) == (5, 128)
    assert deep.generate(GenerationRequest(prompt="a", max_tokens=2)).mean_iterations == 5
    result = deep.generate(GenerationRequest(prompt="a", max_tokens=2, depth=128))
    assert result.mean_iterations == 128 and result.stats.depth == 128
    assert deep.generate(GenerationRequest(prompt="a", max_tokens=2, tol=1e-9)).stats.depth == 128
    with pytest.raises(ValueError, match="depth must be between 1 and 128"):
        deep.generate(GenerationRequest(prompt="a", max_tokens=2, depth=129))


@pytest.mark.parametrize(
    "bad",
    [
        {"depth": 0},
        {"depth": 65},
        {"solver": "newton"},
        {"top_p": 0},
        {"tol": -1},
        {"start": "random"},
        {"halt": "entropy"},
        {"start": "zero", "warm_start": True},
    ],
)
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
