"""The browser runtime (static/js/eqlm-runtime.js) decodes exactly as the server's generation service.

Runs the JS runtime under node with onnxruntime-web's wasm backend (the same package the page uses) on a tiny
random model exported by the project's own code, and compares tokens and iterations per token with
eqlm.generation for fixed depth, adaptive halting, warm start and Anderson acceleration.
"""

import pytest

from .js_runtime import js_runtime_events

pytestmark = pytest.mark.slow  # node

PROMPT = "In the beginning"
CASES = {
    "depth 4": {"depth": 4},
    "depth 12": {"depth": 12},
    "adaptive": {"depth": 12, "tol": 0.05},
    "warm start": {"depth": 6, "warm_start": True},
    "adaptive + warm": {"depth": 10, "tol": 0.03, "warm_start": True},
    "anderson": {"depth": 6, "solver": "anderson"},
}


@pytest.fixture(scope="module")
def js_events(tiny_onnx_dir):
    events = js_runtime_events(tiny_onnx_dir, PROMPT, CASES, max_tokens=24)
    return {name: [[token, iterations, text] for token, iterations, text, _ in e] for name, e in events.items()}


@pytest.mark.parametrize("case", list(CASES))
def test_the_browser_runtime_generates_what_the_server_generates(js_events, tiny_onnx_dir, case):
    from eqlm.generation import GenerationRequest, Generator

    result = Generator(tiny_onnx_dir).generate(GenerationRequest(prompt=PROMPT, max_tokens=24, **CASES[case]))
    server = [[e.token_id, e.iterations, e.text] for e in result.tokens]
    assert js_events[case] == server
