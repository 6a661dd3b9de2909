"""The programme's fixed-point solvers, from its own definitions: Picard, joint Anderson and Broyden.

Each solves z = f(z) for a whole batch at once, z [B, ...], and returns (z, info). "Joint" is the programme's meaning:
one relative residual ||f(z) - z|| / (||f(z)|| + 1e-8) over every position (and batch item) decides when all stop, and
Anderson mixes whole flattened states, so it is not causal: appending tokens moves earlier positions' answers. The
portal's own Anderson (eqlm/fixed_point.py) is per position and is a different algorithm.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import torch

# The least-squares driver on the CPU: the SVD-based 'gelss'. The programme's own call takes torch's default, 'gelsy'
# (QR with column pivoting), whose answer to these ill-conditioned systems (condition numbers near 1e3) varies from
# run to run in one process. Measured against the programme's recorded values on its reference files (AVX2, one
# thread): texts[] over 20 runs, residual-nosn file, gelsy 0.6e-4 to 1.2e-4, gels a steady 1.06e-4, gelsd 1.04e-5,
# gelss 1.48e-5 (postln file: gelss 1.78e-5); sentences of the 1,000 protocol pairs further than 1e-3 nats per
# token, of 2,000, residual-nosn file: gelsy 25, gelsd 22, gelss 18 (postln file: gelsy 8, gelsd 7, gelss 9). Only
# gelss holds both files within 1e-4 and 99% of the sentences within 1e-3. CUDA has 'gels' only.
CPU_LSTSQ_DRIVER = "gelss"

EPS = 1e-8  # the programme's floor under the norm in its relative residuals
ANDERSON_M = 5
ANDERSON_BETA = 1.0
BROYDEN_MAX_BYTES = 1 << 30  # the dense inverse Jacobian's budget when the caller names none

Map = Callable[[torch.Tensor], torch.Tensor]


@dataclass
class SolveInfo:
    iterations: int = 0
    rel_residuals: list[float] = field(default_factory=list)
    converged: bool = False


def _relative(new: torch.Tensor, old: torch.Tensor) -> float:
    return torch.norm(new - old).item() / (torch.norm(new).item() + EPS)


def picard(f: Map, z0: torch.Tensor, iters: int, tol: float = 0.0) -> tuple[torch.Tensor, SolveInfo]:
    """z <- f(z), `iters` times, stopping early once ||z_next - z|| / (||z_next|| + eps) < tol (never with tol = 0).
    The answer is the last f(z)."""
    if iters < 1:
        raise ValueError(f"picard needs at least one iteration, not {iters}")
    z, info = z0, SolveInfo()
    for _ in range(iters):
        z_next = f(z)
        info.rel_residuals.append(_relative(z_next, z))
        info.iterations += 1
        z = z_next
        if info.rel_residuals[-1] < tol:
            info.converged = True
            break
    return z, info


def anderson_joint(
    f: Map, z0: torch.Tensor, max_iter: int, tol: float, m: int = ANDERSON_M, beta: float = ANDERSON_BETA
) -> tuple[torch.Tensor, SolveInfo]:
    """The programme's Anderson acceleration. Each iteration evaluates f(z); when the whole batch's relative residual
    is under tol it returns z (the iterate, not f(z)). Otherwise (z, f(z)) joins a history of at most m, and the next
    iterate mixes the history with coefficients from torch.linalg.lstsq (CPU_LSTSQ_DRIVER on the CPU) on the
    differences of the residuals g = f(z) - z (a plain beta-step while the history holds one). When max_iter runs
    out, the answer is the last mixed iterate."""
    if max_iter < 1:
        raise ValueError(f"anderson needs at least one iteration, not {max_iter}")
    shape, bsz = z0.shape, z0.shape[0]
    z = z0.reshape(bsz, -1)
    xs: list[torch.Tensor] = []
    fs: list[torch.Tensor] = []
    info = SolveInfo()
    for _ in range(max_iter):
        fz = f(z.reshape(shape)).reshape(bsz, -1)
        g = fz - z
        info.rel_residuals.append(torch.norm(g).item() / (torch.norm(fz).item() + EPS))
        info.iterations += 1
        if info.rel_residuals[-1] < tol:
            info.converged = True
            break
        xs, fs = [*xs, z.clone()][-m:], [*fs, fz.clone()][-m:]
        if len(xs) < 2:
            z = (1 - beta) * z + beta * fz
            continue
        residuals = torch.stack([fi - xi for fi, xi in zip(fs, xs, strict=True)], dim=-1)
        d_res = residuals[..., 1:] - residuals[..., :-1]
        driver = CPU_LSTSQ_DRIVER if d_res.device.type == "cpu" else None
        alpha = torch.linalg.lstsq(d_res, g.unsqueeze(-1), driver=driver).solution
        d_x = torch.stack(xs, dim=-1).diff(dim=-1)
        d_f = torch.stack(fs, dim=-1).diff(dim=-1)
        z_mix = z - torch.bmm(d_x, alpha).squeeze(-1)
        f_mix = fz - torch.bmm(d_f, alpha).squeeze(-1)
        z = (1 - beta) * z_mix + beta * f_mix
    return z.reshape(shape), info


def broyden_jacobian_bytes(z0: torch.Tensor) -> int:
    """Bytes of the dense inverse Jacobian Broyden keeps: B * (T*d)^2 floats of z0's dtype."""
    flat = z0[0].numel() if z0.dim() > 1 else z0.numel()
    return z0.shape[0] * flat * flat * z0.element_size()


def broyden(
    f: Map, z0: torch.Tensor, max_iter: int, tol: float, max_bytes: int = BROYDEN_MAX_BYTES
) -> tuple[torch.Tensor, SolveInfo]:
    """The programme's "good Broyden": a dense inverse Jacobian from -I, Sherman-Morrison updates (skipped while the
    denominator is under 1e-12), stopping on the relative residual. Refused when that dense matrix would pass
    max_bytes: at GPT-2 widths it is (T*d)^2 floats, 150 GiB for 128 positions of 768."""
    need = broyden_jacobian_bytes(z0)
    if need > max_bytes:
        raise ValueError(
            f"broyden keeps a dense inverse Jacobian of (T*d)^2 floats per sequence: {need} bytes here, over the "
            f"limit of {max_bytes} bytes; use picard or anderson-joint"
        )
    shape, bsz = z0.shape, z0.shape[0]
    z = z0.reshape(bsz, -1)
    fz = f(z.reshape(shape)).reshape(bsz, -1)
    g = fz - z
    info = SolveInfo(rel_residuals=[torch.norm(g).item() / (torch.norm(fz).item() + EPS)])
    n = z.shape[1]
    j_inv = -torch.eye(n, dtype=z.dtype, device=z.device).expand(bsz, n, n).clone()
    for _ in range(max_iter):
        if info.rel_residuals[-1] < tol:
            break
        dz = -torch.bmm(j_inv, g.unsqueeze(-1)).squeeze(-1)
        z_new = z + dz
        f_new = f(z_new.reshape(shape)).reshape(bsz, -1)
        g_new = f_new - z_new
        info.rel_residuals.append(torch.norm(g_new).item() / (torch.norm(f_new).item() + EPS))
        info.iterations += 1
        dg = g_new - g
        j_dg = torch.bmm(j_inv, dg.unsqueeze(-1))
        u = dz - j_dg.squeeze(-1)
        denom = torch.bmm(dz.unsqueeze(1), j_dg).reshape(bsz)
        if (denom.abs() > 1e-12).any():
            j_inv = j_inv + torch.bmm(u.unsqueeze(-1), torch.bmm(dz.unsqueeze(1), j_inv)) / denom[:, None, None]
        z, g = z_new, g_new
    info.converged = info.rel_residuals[-1] < tol
    return z.reshape(shape), info


# the solvers by the names a caller asks for; the config's "anderson" is the joint solve
SOLVER_NAMES = ("picard", "anderson-joint", "broyden")
CONFIG_SOLVER = {"picard": "picard", "anderson": "anderson-joint", "broyden": "broyden"}
