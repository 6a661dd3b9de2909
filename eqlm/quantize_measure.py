"""How far an export's int8 graphs are from its fp32 ones: per scored token, |log p_int8(next) - log p_fp32(next)| in
nats, over token windows and depths (the model's default depth and shallower ones; an explicit transformer: its one
depth). The max and the mean over every scored token go into the manifest's `int8` block, which the model's card
shows. onnxruntime only, never torch.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from .decoder import OnnxEqLM
from .manifest import fixed_depth

MEASURE_DEPTHS = (1, 4, 12)
# held-out prose for an export measured where no corpus is at hand (the import job): the opening of a public-domain
# novel (Jane Austen, Pride and Prejudice, 1813)
HELD_OUT_TEXT = (
    "It is a truth universally acknowledged, that a single man in possession of a good fortune, must be in want of "
    "a wife. However little known the feelings or views of such a man may be on his first entering a neighbourhood, "
    "this truth is so well fixed in the minds of the surrounding families, that he is considered the rightful "
    'property of some one or other of their daughters. "My dear Mr. Bennet," said his lady to him one day, "have '
    'you heard that Netherfield Park is let at last?" Mr. Bennet replied that he had not.'
)


def log_softmax(logits: np.ndarray) -> np.ndarray:
    x = logits.astype(np.float64)
    x = x - x.max(-1, keepdims=True)
    return x - np.log(np.exp(x).sum(-1, keepdims=True))


def measure_depths(manifest: dict) -> list[int]:
    fixed = fixed_depth(manifest)
    if fixed:
        return [fixed]
    default = int(manifest.get("default_depth") or 12)
    return sorted({d for d in (*MEASURE_DEPTHS, default) if d <= default})


def token_differences(fp32: OnnxEqLM, int8: OnnxEqLM, ids: list[int], depths: list[int]) -> np.ndarray:
    """|Δ log p(next token)| in nats for each scored token of one window (ids[1:]) at each depth: [depths, T-1]."""
    window = np.asarray([ids[: fp32.max_positions]], dtype=np.int64)
    nxt = window[0, 1:]
    rows = np.arange(len(nxt))
    a, b = fp32.full_solve(window, depths), int8.full_solve(window, depths)
    return np.stack(
        [np.abs(log_softmax(a[d])[0, :-1][rows, nxt] - log_softmax(b[d])[0, :-1][rows, nxt]) for d in depths]
    )


def int8_difference(onnx_dir: Path, windows: list[list[int]], measured_on: str, threads: int = 1) -> dict:
    """The manifest's `int8` block: the max and mean over every scored token (windows x depths) of |Δ log p|."""
    fp32 = OnnxEqLM(onnx_dir, threads=threads)
    int8 = OnnxEqLM(onnx_dir, precision="int8", threads=threads)
    depths = measure_depths(fp32.manifest)
    diffs = np.concatenate([token_differences(fp32, int8, ids, depths).ravel() for ids in windows if len(ids) > 1])
    return {
        "nats_per_token_max": round(float(diffs.max()), 5),
        "nats_per_token_mean": round(float(diffs.mean()), 5),
        "measured_on": f"{measured_on}: {diffs.size} scored tokens at depths {', '.join(map(str, depths))}",
    }


def windows_of(ids: list[int], manifest: dict) -> list[list[int]]:
    """ids cut into windows of the model's context."""
    n = int(manifest["max_positions"])
    return [list(ids[i : i + n]) for i in range(0, len(ids), n)]


def held_out_windows(manifest: dict) -> list[list[int]]:
    """HELD_OUT_TEXT in the model's tokenizer, cut into windows of its context."""
    from .tokenizers import get_tokenizer, tokenizer_name

    return windows_of(get_tokenizer(tokenizer_name(manifest)).encode(HELD_OUT_TEXT), manifest)


def record_int8(onnx_dir: Path, block: dict) -> dict:
    """Write the `int8` block into the export's manifest.json; returns the manifest."""
    path = Path(onnx_dir) / "manifest.json"
    manifest = json.loads(path.read_text())
    manifest["int8"] = block
    path.write_text(json.dumps(manifest, indent=2) + "\n")
    return manifest


def measure_and_record(onnx_dir: Path, windows: list[list[int]] | None = None, measured_on: str = "") -> dict:
    """Measure the int8 graphs against the fp32 ones (default: on HELD_OUT_TEXT) and record it in the manifest."""
    manifest = json.loads((Path(onnx_dir) / "manifest.json").read_text())
    if windows is None:
        try:
            windows = held_out_windows(manifest)
        except Exception as exc:  # noqa: BLE001 - GPT-2's ranks may be absent: the graphs still serve, unmeasured
            block = {"nats_per_token_max": None, "nats_per_token_mean": None, "measured_on": None}
            return record_int8(onnx_dir, {**block, "not_measured": f"no tokenizer ({type(exc).__name__})"})
        measured_on = "held-out English prose (the opening of Pride and Prejudice)"
    return record_int8(onnx_dir, int8_difference(onnx_dir, windows, measured_on))
