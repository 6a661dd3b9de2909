"""Forward FLOPs per token, one formula for every model the portal trains (attention included).

Counting a multiply-add as 2 FLOPs, per token, with d = d_model, m = d_mlp, V = vocab_size and a causal window of
T positions (a token attends on average to c = (T + 1) / 2 positions, itself included):

- one EqLM iteration (the block): QKV 2·d·3d, the output projection 2·d·d, the MLP 2·2·d·m, attention scores and the
  weighted sum of values 2·2·c·d, and with recall = "concat" the adapter 2·2d·d;
- one ExplicitLM layer: the same, without the adapter;
- the head: 2·d·V, once.

EqLM at depth k costs k blocks + the head; ExplicitLM costs its n_layers layers + the head. LayerNorms, the softmax,
the GELU and the embedding lookup are left out (they are O(d) per token, under 1% here). No Django, no torch here.
"""

from __future__ import annotations


def block_flops(config: dict, context: int | None = None) -> float:
    """FLOPs per token of one block iteration (EqLM) or one layer (ExplicitLM) at the given causal window."""
    d, m = config["d_model"], config["d_mlp"]
    window = context or config["max_positions"]
    attended = (window + 1) / 2
    flops = 2 * d * 3 * d + 2 * d * d + 2 * 2 * d * m + 2 * 2 * attended * d
    if config.get("recall", "sum") == "concat":
        flops += 2 * 2 * d * d
    return float(flops)


def head_flops(config: dict) -> float:
    return float(2 * config["d_model"] * config["vocab_size"])


def flops_per_token(model_class: str, config: dict, depth: int | None = None, context: int | None = None) -> float:
    """Forward FLOPs per token: EqLM at `depth` iterations (a mean may be fractional), ExplicitLM at its layers."""
    if model_class == "ExplicitLM":
        if depth is not None and depth != config["n_layers"]:
            raise ValueError(f"an explicit transformer's depth is its layer count ({config['n_layers']})")
        depth = config["n_layers"]
    elif depth is None:
        raise ValueError("an EqLM's cost depends on its depth: pass depth")
    return depth * block_flops(config, context) + head_flops(config)


def iterations_at_equal_flops(eqlm_config: dict, budget: float, context: int | None = None) -> float:
    """The (fractional) EqLM depth whose FLOPs per token equal `budget` (another model's cost)."""
    return (budget - head_flops(eqlm_config)) / block_flops(eqlm_config, context)


def parameter_count(model_class: str, config: dict) -> int:
    """Trainable parameters of a model built from `config` (eqlm/model.py), counted without building it: the token
    and position embeddings (the head is tied to the token embedding), then one Block (EqLM: QKV, projection, MLP,
    its LayerNorm, with norm = "sandwich" four more, with recall = "concat" the adapter) or n_layers pre-LN layers
    and the final LayerNorm (ExplicitLM). A LayerNorm has 2·d parameters, a Linear in·out + out."""
    d, m = config["d_model"], config["d_mlp"]
    embeddings = config["vocab_size"] * d + config["max_positions"] * d

    def linear(fan_in: int, fan_out: int) -> int:
        return fan_in * fan_out + fan_out

    branches = linear(d, 3 * d) + linear(d, d) + linear(d, m) + linear(m, d)
    if model_class == "ExplicitLM":
        return embeddings + config["n_layers"] * (branches + 2 * 2 * d) + 2 * d
    block = branches + 2 * d
    if config.get("norm", "post") == "sandwich":
        block += 4 * 2 * d
    if config.get("recall", "sum") == "concat":
        block += linear(2 * d, d)
    return embeddings + block
