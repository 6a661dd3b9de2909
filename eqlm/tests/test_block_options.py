"""Block options: sandwich norms and input recall by concatenation train, cache, export and keep old hashes."""

import numpy as np
import pytest
import torch

from eqlm.model import EqLM, EqLMConfig
from eqlm.testing import tiny_config

OPTIONS = [
    {"norm": "sandwich"},
    {"recall": "concat"},
    {"norm": "sandwich", "recall": "concat"},
]
IDS = [",".join(f"{k}={v}" for k, v in option.items()) for option in OPTIONS]


def tiny(option: dict, seed: int = 3) -> EqLM:
    torch.manual_seed(seed)
    return EqLM(tiny_config(**option)).eval()


def decode_position_by_position(model: EqLM, ids: torch.Tensor, depth: int) -> torch.Tensor:
    """Logits [B, T, V] at `depth`, one new position at a time over per-iteration K/V caches (the runtime's way)."""
    caches = [(None, None)] * depth
    out = []
    for t in range(ids.shape[1]):
        inj = model.embed(ids[:, t : t + 1], torch.full_like(ids[:, t : t + 1], t))
        z = torch.zeros_like(inj)
        for i in range(depth):
            past_k, past_v = caches[i]
            if past_k is None:
                past_k = past_v = z.new_zeros(ids.shape[0], model.config.n_heads, 0, model.config.head_dim)
            z_next, k, v = model.block(z, inj, past_k, past_v)
            caches[i] = (torch.cat([past_k, k], dim=2), torch.cat([past_v, v], dim=2))
            z = z_next
        out.append(model.head(z))
    return torch.cat(out, dim=1)


@pytest.mark.parametrize("option", OPTIONS, ids=IDS)
def test_decoding_one_position_at_a_time_over_the_cache_equals_the_whole_sequence(option):
    model = tiny(option)
    ids = torch.randint(0, 256, (2, 12), generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        whole = model.solve(ids, max_iter=5).logits[5]
        stepped = decode_position_by_position(model, ids, 5)
    assert torch.allclose(whole, stepped, atol=1e-5)


@pytest.mark.parametrize("option", OPTIONS, ids=IDS)
def test_settled_attention_with_the_block_option_is_what_a_warm_decoded_position_sees(option):
    model = tiny(option)
    ids = torch.randint(0, 256, (1, 16), generator=torch.Generator().manual_seed(2))
    with torch.no_grad():
        inj = model.embed(ids)
        solved = model.solve(ids, max_iter=8).z
        z = torch.randn_like(solved)
        settled = model.block.kv(solved, inj)
        batched, _, _ = model.block(z, inj, settled=settled)
        for t in (0, 7, 15):
            one, _, _ = model.block(z[:, t : t + 1], inj[:, t : t + 1], settled[0][:, :, :t], settled[1][:, :, :t])
            assert torch.allclose(batched[:, t : t + 1], one, atol=1e-5)


@pytest.mark.slow  # exports three small models
@pytest.mark.parametrize("option", OPTIONS, ids=IDS)
def test_the_onnx_step_graph_holds_the_block_option_within_1e_4(tmp_path, option):
    from eqlm.decoder import OnnxEqLM
    from eqlm.export import export_onnx

    model = tiny(option, seed=5)
    export_onnx(model, tmp_path)
    ids = torch.randint(0, 256, (2, 40), generator=torch.Generator().manual_seed(4))
    for depth in (1, 8):
        expected = model.solve(ids, max_iter=depth).logits[depth].numpy()
        got = OnnxEqLM(tmp_path).full_solve(ids.numpy(), [depth])[depth]
        assert np.abs(expected - got).max() <= 1e-4


@pytest.mark.parametrize("option", OPTIONS, ids=IDS)
def test_a_block_option_gets_a_gradient_everywhere_and_changes_the_config_hash(option):
    model = tiny(option)
    model.train()
    ids = torch.randint(0, 256, (2, 9), generator=torch.Generator().manual_seed(3))
    logits = model.unrolled(ids[:, :-1], [4])[4]
    torch.nn.functional.cross_entropy(logits.flatten(0, 1), ids[:, 1:].flatten()).backward()
    assert all(p.grad is not None and p.grad.abs().sum() > 0 for p in model.parameters())
    assert EqLMConfig(**option).config_hash() != EqLMConfig().config_hash()


def test_the_original_block_keeps_the_config_hash_its_checkpoints_recorded():
    demo = {"d_model": 64, "d_mlp": 256}
    assert EqLMConfig(**demo).config_hash() == "9d4e0549d5cf2816"  # eqlm-demo-anytime's recorded config_hash
    assert EqLMConfig(**demo, norm="post", recall="sum").config_hash() == "9d4e0549d5cf2816"
    with pytest.raises(ValueError, match="unknown norm"):
        EqLMConfig(norm="pre")
