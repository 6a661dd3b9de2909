"""EqLM and ExplicitLM in pure torch: one weight-tied post-LN block iterated to a fixed point, anytime outputs.

The fixed-point map is z <- LN(z + Attn(z) + MLP(z) + inj(x)), causal, with the token + position embedding
injected at every iteration and a head tied to the token embedding. Attention at iteration i reads keys and values
computed from the iteration-i states of the positions it may see, so caching K_i, V_i per iteration makes
incremental decoding exact: the onnxruntime decoder (`eqlm.decoder.process`) decodes that way on the exported
graphs. The solver loop (Picard, Anderson, halting) is eqlm.fixed_point's. No Django imports here.
"""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import asdict, dataclass, field

import torch
import torch.nn.functional as F
from torch import nn

from .fixed_point import FixedPoint, TorchOps, iterates
from .limits import DEFAULT_DEPTH, DEFAULT_SOLVER

RESIDUAL_EPS = 1e-6
BLOCK_NORMS = ("post", "sandwich")
BLOCK_RECALLS = ("sum", "concat")


@dataclass
class EqLMConfig:
    vocab_size: int = 256
    d_model: int = 128
    n_heads: int = 4
    d_mlp: int = 512
    max_positions: int = 256
    default_depth: int = 8
    train_depths: list[int] = field(default_factory=lambda: [4, 8, 12])
    n_layers: int = 1  # ExplicitLM only: the number of distinct layers
    ln_eps: float = 1e-5
    # weight of the state inside the normalised sum: 1.0 is the original block, f(z) = LN(z + Attn + MLP + inj), whose
    # Jacobian is close to the identity (no contraction to speak of); below 1 the map contracts more easily
    state_skip: float = 1.0
    # "post": one LayerNorm over the sum (the original block); "sandwich": each branch normed before and after, as
    # Huginn's recurrent block (Geiping et al. 2025), then the sum normed
    norm: str = "post"
    # "sum": the input embedding is added inside the sum (the original block); "concat": the state and the input are
    # concatenated and mapped back to d_model by an adapter before the branches (Huginn's input injection)
    recall: str = "sum"

    @property
    def head_dim(self) -> int:
        return self.d_model // self.n_heads

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> EqLMConfig:
        known = set(cls.__dataclass_fields__)
        unknown = set(data) - known
        if unknown:
            raise ValueError(f"unknown config keys: {sorted(unknown)}")
        return cls(**data)

    def __post_init__(self):
        if self.norm not in BLOCK_NORMS:
            raise ValueError(f"unknown norm {self.norm!r}; expected one of {BLOCK_NORMS}")
        if self.recall not in BLOCK_RECALLS:
            raise ValueError(f"unknown recall {self.recall!r}; expected one of {BLOCK_RECALLS}")

    def config_hash(self) -> str:
        data = self.to_dict()
        for key, original in (("state_skip", 1.0), ("norm", "post"), ("recall", "sum")):
            if data[key] == original:  # the original block: keep the hashes recorded before the field existed
                del data[key]
        return hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()[:16]


class Block(nn.Module):
    """One parallel block with explicit K/V for caching. The original form is post-LN,
    f(z, inj) = LN(z + Attn(z) + MLP(z) + inj); `norm = "sandwich"` norms each branch before and after and the sum
    at the end, and `recall = "concat"` maps [z; inj] through an adapter to h before the branches: f = N(h + A + M)."""

    def __init__(self, config: EqLMConfig):
        super().__init__()
        d = config.d_model
        self.n_heads = config.n_heads
        self.head_dim = config.head_dim
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)
        self.fc1 = nn.Linear(d, config.d_mlp)
        self.fc2 = nn.Linear(config.d_mlp, d)
        self.ln = nn.LayerNorm(d, eps=config.ln_eps)
        self.state_skip = float(config.state_skip)
        self.sandwich = config.norm == "sandwich"
        self.concat = config.recall == "concat"
        if self.sandwich:
            self.ln_attn_in, self.ln_attn_out, self.ln_mlp_in, self.ln_mlp_out = (
                nn.LayerNorm(d, eps=config.ln_eps) for _ in range(4)
            )
        if self.concat:
            self.adapter = nn.Linear(2 * d, d)

    def _input(self, z: torch.Tensor, inj: torch.Tensor | None) -> torch.Tensor:
        """h: what the branches read (the state itself, or the adapter's map of [z; inj])."""
        return self.adapter(torch.cat([z, inj], dim=-1)) if self.concat else z

    def kv(self, z: torch.Tensor, inj: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        """Keys and values [B, H, T, Dh] of states z [B, T, D] (with recall = "concat", of z and its input)."""
        h = self._input(z, inj)
        _, k, v = self._qkv(self.ln_attn_in(h) if self.sandwich else h)
        return k, v

    def _qkv(self, z: torch.Tensor):
        b, t, _ = z.shape
        q, k, v = self.qkv(z).split(self.n_heads * self.head_dim, dim=-1)
        shape = (b, t, self.n_heads, self.head_dim)
        return (x.reshape(shape).transpose(1, 2) for x in (q, k, v))

    def _attend(self, q, keys, values, visible):
        """Softmax attention of queries [B, H, T, Dh] over keys/values [B, H, S, Dh] where visible [T, S] allows."""
        scores = (q @ keys.transpose(-1, -2)) * (1.0 / math.sqrt(self.head_dim))
        return torch.softmax(scores.masked_fill(~visible, float("-inf")), dim=-1) @ values

    def forward(
        self,
        z: torch.Tensor,
        inj: torch.Tensor,
        past_k: torch.Tensor | None = None,
        past_v: torch.Tensor | None = None,
        settled: tuple[torch.Tensor, torch.Tensor] | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """One iteration for T new positions after P cached ones. Returns (f(z), k, v) with k, v from the input z.

        `settled` (training the runtime's warm start, no cache): keys and values [B, H, T, Dh] of these same T
        positions' solved states. Position j then attends to the solved states of positions < j and to its own
        current state only, as a newly decoded position does when its context is settled; every position of the
        batch is that new position at once.
        """
        b, t, d = z.shape
        h = self._input(z, inj)
        attn_in = self.ln_attn_in(h) if self.sandwich else h
        q, k, v = self._qkv(attn_in)
        if settled is not None:
            # position j sees the solved states of positions < j, then its own current state (and no other)
            ones = torch.ones(t, t, dtype=torch.bool, device=z.device)
            visible = torch.cat([ones.tril(-1), torch.eye(t, dtype=torch.bool, device=z.device)], dim=1)
            att = self._attend(q, torch.cat([settled[0], k], dim=2), torch.cat([settled[1], v], dim=2), visible)
        elif past_k is None:
            att = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        else:
            p = past_k.shape[2]
            # new position j (absolute p + j) sees every cached position and new positions <= j
            visible = torch.arange(t, device=z.device)[:, None] + p >= torch.arange(p + t, device=z.device)[None, :]
            att = self._attend(q, torch.cat([past_k, k], dim=2), torch.cat([past_v, v], dim=2), visible)
        att = self.proj(att.transpose(1, 2).reshape(b, t, d))
        if self.sandwich:
            mlp = self.ln_mlp_out(self.fc2(F.gelu(self.fc1(self.ln_mlp_in(h)))))
            att = self.ln_attn_out(att)
        else:
            mlp = self.fc2(F.gelu(self.fc1(h)))
        skip = h if self.state_skip == 1.0 else self.state_skip * h  # the original block's graph stays unchanged
        if self.concat:
            return self.ln(skip + att + mlp), k, v
        return self.ln(skip + att + mlp + inj), k, v


def normal_init(model: nn.Module) -> None:
    """GPT-2's initialisation: linear and embedding weights N(0, 0.02), biases zero (LayerNorms keep theirs)."""
    for module in model.modules():
        if isinstance(module, nn.Linear):
            nn.init.normal_(module.weight, std=0.02)
            nn.init.zeros_(module.bias)
        elif isinstance(module, nn.Embedding):
            nn.init.normal_(module.weight, std=0.02)


def predecessor_states(z: torch.Tensor) -> torch.Tensor:
    """Each position's start under warm start: its predecessor's state [B, T, D] (zero for the first position)."""
    return torch.cat([torch.zeros_like(z[:, :1]), z[:, :-1]], dim=1)


def relative_residual(new: torch.Tensor, old: torch.Tensor) -> torch.Tensor:
    """Per-position ||f(z) - z|| / ||z|| (with a tiny floor so that z = 0 gives a huge, finite value)."""
    return (new - old).norm(dim=-1) / (old.norm(dim=-1) + RESIDUAL_EPS)


@dataclass
class SolveResult:
    """What a solve returns: logits at the requested depths and per-position solver statistics."""

    logits: dict[int, torch.Tensor]  # depth -> [B, T, V]
    z: torch.Tensor  # final states [B, T, D]
    iterations: torch.Tensor  # [B, T] iterations used per position
    residual: torch.Tensor  # [B, T] last relative residual per position
    residual_history: list[torch.Tensor]  # per iteration, [B, T]


class EqLM(nn.Module):
    """Equilibrium LM: one weight-tied block iterated; any iteration count gives logits."""

    model_class = "EqLM"

    def __init__(self, config: EqLMConfig):
        super().__init__()
        self.config = config
        self.tok_emb = nn.Embedding(config.vocab_size, config.d_model)
        self.pos_emb = nn.Embedding(config.max_positions, config.d_model)
        self.block = Block(config)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        normal_init(self)
        # the residual branches start small so early iterates stay close to LN(z + inj)
        nn.init.normal_(self.block.proj.weight, std=0.02 / math.sqrt(2))
        nn.init.normal_(self.block.fc2.weight, std=0.02 / math.sqrt(2))

    def num_params(self) -> int:
        return sum(p.numel() for p in self.parameters())

    # --- pieces shared with the ONNX graphs ---------------------------------------------------------------
    def embed(self, input_ids: torch.Tensor, positions: torch.Tensor | None = None) -> torch.Tensor:
        if positions is None:
            positions = torch.arange(input_ids.shape[1], device=input_ids.device).expand_as(input_ids)
        return self.tok_emb(input_ids) + self.pos_emb(positions)

    def head(self, z: torch.Tensor) -> torch.Tensor:
        return z @ self.tok_emb.weight.t()

    def step(self, z, inj, past_k=None, past_v=None):
        return self.block(z, inj, past_k, past_v)

    # --- training: unrolled Picard iterates -------------------------------------------------------------
    def unrolled(self, input_ids: torch.Tensor, depths: list[int]) -> dict[int, torch.Tensor]:
        """Logits at each requested depth from plain iteration from z = 0 (gradients flow through all)."""
        inj = self.embed(input_ids)
        states = iterates(lambda z: self.block(z, inj)[0], torch.zeros_like(inj), max(depths))
        return {i: self.head(z) for i, z in states if i in depths}

    def forward(self, input_ids: torch.Tensor, depth: int | None = None) -> torch.Tensor:
        depth = depth or self.config.default_depth
        return self.unrolled(input_ids, [depth])[depth]

    # --- inference solver --------------------------------------------------------------------------------
    @torch.no_grad()
    def solve(
        self,
        input_ids: torch.Tensor,
        max_iter: int = DEFAULT_DEPTH,
        tol: float | None = None,
        solver: str = DEFAULT_SOLVER,
        depths: list[int] | None = None,
        z0: torch.Tensor | None = None,
        anderson_m: int = 5,
        halt: str = "residual",
    ) -> SolveResult:
        """Iterate the map for a whole sequence with per-position halting.

        With `tol`, a position halts when its relative residual falls below it (`halt="kl"`: when the KL between
        its next-byte distributions before and after an iteration does); its state stays frozen from then on (its
        frozen state still supplies keys/values to later positions). Without `tol` every position runs exactly
        `max_iter` iterations. `depths` asks for logits at intermediate iteration counts. The loop is
        eqlm.fixed_point.FixedPoint, the one the onnxruntime decoder and the convergence measurements run.
        """
        from .fixed_point import halting_rule

        inj = self.embed(input_ids)
        z = torch.zeros_like(inj) if z0 is None else z0.clone()
        empty = z.new_zeros(z.shape[0], self.config.n_heads, 0, self.config.head_dim)

        def step(z: torch.Tensor, _: int) -> tuple[torch.Tensor, torch.Tensor]:
            fz, _, _ = self.block(z, inj, empty, empty)
            return fz, relative_residual(fz, z)

        depths = sorted(set(depths or [max_iter]))
        ops = TorchOps()
        rule = halting_rule(halt, tol, self.head, ops)
        solve = FixedPoint(step, z, max_iter, ops=ops, solver=solver, halt=rule, anderson_m=anderson_m)
        history = []
        logits = {}
        for i in solve:
            history.append(solve.step_residual)
            if i in depths:
                logits[i] = self.head(solve.z)
        logits.setdefault(depths[-1], self.head(solve.z))
        for d in depths:  # halted before depth d: its logits at d equal the frozen state's
            logits.setdefault(d, logits[depths[-1]])
        return SolveResult(logits, solve.z, solve.iterations, solve.residual, history)


class TransformerLayer(nn.Module):
    """A standard pre-LN transformer layer (GPT-2's): x + Attn(LN(x)), then + MLP(LN(x)), causal, K/V exposed."""

    def __init__(self, config: EqLMConfig):
        super().__init__()
        d = config.d_model
        self.n_heads, self.head_dim = config.n_heads, config.head_dim
        self.ln_attn = nn.LayerNorm(d, eps=config.ln_eps)
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)
        self.ln_mlp = nn.LayerNorm(d, eps=config.ln_eps)
        self.fc1 = nn.Linear(d, config.d_mlp)
        self.fc2 = nn.Linear(config.d_mlp, d)

    def forward(self, x: torch.Tensor, past_k: torch.Tensor | None = None, past_v: torch.Tensor | None = None):
        """(x', k, v) for T new positions after P cached ones (keys and values from this layer's input)."""
        b, t, d = x.shape
        q, k, v = Block._qkv(self, self.ln_attn(x))
        if past_k is None or past_k.shape[2] == 0:
            att = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        else:
            p = past_k.shape[2]
            visible = torch.arange(t, device=x.device)[:, None] + p >= torch.arange(p + t, device=x.device)[None, :]
            att = Block._attend(self, q, torch.cat([past_k, k], dim=2), torch.cat([past_v, v], dim=2), visible)
        x = x + self.proj(att.transpose(1, 2).reshape(b, t, d))
        return x + self.fc2(F.gelu(self.fc1(self.ln_mlp(x)))), k, v


class ExplicitLM(nn.Module):
    """The explicit baseline: a standard transformer of `n_layers` distinct pre-LN layers, the input embedded once
    (no re-injection, no iteration), a final LayerNorm and a head tied to the token embedding. Its depth is its layer
    count."""

    model_class = "ExplicitLM"

    def __init__(self, config: EqLMConfig):
        super().__init__()
        self.config = config
        self.tok_emb = nn.Embedding(config.vocab_size, config.d_model)
        self.pos_emb = nn.Embedding(config.max_positions, config.d_model)
        self.layers = nn.ModuleList(TransformerLayer(config) for _ in range(config.n_layers))
        self.ln_f = nn.LayerNorm(config.d_model, eps=config.ln_eps)
        normal_init(self)
        for layer in self.layers:  # GPT-2's scaled init of the residual projections
            nn.init.normal_(layer.proj.weight, std=0.02 / math.sqrt(2 * config.n_layers))
            nn.init.normal_(layer.fc2.weight, std=0.02 / math.sqrt(2 * config.n_layers))

    def num_params(self) -> int:
        return sum(p.numel() for p in self.parameters())

    def embed(self, input_ids, positions=None):
        return EqLM.embed(self, input_ids, positions)

    def head(self, x):
        return self.ln_f(x) @ self.tok_emb.weight.t()

    def forward(self, input_ids: torch.Tensor, depth: int | None = None) -> torch.Tensor:
        if depth is not None and depth != len(self.layers):
            raise ValueError(f"an explicit transformer's depth is its layer count ({len(self.layers)}), not {depth}")
        x = self.embed(input_ids)
        for layer in self.layers:
            x, _, _ = layer(x)
        return self.head(x)


MODEL_CLASSES = {"EqLM": EqLM, "ExplicitLM": ExplicitLM}


def build_model(model_class: str, config_dict: dict) -> nn.Module:
    if model_class not in MODEL_CLASSES:
        raise ValueError(f"unknown model_class {model_class!r}; expected one of {sorted(MODEL_CLASSES)}")
    return MODEL_CLASSES[model_class](EqLMConfig.from_dict(config_dict))
