"""Per-iteration residuals: the browser runtime's token events carry the same residual curves as eqlm.decoder.

The JS runtime (static/js/eqlm-runtime.js) runs under node on onnxruntime-web's wasm backend; each event's
`residuals` (the residual after each iteration of the position whose logits chose the token) is compared with the
`history` that eqlm.decoder.process records for the same positions.
"""

import numpy as np
import pytest

from eqlm.decoder import DecodeCache, OnnxEqLM, process

from .js_runtime import js_runtime_events

pytestmark = pytest.mark.slow  # node

PROMPT = "And God said"
CASES = {
    "fixed depth": {"depth": 6},
    "adaptive": {"depth": 20, "tol": 0.05},
    "adaptive + warm": {"depth": 20, "tol": 0.05, "warm_start": True},
    "anderson": {"depth": 14, "tol": 0.02, "solver": "anderson"},
}


@pytest.fixture(scope="module")
def js_events(tiny_onnx_dir):
    events = js_runtime_events(tiny_onnx_dir, PROMPT, CASES, max_tokens=10)
    return {
        name: [[token, iterations, residuals] for token, iterations, _, residuals in e] for name, e in events.items()
    }


def server_curves(onnx_dir, tokens: list[int], depth: int, tol=None, warm_start=False, solver="picard"):
    """The residual curve of each position whose logits chose a token, from process(history=...)."""
    model = OnnxEqLM(onnx_dir)
    cache = DecodeCache(model, depth)
    ids = list(PROMPT.encode())
    history: list[np.ndarray] = []
    z, iterations, _ = process(model, cache, ids, depth, tol, solver, history=history, settle=warm_start)
    curves = [[float(h[-1]) for h in history[: iterations[-1]]]]
    last_z = z[:, -1:]
    for token in tokens[:-1]:
        history = []
        z0 = last_z if warm_start else None
        z, iterations, _ = process(model, cache, [token], depth, tol, solver, z0, history=history, settle=warm_start)
        curves.append([float(h[0]) for h in history[: iterations[0]]])
        last_z = z
    return curves


@pytest.mark.parametrize("case", list(CASES))
def test_each_token_event_carries_the_residual_of_every_iteration(js_events, tiny_onnx_dir, case):
    events = js_events[case]
    assert len(events) == 10
    for _, iterations, residuals in events:
        assert len(residuals) == iterations >= 1
    c = CASES[case]
    if c.get("tol") is not None:  # a halted position's last residual is the first one below the tolerance
        for _, iterations, residuals in events:
            assert iterations == c["depth"] or (residuals[-1] < c["tol"] and min(residuals[:-1] or [1]) >= c["tol"])
    expected = server_curves(
        tiny_onnx_dir,
        [e[0] for e in events],
        c["depth"],
        c.get("tol"),
        c.get("warm_start", False),
        c.get("solver", "picard"),
    )
    for (_, _, residuals), curve in zip(events, expected, strict=True):
        assert residuals == pytest.approx(curve, rel=1e-4, abs=1e-7)
