"""Programme model files load only when every part fits, refuse by name otherwise, and save with one tied storage."""

import resource
from pathlib import Path

import pytest
import torch

from eqlm.programme.checkpoint import (
    ProgrammeCheckpointError,
    is_programme_format,
    load_programme_model,
    read_programme_checkpoint,
    save_programme_checkpoint,
)
from eqlm.programme.config import ProgrammeConfig, declared_bytes, published_config
from eqlm.programme.model import build_programme_model

MAX_BYTES = 1 << 30
MARKER = Path("/tmp/eqlm-programme-malicious-checkpoint-ran")
TINY = published_config("anytime", vocab_size=300, d_model=16, n_heads=2, d_ff=32, max_seq_len=16).to_dict()


class Exploit:
    """Unpickling this would call os.system and leave a marker file behind."""

    def __reduce__(self):
        import os

        return (os.system, (f"touch {MARKER}",))


def tiny_model(model_class="EqLM", n_layers=None, seed=0, **changes):
    torch.manual_seed(seed)
    return build_programme_model(ProgrammeConfig.from_dict({**TINY, **changes}), model_class, n_layers)


def saved_blob(tmp_path, model_class="EqLM", n_layers=None, **changes) -> dict:
    """The dict a programme file of a tiny model holds, as torch.load gives it back."""
    path = save_programme_checkpoint(tiny_model(model_class, n_layers, **changes), tmp_path / "tiny.pt")
    return torch.load(path, weights_only=True)


def write(tmp_path, blob, name="bad.pt") -> Path:
    torch.save(blob, tmp_path / name)
    return tmp_path / name


def refused(path, match, max_bytes=MAX_BYTES):
    with pytest.raises(ProgrammeCheckpointError, match=match):
        read_programme_checkpoint(path, max_bytes)


@pytest.mark.parametrize(
    ("model_class", "n_layers", "changes"),
    [("EqLM", None, {}), ("EqLM", None, {"spectral_norm": False, "map_form": "residual"}), ("ExplicitLM", 3, {})],
)
def test_round_trip_gives_identical_logits_and_one_storage_for_the_tied_pair(tmp_path, model_class, n_layers, changes):
    model = tiny_model(model_class, n_layers, **changes)
    path = save_programme_checkpoint(model, tmp_path / "m.pt")
    raw = torch.load(path, weights_only=True)
    assert set(raw) == {"state_dict", "config_dict", "model_class"} | ({"n_layers"} if n_layers else set())
    sd = raw["state_dict"]
    assert sd["embedding.weight"].untyped_storage().data_ptr() == sd["lm_head.weight"].untyped_storage().data_ptr()
    loaded, checkpoint = load_programme_model(path, MAX_BYTES)
    assert loaded.lm_head.weight is loaded.embedding.weight
    assert len(checkpoint.sha256) == 64
    ids = torch.randint(0, 300, (1, 9))
    with torch.no_grad():
        if model_class == "EqLM":  # Picard at a fixed depth is bit-reproducible (the Anderson mix is not)
            assert torch.equal(model(ids, "picard", 6, 0.0), loaded(ids, "picard", 6, 0.0))
        else:
            assert torch.equal(model(ids), loaded(ids))


def test_the_saved_file_holds_the_tied_embedding_once(tmp_path):
    model = tiny_model(vocab_size=20000)  # the embedding dominates: 20000 x 16 floats = 1.28 MB
    size = save_programme_checkpoint(model, tmp_path / "m.pt").stat().st_size
    stored = declared_bytes(model.config, "EqLM")
    assert stored <= size < stored + 64 * 1024  # one copy plus the zip's and pickle's overhead


def test_a_folded_model_is_not_saved_in_the_programme_format(tmp_path):
    model = tiny_model()
    model.fold_spectral_norm()
    with pytest.raises(ValueError, match="folded"):
        save_programme_checkpoint(model, tmp_path / "m.pt")


def test_equal_but_separate_tied_tensors_are_accepted(tmp_path):
    blob = saved_blob(tmp_path)
    blob["state_dict"]["lm_head.weight"] = blob["state_dict"]["embedding.weight"].clone()
    model, _ = load_programme_model(write(tmp_path, blob), MAX_BYTES)
    assert model.lm_head.weight is model.embedding.weight


def test_tied_tensors_that_differ_are_refused(tmp_path):
    blob = saved_blob(tmp_path)
    blob["state_dict"]["lm_head.weight"] = blob["state_dict"]["embedding.weight"] + 1.0
    refused(write(tmp_path, blob), "lm_head.weight is tied to embedding.weight")


def test_malicious_pickle_is_refused_and_its_code_never_runs(tmp_path):
    MARKER.unlink(missing_ok=True)
    blob = saved_blob(tmp_path)
    blob["config_dict"]["dropout"] = Exploit()
    refused(write(tmp_path, blob), "unpickling")
    assert not MARKER.exists()


def test_a_truncated_file_is_refused(tmp_path):
    good = save_programme_checkpoint(tiny_model(), tmp_path / "m.pt").read_bytes()
    (tmp_path / "cut.pt").write_bytes(good[: len(good) // 2])
    refused(tmp_path / "cut.pt", "truncated or corrupt")


def test_a_corrupt_file_is_refused(tmp_path):
    good = bytearray(save_programme_checkpoint(tiny_model(), tmp_path / "m.pt").read_bytes())
    good[100:4000] = bytes(3900)  # the pickle and the first tensors zeroed, the zip directory intact
    (tmp_path / "zeroed.pt").write_bytes(bytes(good))
    refused(tmp_path / "zeroed.pt", "truncated or corrupt")
    (tmp_path / "noise.pt").write_bytes(b"\x80\x02not a checkpoint at all")
    refused(tmp_path / "noise.pt", "truncated or corrupt")


def test_a_missing_file_is_refused(tmp_path):
    refused(tmp_path / "absent.pt", "cannot read")


def test_unknown_model_class_is_refused(tmp_path):
    blob = saved_blob(tmp_path)
    blob["model_class"] = "MixtureLM"
    refused(write(tmp_path, blob), "unknown model_class 'MixtureLM'")


def test_an_explicit_model_without_its_layer_count_is_refused(tmp_path):
    blob = saved_blob(tmp_path, "ExplicitLM", 2)
    del blob["n_layers"]
    refused(write(tmp_path, blob), "n_layers")


def test_unknown_and_ill_typed_config_fields_are_refused_by_name(tmp_path):
    blob = saved_blob(tmp_path)
    blob["config_dict"]["rope_theta"] = 10000.0
    refused(write(tmp_path, blob), "unknown config field.*rope_theta")
    blob = saved_blob(tmp_path)
    blob["config_dict"]["spectral_norm"] = 1
    refused(write(tmp_path, blob), "spectral_norm")


def test_missing_and_extra_state_dict_keys_are_refused_by_name(tmp_path):
    blob = saved_blob(tmp_path)
    del blob["state_dict"]["block.fc1.bias"]
    refused(write(tmp_path, blob), r"missing \['block.fc1.bias'\]")
    blob = saved_blob(tmp_path)
    blob["state_dict"]["block.adapter.weight"] = torch.zeros(16, 32)
    refused(write(tmp_path, blob), r"unexpected \['block.adapter.weight'\]")


def test_a_tensor_that_does_not_fit_the_config_is_refused_by_name(tmp_path):
    blob = saved_blob(tmp_path)
    blob["state_dict"]["block.fc2.bias"] = torch.zeros(17)
    refused(write(tmp_path, blob), r"block.fc2.bias has shape \(17,\); the config needs \(16,\)")


@pytest.mark.parametrize("bad", [float("nan"), float("inf")])
def test_non_finite_weights_are_refused_by_name(tmp_path, bad):
    blob = saved_blob(tmp_path)
    blob["state_dict"]["block.fc1.parametrizations.weight.original"][3, 4] = bad
    refused(write(tmp_path, blob), "block.fc1.parametrizations.weight.original holds NaN or Inf")


def test_integer_weights_are_refused(tmp_path):
    blob = saved_blob(tmp_path)
    blob["state_dict"]["ln_final.bias"] = torch.zeros(16, dtype=torch.int64)
    refused(write(tmp_path, blob), "ln_final.bias holds torch.int64")


def test_a_zero_spectral_scale_is_refused_at_load(tmp_path):
    blob = saved_blob(tmp_path)
    blob["state_dict"]["block.q_proj.parametrizations.weight.0._u"].zero_()
    with pytest.raises(ProgrammeCheckpointError, match="q_proj's spectral norm"):
        load_programme_model(write(tmp_path, blob), MAX_BYTES)


def test_a_billion_token_vocabulary_is_refused_before_anything_is_allocated(tmp_path):
    blob = saved_blob(tmp_path)
    blob["config_dict"]["vocab_size"] = 10**9
    path = write(tmp_path, blob)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux: the high-water mark so far
    with pytest.raises(ProgrammeCheckpointError, match="declared size 64[0-9]{9} bytes .* over max_bytes"):
        load_programme_model(path, MAX_BYTES)
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before < 100 * 1024  # 64 GB was never touched


def test_a_file_over_the_callers_limit_is_refused(tmp_path):
    path = save_programme_checkpoint(tiny_model(), tmp_path / "m.pt")
    refused(path, "over max_bytes", max_bytes=1000)


def test_a_portal_checkpoint_is_not_the_programme_format(tmp_path):
    blob = saved_blob(tmp_path)
    assert is_programme_format(blob)
    assert not is_programme_format({**blob, "provenance": {}})
    assert not is_programme_format({**blob, "config_dict": {**blob["config_dict"], "d_mlp": 64}})
    refused(write(tmp_path, {**blob, "provenance": {}}), "portal checkpoint")


def test_unexpected_top_level_keys_are_refused_by_name(tmp_path):
    blob = saved_blob(tmp_path)
    refused(write(tmp_path, {**blob, "optimizer": {}}), r"unexpected \['optimizer'\]")
    refused(write(tmp_path, [blob]), "expected a dict")
