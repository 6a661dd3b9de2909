"""The browser runtime decodes an explicit transformer exactly as the server does, and refuses what the server
refuses: slot i runs layer i's graph from the embedding, at its one depth, its layer count."""

import pytest

from .js_runtime import js_runtime_events

pytestmark = pytest.mark.slow  # node

PROMPT = "In the beginning"
LAYERS = 3
DECODED = {"its default depth": {}, "its layer count": {"depth": LAYERS}}
REFUSED = {
    "another depth": {"depth": LAYERS + 1},
    "a tol": {"tol": 0.01},
    "anderson": {"solver": "anderson"},
    "a warm start": {"start": "warm"},
    "the older warm start": {"warm_start": True},
    "a noise start": {"start": "noise"},
    "the kl rule": {"halt": "kl"},
}


@pytest.fixture(scope="module")
def explicit_dir(tiny_explicit_onnx_export):
    return tiny_explicit_onnx_export(LAYERS)


@pytest.fixture(scope="module")
def js_events(explicit_dir):
    return js_runtime_events(explicit_dir, PROMPT, {**DECODED, **REFUSED}, max_tokens=16)


@pytest.mark.parametrize("case", list(DECODED))
def test_the_browser_runtime_generates_what_the_server_generates(js_events, explicit_dir, case):
    from eqlm.generation import GenerationRequest, Generator

    result = Generator(explicit_dir).generate(GenerationRequest(prompt=PROMPT, max_tokens=16, **DECODED[case]))
    server = [[e.token_id, e.iterations, e.text] for e in result.tokens]
    assert [[token, iterations, text] for token, iterations, text, _ in js_events[case]] == server
    assert {iterations for _, iterations, _, _ in js_events[case]} == {LAYERS}


@pytest.mark.parametrize("case", list(REFUSED))
def test_the_browser_runtime_refuses_what_the_server_refuses_saying_the_same(js_events, explicit_dir, case):
    from eqlm.generation import GenerationRequest, Generator
    from eqlm.manifest import ControlRefused

    with pytest.raises(ControlRefused) as refused:
        Generator(explicit_dir).generate(GenerationRequest(prompt=PROMPT, max_tokens=2, **REFUSED[case]))
    message = js_events[case]["refused"]
    assert message.startswith(f"{refused.value.control}=") and message.endswith(refused.value.why)
