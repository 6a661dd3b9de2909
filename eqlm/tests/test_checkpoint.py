"""Checkpoint files load with weights_only=True, round-trip exactly, and refuse pickled code."""

import io
import pickle
from pathlib import Path

import pytest
import torch

from eqlm.checkpoint import CheckpointError, load_checkpoint, read_checkpoint, save_checkpoint
from eqlm.testing import tiny_config, tiny_model

PROVENANCE = {
    "config_hash": "x",
    "git_commit": "abc",
    "seed": 0,
    "corpus": "test",
    "corpus_sha256": "0" * 64,
    "steps": 0,
    "tokens": 0,
    "created": "2026-01-01T00:00:00+00:00",
}
MARKER = Path("/tmp/eqlm-malicious-checkpoint-ran")


class Exploit:
    """Unpickling this would call os.system and leave a marker file behind."""

    def __reduce__(self):
        import os

        return (os.system, (f"touch {MARKER}",))


def test_round_trip_gives_identical_logits(tmp_path):
    model = tiny_model(seed=3)
    path = save_checkpoint(model, tmp_path / "m.pt", PROVENANCE)
    raw = torch.load(path, map_location="cpu", weights_only=True)  # exactly as the published model card loads
    assert set(raw) == {"model_class", "config_dict", "state_dict", "provenance"}
    loaded, data = load_checkpoint(path)
    ids = torch.randint(0, 256, (1, 16))
    assert torch.equal(model.solve(ids, max_iter=6).logits[6], loaded.solve(ids, max_iter=6).logits[6])
    assert data["provenance"]["git_commit"] == "abc"


def test_malicious_pickle_is_rejected_and_its_code_never_runs(tmp_path):
    MARKER.unlink(missing_ok=True)
    path = tmp_path / "evil.pt"
    payload = {"model_class": "EqLM", "config_dict": tiny_config().to_dict(), "state_dict": {}, "provenance": Exploit()}
    torch.save(payload, path)
    with pytest.raises(CheckpointError, match="unpickling"):
        load_checkpoint(path)
    assert not MARKER.exists()


def test_plain_pickle_with_reduce_is_rejected_too(tmp_path):
    MARKER.unlink(missing_ok=True)
    buffer = io.BytesIO()
    pickle.dump(Exploit(), buffer)
    buffer.seek(0)
    with pytest.raises(CheckpointError):
        read_checkpoint(buffer)
    assert not MARKER.exists()


@pytest.mark.parametrize(
    "payload, message",
    [
        ([1, 2, 3], "expected a dict"),
        ({"model_class": "EqLM"}, "lacks keys"),
        ({"model_class": "GPT", "config_dict": {}, "state_dict": {}, "provenance": {}}, "unknown model_class"),
        ({"model_class": "EqLM", "config_dict": {"bogus": 1}, "state_dict": {}, "provenance": {}}, "bad config"),
        ({"model_class": "EqLM", "config_dict": {}, "state_dict": {"w": 1}, "provenance": {}}, "tensors"),
    ],
)
def test_files_that_are_not_checkpoint_dicts_fail_clearly(tmp_path, payload, message):
    path = tmp_path / "x.pt"
    torch.save(payload, path)
    with pytest.raises(CheckpointError, match=message):
        load_checkpoint(path)


def test_state_dict_that_does_not_fit_the_config_fails_clearly(tmp_path):
    path = save_checkpoint(tiny_model(), tmp_path / "m.pt", PROVENANCE)
    data = torch.load(path, weights_only=True)
    data["config_dict"]["d_model"] = 64
    torch.save(data, path)
    with pytest.raises(CheckpointError, match="does not fit"):
        load_checkpoint(path)


def test_garbage_bytes_fail_clearly(tmp_path):
    path = tmp_path / "junk.pt"
    path.write_bytes(b"not a checkpoint at all")
    with pytest.raises(CheckpointError):
        load_checkpoint(path)
