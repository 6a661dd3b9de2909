"""The programme's config is its fields exactly, refused by name when wrong, and sizes a model before it exists."""

import math
import subprocess
import sys

import pytest

from eqlm.programme.config import (
    ProgrammeConfig,
    ProgrammeConfigError,
    declared_bytes,
    expected_shapes,
    parameter_count,
    published_config,
)

# the published models' config (kinetic-eqlm-anytime-121m-babylm), at the anytime model's width
PUBLISHED = published_config("anytime").to_dict()


def config(**changes) -> ProgrammeConfig:
    return ProgrammeConfig.from_dict({**PUBLISHED, **changes})


def test_parameter_counts_match_the_published_models():
    assert parameter_count(config(), "EqLM") == 120_696_016
    gpt2_width = config(d_model=768, d_ff=3072)
    assert parameter_count(gpt2_width, "ExplicitLM", 12) == 123_760_908
    assert parameter_count(gpt2_width, "EqLM") == 45_785_857


def test_parameter_count_agrees_with_the_shapes_a_state_dict_must_hold():
    cfg = config(d_model=768, d_ff=3072)
    shapes = expected_shapes(cfg, "ExplicitLM", 12)
    params = sum(math.prod(s) for k, s in shapes.items() if k != "lm_head.weight" and not k.endswith(("._u", "._v")))
    assert params == parameter_count(cfg, "ExplicitLM", 12)


def test_declared_bytes_count_the_tied_pair_once_and_the_spectral_buffers():
    cfg = config(d_model=32, n_heads=4, d_ff=128, max_seq_len=64)
    buffers = 4 * (32 + 32) + 2 * (128 + 32) + (1 + 32)  # u and v of q, k, v, out; of fc1 and fc2; of the gate
    assert declared_bytes(cfg, "EqLM") == 4 * (parameter_count(cfg, "EqLM") + buffers)
    assert declared_bytes(config(spectral_norm=False), "EqLM") == 4 * parameter_count(config(), "EqLM")


def test_a_billion_token_vocabulary_is_sized_without_allocating_it():
    assert declared_bytes(config(vocab_size=10**9), "EqLM") > 4 * 10**9 * 1704
    assert declared_bytes(config(), "ExplicitLM", 10**9) > 10**15  # no loop over a billion layers either


@pytest.mark.parametrize(
    ("changes", "named"),
    [
        ({"n_experts": 8}, "unknown config field"),
        ({"d_model": True}, "d_model"),
        ({"d_model": 1704.0}, "d_model"),
        ({"spectral_norm": 1}, "spectral_norm"),
        ({"deq_tol": "0.001"}, "deq_tol"),
        ({"deq_tol": float("nan")}, "deq_tol"),
        ({"solver": "newton"}, "solver"),
        ({"map_form": "preln"}, "map_form"),
        ({"vocab_size": 0}, "vocab_size"),
        ({"d_ff": -1}, "d_ff"),
        ({"deq_max_iter": 0}, "deq_max_iter"),
        ({"n_heads": 7}, "divisible by n_heads"),
        ({"residual_damping": 0.0}, "residual_damping"),
        ({"jfb": "yes"}, "jfb"),
    ],
)
def test_a_wrong_field_is_refused_by_name(changes, named):
    with pytest.raises(ProgrammeConfigError, match=named):
        config(**changes)


def test_a_missing_field_is_refused_by_name():
    data = dict(PUBLISHED)
    del data["map_form"]
    with pytest.raises(ProgrammeConfigError, match="missing config field.*map_form"):
        ProgrammeConfig.from_dict(data)


def test_training_only_fields_are_recorded_not_refused():
    cfg = config(dropout=0.9, jfb=False, aux_residual=True, lambda_aux=50.0)
    assert (cfg.dropout, cfg.jfb, cfg.aux_residual, cfg.lambda_aux) == (0.9, False, True, 50.0)


def test_an_integer_tolerance_is_a_float():
    assert config(deq_tol=0).deq_tol == 0.0
    assert isinstance(config(deq_tol=0).deq_tol, float)


@pytest.mark.parametrize(("model_class", "n_layers"), [("GPT2", None), ("ExplicitLM", None), ("ExplicitLM", True)])
def test_a_wrong_model_class_or_layer_count_is_refused(model_class, n_layers):
    with pytest.raises(ProgrammeConfigError, match="model_class|n_layers"):
        declared_bytes(config(), model_class, n_layers)


def test_the_config_module_imports_no_torch():
    code = "import sys, eqlm.programme.config; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
