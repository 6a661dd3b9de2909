"""The depth curve of a programme checkpoint, measured on a worker when it is imported: held-out nats per token by
solver iterations."""

from __future__ import annotations

from django.conf import settings

from eqlm.evaluate import committed_slice

from .models import RegisteredModel

CURVE_DEPTHS = (1, 2, 4, 8, 12, 24)
CURVE_WINDOWS = 2


def measure_depth_curve(row: RegisteredModel, windows: int = CURVE_WINDOWS, progress=None) -> list[dict]:
    """Mean nats per token on held-out text (non-overlapping windows of max_seq_len GPT-2 tokens, each window's first
    token unscored) at Picard depths from zero, and at the file's own settings (torch; on a worker)."""
    import torch

    from eqlm.programme.checkpoint import load_programme_model
    from eqlm.programme.score import next_token_logprobs
    from eqlm.programme.solvers import CONFIG_SOLVER
    from eqlm.tokenizers import get_tokenizer

    model, _ = load_programme_model(row.file_path(), max_bytes=settings.MODEL_MAX_BYTES)
    torch.set_num_threads(max(1, min(2, torch.get_num_threads())))
    width = model.config.max_seq_len
    ids = get_tokenizer("gpt2").encode(committed_slice().decode("utf-8"))
    chunks = [ids[i * width : (i + 1) * width] for i in range(windows) if len(ids) >= (i + 1) * width]
    if model.model_class == "ExplicitLM":
        points = [("layers", model.n_layers)]
    else:
        points = [("picard", d) for d in CURVE_DEPTHS] + [(CONFIG_SOLVER[model.config.solver], None)]
    curve = []
    for i, (solver, depth) in enumerate(points):
        scores = [next_token_logprobs(model, chunk, solver, depth) for chunk in chunks]
        tokens = sum(len(s) for s in scores)
        curve.append({
            "solver": "explicit" if solver == "layers" else solver,
            "depth": depth,
            "nats_per_token": -float(sum(s.sum() for s in scores)) / max(tokens, 1),
            "tokens": tokens,
        })  # fmt: skip
        if progress:
            progress((i + 1) / len(points), f"depth curve: {solver} {depth or ''}".strip())
    return curve
