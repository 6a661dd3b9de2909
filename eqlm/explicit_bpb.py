"""Held-out bits/byte of an explicit transformer at its own depth, its layer count (no Django).

An EqLM's evaluation by depth and start is eqlm.path_independence's; an ExplicitLM has no iteration to count and no
start to vary, so it has one figure: a plain forward pass over the same windows (each window's first byte is context
only).
"""

from __future__ import annotations

import numpy as np

from .units import mean_bits_of_sum


def explicit_bits_per_byte(model, windows: np.ndarray, batch: int = 16, device: str = "cpu") -> tuple[float, int]:
    """(bits/byte, positions) of the model's next-byte predictions over the windows."""
    import torch

    total, count = 0.0, 0
    model = model.eval().to(device)
    with torch.no_grad():
        for i in range(0, len(windows), batch):
            ids = torch.as_tensor(windows[i : i + batch], device=device)
            logits = model(ids[:, :-1]).double()
            targets = ids[:, 1:]
            total += float(torch.nn.functional.cross_entropy(logits.flatten(0, 1), targets.flatten(), reduction="sum"))
            count += targets.numel()
    return mean_bits_of_sum(total, count), count
