"""FLOPs per token: the one formula, checked against a count by hand for a tiny config."""

import pytest

from eqlm.flops import block_flops, flops_per_token, iterations_at_equal_flops, parameter_count

TINY = {"d_model": 4, "d_mlp": 8, "vocab_size": 10, "max_positions": 3, "n_layers": 2}


def test_a_tiny_blocks_flops_match_a_count_by_hand():
    # QKV: 4 inputs x 12 outputs = 48 multiply-adds; projection 4 x 4 = 16; MLP 4 x 8 + 8 x 4 = 64;
    # attention over a window of 3: on average 2 positions, scores 2 x 4 and values 2 x 4 = 16 multiply-adds.
    by_hand = 2 * (48 + 16 + 64 + 16)
    assert block_flops(TINY) == by_hand == 288
    assert block_flops({**TINY, "recall": "concat"}) == by_hand + 2 * 8 * 4  # the adapter: 8 inputs x 4 outputs


def test_eqlm_costs_its_depth_in_blocks_and_the_explicit_stack_its_layers():
    head = 2 * 4 * 10
    assert flops_per_token("EqLM", TINY, depth=5) == 5 * 288 + head
    assert flops_per_token("ExplicitLM", TINY) == 2 * 288 + head
    with pytest.raises(ValueError, match="layer count"):
        flops_per_token("ExplicitLM", TINY, depth=3)
    with pytest.raises(ValueError, match="depth"):
        flops_per_token("EqLM", TINY)


def test_the_depth_at_equal_flops_inverts_the_cost():
    budget = flops_per_token("ExplicitLM", {**TINY, "n_layers": 7})
    assert iterations_at_equal_flops(TINY, budget) == pytest.approx(7)


@pytest.mark.parametrize(
    ("model_class", "options"),
    [
        ("EqLM", {}),
        ("EqLM", {"norm": "sandwich", "recall": "concat"}),
        ("ExplicitLM", {"n_layers": 3}),
    ],
)
def test_the_parameter_count_from_a_config_equals_the_built_models(model_class, options):
    from eqlm.model import build_model

    config = {"vocab_size": 256, "d_model": 8, "n_heads": 2, "d_mlp": 12, "max_positions": 16, **options}
    model = build_model(model_class, config)
    assert parameter_count(model_class, model.config.to_dict()) == model.num_params()
