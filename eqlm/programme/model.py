"""The programme's EqLM and ExplicitLM as portal modules: same state_dict keys, same forward, a step interface.

The block is the programme's fixed-point map f(z, x) in eval mode (no dropout), in either map form:
- postln:   h = LN1(z + Attn(z) + g(x)),  f = LN2(h + MLP(h))
- residual: f = (1 - a) z + a (z + Attn(LN1 z) + MLP(LN2(z + Attn)) + g(x)),  a = residual_damping
with causal attention, ReLU MLP, and the gated injection g(x) = sigmoid(input_gate(x)) * x. Spectral norm is
torch's parametrization on every Linear of a block (the gate's too): in eval mode W = W0 / (u . (W0 v)) from the
stored u, v. Logits are head(LN_final(z)) / sqrt(d_model), the head tied to the token embedding.

Attention at one iteration reads keys and values computed from that iteration's states, so `block(z, inj, past_k,
past_v)` with per-iteration caches gives the whole-sequence Picard iterates position by position, as the portal's
own EqLM does (eqlm/model.py). ExplicitLM applies n_layers such blocks once each, the injection fed zeros.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn
from torch.nn.utils import parametrize
from torch.nn.utils.parametrizations import spectral_norm

from .config import ProgrammeConfig, check_model_class
from .solvers import CONFIG_SOLVER, anderson_joint, broyden, picard

LINEARS = ("q_proj", "k_proj", "v_proj", "out_proj", "fc1", "fc2", "input_gate")


class ProgrammeBlock(nn.Module):
    """One block of the programme: f(z, x) plus the keys and values of its input z, for caching."""

    def __init__(self, config: ProgrammeConfig):
        super().__init__()
        d, ff = config.d_model, config.d_ff
        self.n_heads, self.head_dim = config.n_heads, config.head_dim
        self.postln = config.map_form == "postln"
        self.damping = config.residual_damping
        self.ln1 = nn.LayerNorm(d)
        self.ln2 = nn.LayerNorm(d)
        self.q_proj, self.k_proj, self.v_proj, self.out_proj = (nn.Linear(d, d) for _ in range(4))
        self.fc1 = nn.Linear(d, ff)
        self.fc2 = nn.Linear(ff, d)
        self.input_gate = nn.Linear(d, 1)
        if config.spectral_norm:
            for name in LINEARS:
                setattr(self, name, spectral_norm(getattr(self, name)))

    def _heads(self, x: torch.Tensor) -> torch.Tensor:
        b, t, _ = x.shape
        return x.reshape(b, t, self.n_heads, self.head_dim).transpose(1, 2)

    def kv(self, z: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Keys and values [B, H, T, Dh] that states z [B, T, D] give to the positions after them."""
        a = z if self.postln else self.ln1(z)
        return self._heads(self.k_proj(a)), self._heads(self.v_proj(a))

    def forward(
        self,
        z: torch.Tensor,
        inj: torch.Tensor,
        past_k: torch.Tensor | None = None,
        past_v: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """(f(z, inj), k, v) for T new positions after the P whose keys/values past_k/past_v [B, H, P, Dh] hold."""
        b, t, d = z.shape
        a = z if self.postln else self.ln1(z)
        q, k, v = self._heads(self.q_proj(a)), self._heads(self.k_proj(a)), self._heads(self.v_proj(a))
        keys, values, p = k, v, 0
        if past_k is not None and past_k.shape[2]:
            keys, values, p = torch.cat([past_k, k], dim=2), torch.cat([past_v, v], dim=2), past_k.shape[2]
        scores = torch.matmul(q, keys.transpose(-2, -1)) / (self.head_dim**0.5)
        visible = torch.arange(p + t, device=z.device)[None, :] <= torch.arange(t, device=z.device)[:, None] + p
        weights = F.softmax(scores.masked_fill(~visible, float("-inf")), dim=-1)
        attn = self.out_proj(torch.matmul(weights, values).transpose(1, 2).contiguous().reshape(b, t, d))
        injection = torch.sigmoid(self.input_gate(inj)) * inj
        if self.postln:
            h = self.ln1(z + attn + injection)
            return self.ln2(h + self.fc2(F.relu(self.fc1(h)))), k, v
        ff = self.fc2(F.relu(self.fc1(self.ln2(z + attn))))
        return (1.0 - self.damping) * z + self.damping * (z + (attn + ff + injection)), k, v


class _ProgrammeLM(nn.Module):
    """What both classes share: embeddings, the final LayerNorm, the tied head, folding spectral norm."""

    model_class = ""

    def __init__(self, config: ProgrammeConfig):
        super().__init__()
        self.config = config
        self.spectral_folded = False
        self.embedding = nn.Embedding(config.vocab_size, config.d_model)
        self.pos_embedding = nn.Embedding(config.max_seq_len, config.d_model)

    def _finish(self) -> None:
        self.ln_final = nn.LayerNorm(self.config.d_model)
        self.lm_head = nn.Linear(self.config.d_model, self.config.vocab_size, bias=False)
        self.tie_head()

    def tie_head(self) -> None:
        """The head is the token embedding (one Parameter, one storage)."""
        self.lm_head.weight = self.embedding.weight

    def blocks(self) -> list[ProgrammeBlock]:
        raise NotImplementedError

    def embed(self, input_ids: torch.Tensor, positions: torch.Tensor | None = None) -> torch.Tensor:
        """Token + position embedding [B, T, D] (positions 0..T-1 unless given)."""
        if positions is None:
            positions = torch.arange(input_ids.shape[1], device=input_ids.device).expand_as(input_ids)
        if input_ids.shape[-1] and int(positions.max()) >= self.config.max_seq_len:
            raise ValueError(f"positions reach {int(positions.max())}; this model has {self.config.max_seq_len}")
        return self.embedding(input_ids) + self.pos_embedding(positions)

    def head(self, z: torch.Tensor) -> torch.Tensor:
        """Logits [B, T, V]: the tied head on LN_final(z), divided by sqrt(d_model)."""
        return self.lm_head(self.ln_final(z)) / (self.config.d_model**0.5)

    def num_params(self) -> int:
        return sum(p.numel() for p in self.parameters())

    @torch.no_grad()
    def fold_spectral_norm(self) -> None:
        """Replace each spectrally normed Linear's parametrization by its eval-mode weight W0 / (u . (W0 v)), from
        the stored u and v with no power iteration, so the graph is plain Linears (for ONNX export)."""
        for block in self.blocks():
            for name in LINEARS:
                linear = getattr(block, name)
                if not parametrize.is_parametrized(linear, "weight"):
                    continue
                norm = linear.parametrizations.weight[0]
                original = linear.parametrizations.weight.original
                weight = original / torch.vdot(norm._u, torch.mv(original, norm._v))
                parametrize.remove_parametrizations(linear, "weight", leave_parametrized=False)
                linear.weight = nn.Parameter(weight)
        self.spectral_folded = True


class ProgrammeEqLM(_ProgrammeLM):
    """The programme's EqLM: one block solved to a fixed point from zero, with the injection at every iteration."""

    model_class = "EqLM"

    def __init__(self, config: ProgrammeConfig):
        super().__init__(config)
        self.block = ProgrammeBlock(config)
        self._finish()

    def blocks(self) -> list[ProgrammeBlock]:
        return [self.block]

    def solve(
        self, inj: torch.Tensor, solver: str | None = None, max_iter: int | None = None, tol: float | None = None
    ):
        """(z*, SolveInfo) from z = 0: `solver` picard | anderson-joint | broyden, by default the config's, capped at
        max_iter (default deq_max_iter) and stopping under tol (default deq_tol)."""
        cfg = self.config
        solver = solver or CONFIG_SOLVER[cfg.solver]
        max_iter = cfg.deq_max_iter if max_iter is None else max_iter
        tol = cfg.deq_tol if tol is None else tol

        def f(z: torch.Tensor) -> torch.Tensor:
            return self.block(z, inj)[0]

        z0 = torch.zeros_like(inj)
        if solver == "picard":
            return picard(f, z0, max_iter, tol)
        if solver == "anderson-joint":
            return anderson_joint(f, z0, max_iter, tol)
        if solver == "broyden":
            return broyden(f, z0, max_iter, tol)
        raise ValueError(f"unknown solver {solver!r}; expected picard, anderson-joint or broyden")

    def forward(
        self, input_ids: torch.Tensor, solver: str | None = None, max_iter: int | None = None, tol: float | None = None
    ) -> torch.Tensor:
        with parametrize.cached():  # spectral norm's weights are computed once per forward, not once per iteration
            z, _ = self.solve(self.embed(input_ids), solver, max_iter, tol)
            return self.head(z)


class ProgrammeExplicitLM(_ProgrammeLM):
    """The programme's ExplicitLM: n_layers blocks applied once each, their injection zeros (so its gate adds 0)."""

    model_class = "ExplicitLM"

    def __init__(self, config: ProgrammeConfig, n_layers: int):
        super().__init__(config)
        self.n_layers = n_layers
        self.layers = nn.ModuleList(ProgrammeBlock(config) for _ in range(n_layers))
        self._finish()

    def blocks(self) -> list[ProgrammeBlock]:
        return list(self.layers)

    def forward(self, input_ids: torch.Tensor) -> torch.Tensor:
        z = self.embed(input_ids)
        zeros = torch.zeros_like(z)
        with parametrize.cached():
            for layer in self.layers:
                z = layer(z, zeros)[0]
        return self.head(z)


def build_programme_model(config: ProgrammeConfig, model_class: str, n_layers: int | None = None) -> _ProgrammeLM:
    """An untrained model of this class and config, in eval mode (on the current default device)."""
    check_model_class(model_class, n_layers)
    model = ProgrammeEqLM(config) if model_class == "EqLM" else ProgrammeExplicitLM(config, n_layers)
    return model.eval()
