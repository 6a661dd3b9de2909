"""Continuous batching on a trained model: every request gets what it would get alone, joining and leaving freely.

eqlm-demo is trained (random weights would put near-ties everywhere, and a tie is no test of token equality).
"""

import os
import threading
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pytest

from eqlm.batch_decode import BatchScheduler
from eqlm.batched_generator import BatchedGenerator, batched_graphs
from eqlm.decoder import DecodeCache, OnnxEqLM
from eqlm.generation import GenerationRequest, Generator

ROOT = Path(__file__).resolve().parents[2]
DEMO = ROOT / "models" / "eqlm-demo" / "onnx"
EXPLICIT = ROOT / "models" / "explicit-demo" / "onnx"  # a trained explicit transformer of 12 distinct layers

REQUESTS = [
    GenerationRequest(prompt="In the beginning", max_tokens=24, depth=4),
    GenerationRequest(prompt="And God said", max_tokens=30, depth=12),
    GenerationRequest(prompt="The LORD is my shepherd", max_tokens=20, depth=24, tol=1e-3),
    GenerationRequest(prompt="Blessed are", max_tokens=20, depth=16, tol=0.05, halt="kl"),
    GenerationRequest(prompt="And it came to pass", max_tokens=20, depth=8, start="warm"),
    GenerationRequest(prompt="Thou shalt", max_tokens=16, depth=10, solver="anderson", tol=1e-3),
    GenerationRequest(prompt="Let there be", max_tokens=40, depth=6, stop=("\n", ".")),
    GenerationRequest(prompt="He said unto them", max_tokens=20, depth=6, temperature=0.8, top_p=0.9, seed=7),
]


@pytest.fixture(scope="module")
def alone():
    return Generator(DEMO)


@pytest.fixture
def batched():
    return BatchedGenerator(DEMO, max_rows=16)


def _events(stream):
    return [(e.token_id, e.text, e.iterations) for e in stream]


def _run_together(generator, requests, results, gate=None):
    def run(i, request):
        stream = generator.stream(request)
        first = next(stream)  # the prompt's solve and first token run before the others start decoding
        gate.wait()
        results[i] = ([(first.token_id, first.text, first.iterations)] + _events(stream), stream.finish_reason)

    gate = gate or threading.Barrier(len(requests))
    threads = [threading.Thread(target=run, args=(i, r)) for i, r in enumerate(requests)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)


def test_the_batched_step_graph_runs_each_row_as_the_step_graph_runs_it_alone():
    model = OnnxEqLM(DEMO)
    scheduler = BatchScheduler(model)
    rng = np.random.default_rng(0)
    d, h, dh = model.d_model, model.n_heads, model.head_dim
    rows = [(rng.standard_normal((1, 1, d)), rng.standard_normal((1, 1, d)), p) for p in (0, 3, 7)]
    calls = []
    for z, inj, p in rows:
        past = rng.standard_normal((2, 1, h, p, dh)).astype(np.float32)
        calls.append((z.astype(np.float32), inj.astype(np.float32), past[0], past[1]))
    batch = scheduler.run([type("C", (), {"inputs": c})() for c in calls])
    for call, got in zip(calls, batch, strict=True):
        for a, b in zip(model.step(*call), got, strict=True):
            np.testing.assert_allclose(b, a, rtol=1e-5, atol=1e-6)


def test_prompts_of_different_lengths_run_in_one_call_and_each_row_gets_its_lone_outputs():
    """Each row is right-padded to the longest prompt; causal attention keeps the padding out of its positions."""
    model = OnnxEqLM(DEMO)
    scheduler = BatchScheduler(model)
    rng = np.random.default_rng(2)
    d = model.d_model
    calls = []
    for t in (1, 4, 9):
        z, inj = (rng.standard_normal((1, t, d)).astype(np.float32) for _ in range(2))
        calls.append((z, inj, model.empty_kv(), model.empty_kv()))
    batch = scheduler.run_prompts([type("C", (), {"inputs": c})() for c in calls])
    for call, got in zip(calls, batch, strict=True):
        for a, b in zip(model.step(*call), got, strict=True):
            assert b.shape == a.shape
            np.testing.assert_allclose(b, a, rtol=1e-5, atol=1e-6)


def test_prompt_iterations_at_different_slots_share_a_call_of_an_eqlms_one_step_graph():
    """An EqLM's iterations are one graph, so a prompt at its first iteration and another at its sixth run in one
    call."""
    model = OnnxEqLM(DEMO)
    scheduler = BatchScheduler(model, graphs=batched_graphs(model.manifest), prompt_wait_s=2.0)
    rng = np.random.default_rng(3)
    calls = []
    for t in (3, 5):  # whichever iteration each is at: the slot only picks the past it is given
        z, inj = (rng.standard_normal((1, t, model.d_model)).astype(np.float32) for _ in range(2))
        calls.append((z, inj, model.empty_kv(), model.empty_kv()))
    results = [None, None]
    gate = threading.Barrier(2)

    def run(i):
        with scheduler.prompting():
            gate.wait(timeout=60)
            results[i] = scheduler.prompt_step(*calls[i])

    threads = [threading.Thread(target=run, args=(i,)) for i in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert (scheduler.prompt_batches, scheduler.largest_prompt) == (1, 2)
    for call, got in zip(calls, results, strict=True):
        for a, b in zip(model.step(*call), got, strict=True):
            assert b.shape == a.shape
            np.testing.assert_allclose(b, a, rtol=1e-5, atol=1e-6)


def _explicit_prompt_rows(model: OnnxEqLM, lengths, past: int, scale=(1.0, 5.0, 1.0)):
    """Prompt calls of an explicit transformer (z [1, T, D], no inj, every layer's past K/V [layers, 1, H, P, Dh])."""
    rng = np.random.default_rng(4)
    shape = (len(model.manifest["layers"]), 1, model.n_heads, past, model.head_dim)
    return [
        (rng.standard_normal((1, t, model.d_model)).astype(np.float32) * s, None)
        + tuple(rng.standard_normal(shape).astype(np.float32) for _ in range(2))
        for t, s in zip(lengths, scale, strict=False)
    ]


@pytest.mark.parametrize("precision", ["fp32", "int8"])
def test_an_explicit_transformers_prompts_run_through_every_layer_in_one_call_and_get_their_lone_chained_pass(
    precision, explicit_int8
):
    """Rows of different lengths, right-padded, in one call of the chained layers (int8: in their per-row form, a
    row's activations five times another's) get on their own positions what the lone chained pass gives them: to
    float rounding in fp32, bit for bit in int8."""
    model = OnnxEqLM(explicit_int8, precision=precision)
    scheduler = BatchedGenerator(explicit_int8, precision=precision).scheduler
    calls = _explicit_prompt_rows(model, (6, 2, 4), past=3)
    got = scheduler.run_prompts([type("C", (), {"inputs": c})() for c in calls])
    for (z, _, past_k, past_v), (z_out, k, v) in zip(calls, got, strict=True):
        want, kv = model.chained_pass(z, list(zip(past_k, past_v, strict=True)))
        check = np.testing.assert_array_equal if precision == "int8" else np.testing.assert_allclose
        kwargs = {} if precision == "int8" else {"rtol": 1e-5, "atol": 1e-5}
        assert z_out.shape == want.shape and k.shape == (len(kv), *kv[0][0].shape)
        check(z_out, want, **kwargs)
        check(k, np.stack([x for x, _ in kv]), **kwargs)
        check(v, np.stack([x for _, x in kv]), **kwargs)


PROMPTS = ("In the beginning", "And God said unto Moses", "Blessed", "Thou shalt not")


def _prompts_together(batched, requests) -> list:
    """Each request streamed on its own thread, every prompt's solve begun before any of them runs an iteration (a
    prompt that begins alone runs its iterations itself, and a small model's whole prompt can end before the next
    thread has begun); [(events, finish_reason)] in request order."""
    batched.scheduler.prompt_wait_s = 2.0  # a generous bound: a slow CI machine does not split the prompts
    gate, solving = threading.Barrier(len(requests)), batched.model.solving

    @contextmanager
    def together(new_positions):
        with solving(new_positions):
            if new_positions > 1:
                gate.wait(timeout=60)
            yield

    batched.model.solving = together
    results = [None] * len(requests)

    def run(i, request):
        stream = batched.stream(request)
        results[i] = (_events(stream), stream.finish_reason)

    threads = [threading.Thread(target=run, args=(i, r)) for i, r in enumerate(requests)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    return results


@pytest.mark.parametrize("export", [DEMO, EXPLICIT], ids=["eqlm", "explicit"])
def test_prompts_solved_together_share_each_iterations_call_and_each_equals_its_lone_generation(export):
    """Prompts that arrive together (an EqLM's iterations, an explicit transformer's layers) run their iterations in
    shared calls, as vLLM batches prefills, and every request still gets what it gets alone."""
    requests = [GenerationRequest(prompt=p, max_tokens=6) for p in PROMPTS]
    if export == DEMO:
        requests[1] = GenerationRequest(prompt=PROMPTS[1], max_tokens=6, depth=12, tol=1e-3)
        requests[2] = GenerationRequest(prompt=PROMPTS[2], max_tokens=6, depth=6, start="warm")
    alone = Generator(export)
    lone = [(_events(s := alone.stream(r)), s.finish_reason) for r in requests]
    batched = BatchedGenerator(export)
    assert _prompts_together(batched, requests) == lone
    assert batched.scheduler.largest_prompt == len(requests)


def test_int8_prompts_solved_together_share_each_iterations_call_and_each_equals_its_lone_generation(demo_int8):
    """The lone int8 graphs quantise a call's activations on one scale, so int8 prompts share calls in per-row forms
    of those graphs: each row is quantised as its lone call is, and gets what it gets alone."""
    requests = [GenerationRequest(prompt=p, max_tokens=6) for p in PROMPTS]
    alone = Generator(demo_int8, precision="int8")
    lone = [(_events(s := alone.stream(r)), s.finish_reason) for r in requests]
    batched = BatchedGenerator(demo_int8, precision="int8")
    assert _prompts_together(batched, requests) == lone
    assert batched.scheduler.largest_prompt == len(requests)
    assert batched.scheduler.largest >= 2


def test_an_explicit_transformers_int8_prompts_solved_together_share_one_call_and_each_equals_its_lone_generation(
    explicit_int8,
):
    """An explicit transformer's prompts pass through every layer in one call of its chained layers, int8's in their
    per-row form, and no lone layer graph is loaded for them."""
    requests = [GenerationRequest(prompt=p, max_tokens=6) for p in PROMPTS]
    alone = Generator(explicit_int8, precision="int8")
    lone = [(_events(s := alone.stream(r)), s.finish_reason) for r in requests]
    batched = BatchedGenerator(explicit_int8, precision="int8")
    assert _prompts_together(batched, requests) == lone
    assert (batched.scheduler.prompt_batches, batched.scheduler.largest_prompt) == (1, len(requests))
    assert batched.model._layer_sessions is None


def test_a_per_row_int8_prompt_graph_gives_each_row_its_lone_graphs_products_bit_for_bit(demo_int8):
    """Two prompts of different lengths in one call of the prompt graph (the shorter right-padded with copies of its
    last position, as the scheduler pads it, and masked by prompt_valid) get, on their own positions, the lone int8
    graph's outputs bit for bit, though one row's activations are five times the other's."""
    import json

    import onnxruntime as ort

    from eqlm.batch_decode import PROMPT_VALID
    from eqlm.batch_solve import prefix_mask
    from eqlm.batched_generator import per_row_prompt_session

    manifest = json.loads((demo_int8 / "manifest.json").read_text())
    graphs, d, heads = manifest["graphs"], manifest["d_model"], manifest["n_heads"]
    lone = ort.InferenceSession(str(demo_int8 / graphs["step_int8"]), providers=["CPUExecutionProvider"])
    prompts, _ = per_row_prompt_session(OnnxEqLM(demo_int8, precision="int8"), threads=1)
    rng = np.random.default_rng(1)
    rows = [
        {name: rng.standard_normal((1, t, d)).astype(np.float32) * scale for name in ("z", "inj")}
        for t, scale in ((5, 1.0), (3, 5.0))
    ]
    past = rng.standard_normal((2, heads, 2, d // heads)).astype(np.float32)

    def padded(x):
        return np.pad(x, ((0, 0), (0, 5 - x.shape[1]), (0, 0)), mode="edge")

    feed = {name: np.concatenate([padded(row[name]) for row in rows]) for name in ("z", "inj")}
    valid = prefix_mask([5, 3], 5)
    together = prompts.run(None, {**feed, "past_k": past, "past_v": past, PROMPT_VALID: valid})
    for i, row in enumerate(rows):
        t = row["z"].shape[1]
        alone = lone.run(None, {**row, "past_k": past[i : i + 1], "past_v": past[i : i + 1]})
        for a, b in zip(alone, together, strict=True):
            np.testing.assert_array_equal(b[i : i + 1, ..., :t, :] if b.ndim == 4 else b[i : i + 1, :t], a)
    unmasked = prompts.run(None, {**feed, "past_k": past, "past_v": past, PROMPT_VALID: np.ones_like(valid)})
    assert not np.array_equal(unmasked[0][1:, :3], together[0][1:, :3])  # the padding would move the short row


def test_concurrent_generations_equal_each_alone_for_mixed_depths_halting_and_sampling(alone, batched):
    lone = [(_events(s := alone.stream(r)), s.finish_reason) for r in REQUESTS]
    results = [None] * len(REQUESTS)
    _run_together(batched, REQUESTS, results)
    for request, want, got in zip(REQUESTS, lone, results, strict=True):
        assert got == want, request
    assert batched.scheduler.largest >= 2  # the rows really ran together
    assert batched.scheduler.largest_head >= 2  # and so did their head calls
    assert batched.scheduler.solves_whole > 0  # Picard rows' solves went whole; KL and Anderson rows' step by step
    assert batched.scheduler.rows == 0


def test_a_picard_decode_solve_is_handed_in_whole_and_iterated_with_the_other_rows_solves(alone, batched):
    """A decoded position's Picard solve (no halting, or the residual's) is one hand-over: the scheduler iterates it
    with the other rows' solves, each at its own depth, tol and start, and each row gets what it gets alone."""
    requests = [
        GenerationRequest(prompt="In the beginning", max_tokens=16, depth=8),
        GenerationRequest(prompt="And God said", max_tokens=16, depth=12, tol=1e-3),
        GenerationRequest(prompt="Blessed are", max_tokens=16, depth=10, start="warm"),
    ]
    lone = [(_events(s := alone.stream(r)), s.finish_reason) for r in requests]
    results = [None] * len(requests)
    _run_together(batched, requests, results)
    assert results == lone
    assert batched.scheduler.solves_whole > 0 and batched.scheduler.largest >= 2


def test_rows_ask_their_next_token_heads_together_so_each_token_reads_the_head_once(alone):
    """A row that has ended its solve waits for the rows still solving before its head call runs: the heads of
    rows at one depth then run in one call a token (the head's matrix is the largest read), and the rows start
    their next solves together."""
    batched = BatchedGenerator(DEMO)
    batched.scheduler.head_wait_s = 2.0  # a generous bound: a slow CI machine does not break the rows' alignment
    tokens = 16
    prompts = ("In the beginning", "And God said", "Blessed are", "Thou shalt")
    requests = [GenerationRequest(prompt=p, max_tokens=tokens, depth=8) for p in prompts]
    lone = [(_events(s := alone.stream(r)), s.finish_reason) for r in requests]
    results = [None] * len(requests)
    _run_together(batched, requests, results)
    assert results == lone
    scheduler = batched.scheduler
    assert scheduler.largest_head == len(requests)
    # one head call a token once the rows align (the first tokens' heads run as each prompt ends); each row asking
    # alone would make up to 4 a token (measured with no wait: 26 and 36 calls)
    assert scheduler.head_batches <= tokens + 4


def test_a_request_that_joins_mid_batch_streams_what_it_would_alone(alone, batched):
    first, joiner = REQUESTS[1], REQUESTS[0]
    want_first, want_joiner = _events(alone.stream(first)), _events(alone.stream(joiner))
    joined, got = threading.Event(), {}

    def run_first():
        stream = batched.stream(first)
        events = []
        for event in stream:
            events.append((event.token_id, event.text, event.iterations))
            if len(events) == 5:
                joined.set()
        got["first"] = events

    def run_joiner():
        joined.wait(timeout=60)
        pieces = []
        for event in batched.stream(joiner):
            pieces.append((event.token_id, event.text, event.iterations))
        got["joiner"] = pieces

    threads = [threading.Thread(target=run_first), threading.Thread(target=run_joiner)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert got["first"] == want_first
    assert got["joiner"] == want_joiner
    assert "".join(text for _, text, _ in got["joiner"]) == "".join(text for _, text, _ in want_joiner)


def test_a_cancelled_stream_leaves_the_batch_and_the_others_go_on(alone, batched):
    keeper = REQUESTS[1]
    want = _events(alone.stream(keeper))
    cancelled = batched.stream(REQUESTS[0])
    for _ in range(3):
        next(cancelled)
    assert batched.scheduler.rows == 1
    kept = batched.stream(keeper)
    got = [next(kept)]
    assert batched.scheduler.rows == 2
    cancelled.close()  # the client went away
    assert batched.scheduler.rows == 1
    got += list(kept)
    assert [(e.token_id, e.text, e.iterations) for e in got] == want
    assert batched.scheduler.rows == 0


PROGRAMME = Path(
    os.environ.get("PROGRAMME_MODELS_DIR", Path(__file__).resolve().parents[2].parent / "shared" / "programme-models")
)
PROGRAMME_IDS = (464, 2068, 7586, 21831, 18045, 625, 262, 16931, 3290, 13)  # "The quick brown fox jumps over ..."


@pytest.mark.skipif(not (PROGRAMME / "eqlm-postln.pt").exists(), reason="the programme's reference checkpoints")
def test_a_programme_eqlm_export_batches_too_and_each_request_equals_its_lone_generation(tmp_path):
    from eqlm.export_programme import export_programme_onnx
    from eqlm.programme.checkpoint import load_programme_model

    model, _ = load_programme_model(PROGRAMME / "eqlm-postln.pt", 10**9)
    manifest = export_programme_onnx(model, tmp_path, model_id="eqlm-postln")
    assert manifest["graphs"]["step_batched"] == "step_batched.onnx"
    requests = [
        GenerationRequest(prompt="", prompt_ids=PROGRAMME_IDS[:k], max_tokens=10, depth=d, tol=tol)
        for k, d, tol in ((3, 4, None), (6, 12, None), (10, 8, None), (5, 24, 1e-3))
    ]
    alone, batched = Generator(tmp_path), BatchedGenerator(tmp_path)
    lone = [(_events(s := alone.stream(r)), s.finish_reason) for r in requests]
    results = [None] * len(requests)
    _run_together(batched, requests, results)
    assert results == lone
    assert batched.scheduler.largest >= 2


def test_a_batched_pass_runs_each_row_through_the_layers_as_its_layer_graphs_run_it_alone():
    model = OnnxEqLM(EXPLICIT)
    scheduler = BatchScheduler(model, graphs=tuple(model.manifest["batched_layers"]))
    rng = np.random.default_rng(1)
    rows = []
    for length in (0, 2, 9):  # each row's cache holds `length` positions of random K/V in every layer
        cache = DecodeCache(model, 12)
        cache.k[:, :, :, :length] = rng.standard_normal(cache.k[:, :, :, :length].shape)
        cache.v[:, :, :, :length] = rng.standard_normal(cache.v[:, :, :, :length].shape)
        cache.length = length
        rows.append((rng.standard_normal((1, 1, model.d_model)).astype(np.float32), cache))
    want = []
    for z, cache in rows:  # alone: layer after layer through the lone graphs, on a copy of the cache
        k, v = cache.k.copy(), cache.v.copy()
        for slot in range(12):
            p = cache.length
            z, k_new, v_new, _ = model.step(z, z, k[slot, :, :, :p], v[slot, :, :, :p], slot)
            k[slot, :, :, p], v[slot, :, :, p] = k_new[:, :, 0], v_new[:, :, 0]
        want.append((z, k, v))
    got = scheduler.run_passes([type("Call", (), {"inputs": row})() for row in rows])
    for (z, k, v), (out,), (_, cache) in zip(want, got, rows, strict=True):
        np.testing.assert_allclose(out, z, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(cache.k, k, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(cache.v, v, rtol=1e-5, atol=1e-6)


def test_an_explicit_transformers_concurrent_generations_run_every_layer_in_one_call_together_and_equal_each_alone():
    """Its rows move through the 12 layers together, the batched layers chained into one call for them all."""
    prompts = ("In the beginning", "And God said", "Blessed are", "Thou shalt", "Let there be")
    requests = [GenerationRequest(prompt=p, max_tokens=16 + 3 * i) for i, p in enumerate(prompts)]
    requests.append(GenerationRequest(prompt="He said unto them", max_tokens=20, temperature=0.8, seed=3))
    requests.append(GenerationRequest(prompt="And it came", max_tokens=30, stop=("\n",)))
    alone, batched = Generator(EXPLICIT), BatchedGenerator(EXPLICIT)
    assert batched.scheduler is not None and len(batched.scheduler.sessions) == 1
    inputs = {i.name for i in batched.scheduler.sessions[0].get_inputs()}
    assert {"z", "past_valid", "past_k_00", "past_v_11"} <= inputs and len(inputs) == 2 + 2 * 12
    lone = [(_events(s := alone.stream(r)), s.finish_reason) for r in requests]
    results = [None] * len(requests)
    _run_together(batched, requests, results)
    assert results == lone
    assert batched.scheduler.largest >= 2
    assert batched.scheduler.rows == 0


@pytest.mark.skipif(not (PROGRAMME / "explicit-2layer.pt").exists(), reason="the programme's reference checkpoints")
def test_a_programme_explicit_export_batches_its_layers_and_each_request_equals_its_lone_generation(tmp_path):
    from eqlm.export_programme import export_programme_onnx
    from eqlm.programme.checkpoint import load_programme_model

    model, _ = load_programme_model(PROGRAMME / "explicit-2layer.pt", 10**9)
    manifest = export_programme_onnx(model, tmp_path, model_id="explicit-2layer")
    assert manifest["batched_layers"] == ["layer_00_batched", "layer_01_batched"]
    requests = [
        GenerationRequest(prompt="", prompt_ids=PROGRAMME_IDS[:k], max_tokens=n) for k, n in ((3, 10), (6, 12), (10, 8))
    ]
    alone, batched = Generator(tmp_path), BatchedGenerator(tmp_path)
    lone = [(_events(s := alone.stream(r)), s.finish_reason) for r in requests]
    results = [None] * len(requests)
    _run_together(batched, requests, results)
    assert results == lone
    assert batched.scheduler.largest >= 2


def test_an_int8_row_gets_the_same_products_bit_for_bit_alone_or_beside_a_row_five_times_larger(demo_int8):
    """int8 quantises each position's activations with its own scale, so a batched row never depends on the others
    (one scale per call would let the larger row coarsen the smaller one's 8-bit grid)."""
    import json

    import onnxruntime as ort

    manifest = json.loads((demo_int8 / "manifest.json").read_text())
    rng = np.random.default_rng(0)
    d, heads = manifest["d_model"], manifest["n_heads"]
    rows = {
        "z": rng.standard_normal((2, 1, d)).astype(np.float32) * np.array([1, 5], np.float32)[:, None, None],
        "inj": rng.standard_normal((2, 1, d)).astype(np.float32),
        "past_k": rng.standard_normal((2, heads, 3, d // heads)).astype(np.float32),
        "past_v": rng.standard_normal((2, heads, 3, d // heads)).astype(np.float32),
        "past_valid": np.ones((2, 3), np.float32),
    }
    graphs = manifest["graphs"]
    batched = ort.InferenceSession(str(demo_int8 / graphs["step_batched_int8"]), providers=["CPUExecutionProvider"])
    lone = ort.InferenceSession(str(demo_int8 / graphs["step_int8"]), providers=["CPUExecutionProvider"])
    together = batched.run(None, rows)
    for i in range(2):
        alone = lone.run(None, {name: value[i : i + 1] for name, value in rows.items() if name != "past_valid"})
        for a, b in zip(alone, together, strict=True):
            np.testing.assert_array_equal(b[i : i + 1], a)


def test_concurrent_int8_generations_batch_and_equal_each_alone(demo_int8):
    alone, batched = Generator(demo_int8, precision="int8"), BatchedGenerator(demo_int8, precision="int8")
    assert batched.scheduler is not None and batched.scheduler.graphs == ("step_batched_int8",)
    lone = [(_events(s := alone.stream(r)), s.finish_reason) for r in REQUESTS]
    results = [None] * len(REQUESTS)
    _run_together(batched, REQUESTS, results)
    assert results == lone
    assert batched.scheduler.largest >= 2


def test_an_explicit_transformers_int8_layers_batch_and_each_request_equals_its_lone_generation(explicit_int8):
    export = explicit_int8
    requests = [GenerationRequest(prompt=r.prompt, max_tokens=r.max_tokens, stop=r.stop) for r in REQUESTS[:6]]
    alone, batched = Generator(export, precision="int8"), BatchedGenerator(export, precision="int8")
    lone = [(_events(s := alone.stream(r)), s.finish_reason) for r in requests]
    results = [None] * len(requests)
    _run_together(batched, requests, results)
    assert results == lone
    assert batched.scheduler.largest >= 2
