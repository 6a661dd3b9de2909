"""BLiMP scoring reads each model at the depths it has: an explicit stack at its layers, an EqLM halting."""


def test_blimp_scores_an_explicit_transformer_at_its_layer_count_and_an_eqlm_with_halting():
    import pytest
    import torch

    from eqlm.blimp import sentence_logprobs
    from eqlm.model import EqLM, ExplicitLM
    from eqlm.testing import tiny_config

    torch.manual_seed(0)
    explicit = ExplicitLM(tiny_config(n_layers=3)).eval()
    scores = sentence_logprobs(explicit, ["The cat sat.", "Cat the sat."], [3])
    assert len(scores[3]) == 2 and all(s < 0 for s in scores[3])
    with pytest.raises(ValueError, match="layer count"):
        sentence_logprobs(explicit, ["The cat sat."], [4])
    eqlm = EqLM(tiny_config()).eval()
    adaptive = sentence_logprobs(eqlm, ["The cat sat."], [64], tol=0.05)
    fixed = sentence_logprobs(eqlm, ["The cat sat."], [64])
    assert adaptive[64][0] != fixed[64][0]  # positions halted before the cap keep their earlier state
