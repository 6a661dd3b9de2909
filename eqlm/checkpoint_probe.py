"""Validate a checkpoint in a child process (`python -m eqlm.checkpoint_probe PATH`), printing JSON.

The web process uses this so that torch is never imported there: the child loads the file with
weights_only=True, builds the model, runs one tiny forward pass and reports what the registry stores.
"""

import json
import sys


def probe(path: str) -> dict:
    import torch

    from eqlm.checkpoint import CheckpointError, load_checkpoint

    try:
        model, data = load_checkpoint(path)
        with torch.no_grad():
            ids = torch.zeros(1, 4, dtype=torch.long)
            logits = model.solve(ids, max_iter=2).logits[2] if data["model_class"] == "EqLM" else model(ids)
            if not torch.isfinite(logits).all():
                raise CheckpointError("the model produces non-finite logits")
    except CheckpointError as exc:
        return {"ok": False, "error": str(exc)}
    return {
        "ok": True,
        "model_class": data["model_class"],
        "config": data["config_dict"],
        "provenance": json.loads(json.dumps(data["provenance"], default=str)),
        "num_params": model.num_params(),
    }


if __name__ == "__main__":
    print(json.dumps(probe(sys.argv[1])))
