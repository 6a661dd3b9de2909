"""Validate a checkpoint in a child process (`python -m eqlm.checkpoint_probe PATH [MAX_BYTES]`), printing JSON.

The web process uses this so that torch is never imported there: the child loads the file with
weights_only=True, builds the model, runs one tiny forward pass and reports what the registry stores. A file in
the programme's format (`config_dict` with exactly its fields, no `provenance`) is read by eqlm.programme, which
refuses a declared size over MAX_BYTES before it builds anything.
"""

import json
import sys

DEFAULT_MAX_BYTES = 4 * 1000**3


TRAINING_ONLY = ("dropout", "jfb", "aux_residual", "lambda_aux")  # recorded, not used at inference


def probe_programme(path: str, max_bytes: int) -> dict:
    import torch

    from eqlm.programme.checkpoint import ProgrammeCheckpointError, load_programme_model

    try:
        model, ckpt = load_programme_model(path, max_bytes=max_bytes)
        ids = torch.zeros(1, 4, dtype=torch.long)
        with torch.no_grad():
            logits = model(ids, solver="picard", max_iter=2) if ckpt.model_class == "EqLM" else model(ids)
        if not torch.isfinite(logits).all():
            raise ProgrammeCheckpointError("the model produces non-finite logits")
    except ProgrammeCheckpointError as exc:
        return {"ok": False, "error": str(exc).replace("max_bytes", "the MODEL_MAX_BYTES limit")}
    config = ckpt.config.to_dict()
    return {
        "ok": True,
        "format": "programme",
        "model_class": ckpt.model_class,
        "n_layers": ckpt.n_layers,
        "config": config,
        "training_only": {k: config[k] for k in TRAINING_ONLY},
        "num_params": model.num_params(),
        "tokenizer": "gpt2",
    }


def probe(path: str, max_bytes: int = DEFAULT_MAX_BYTES) -> dict:
    import torch

    from eqlm.checkpoint import CheckpointError, load_checkpoint, sniff_format

    if sniff_format(path) == "programme":
        return probe_programme(path, max_bytes)

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
        "format": "portal",
        "tokenizer": "bytes",
        "model_class": data["model_class"],
        "config": data["config_dict"],
        "provenance": json.loads(json.dumps(data["provenance"], default=str)),
        "num_params": model.num_params(),
    }


if __name__ == "__main__":
    print(json.dumps(probe(sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else DEFAULT_MAX_BYTES)))
