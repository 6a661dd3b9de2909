"""The council bench's texts and decoders (bench/council.py measures with them): the mixed and pure texts scored
in windows, each decoder's row on a text (members alone, averaging, the equilibrium over its grid, the fixed-share
mixture, the council with memory over its grid, the routing oracle), and the passage-paired intervals.
"""

from __future__ import annotations

import time

import numpy as np

from bench.council_report import PASSAGE
from eqlm.council import POOLS, equilibrium, window_log_probs
from eqlm.council_memory import fixed_share_mixture, fixed_share_reputations
from eqlm.units import mean_bits, mean_bits_of_sum

LONG_PASSAGE = 512
BETAS = (0.5, 2.0, 8.0)
TAUS = (0.0, 0.5)
MEMORY_BETAS = (0.0, 0.5, 2.0)
SHARES = (0.001, 0.002, 0.005, 0.01, 0.02, 0.05)
RATES = (0.25, 0.5, 0.75, 1.5)  # the reputation's learning rate beside 1 (Bayes' rule), tried at each pool's best beta


def passages(text: bytes, count: int, length: int = PASSAGE) -> list[bytes]:
    """`count` passages spread evenly over the text (deterministic)."""
    stride = max(length, (len(text) - length) // max(count, 1))
    return [text[i : i + length] for i in range(0, len(text) - length + 1, stride)][:count]


def mixed_stream(kjv: list[bytes], code: list[bytes], seed: int) -> tuple[bytes, np.ndarray, np.ndarray]:
    """The interleaved text, and for every byte its domain (0 KJV, 1 code) and passage index."""
    items = [(0, p) for p in kjv] + [(1, p) for p in code]
    order = np.random.default_rng(seed).permutation(len(items))
    data, domain, passage = b"", [], []
    for n, k in enumerate(order):
        dom, text = items[k]
        data += text
        domain += [dom] * len(text)
        passage += [n] * len(text)
    return data, np.asarray(domain), np.asarray(passage)


def oracle(nlls: list[np.ndarray], passage: np.ndarray, domain: np.ndarray) -> np.ndarray:
    """Per-byte losses of the better member per passage (chosen on the passage's whole loss)."""
    stacked = np.stack(nlls)
    best = np.empty_like(nlls[0])
    for p in np.unique(passage):
        at = passage == p
        best[at] = stacked[int(np.argmin(stacked[:, at].sum(axis=1))), at]
    return best


class Mix:
    """One text scored in windows: its windows, each scored byte's domain and passage, the members' log-probs."""

    def __init__(self, name: str, data: bytes, domain: np.ndarray, passage: np.ndarray, members, depth, window):
        self.name = name
        arr = np.frombuffer(data, dtype=np.uint8).astype(np.int64)
        n = (len(arr) // window) * window
        windows = arr[:n].reshape(-1, window)
        self.targets = windows[:, 1:]
        # labels of the scored bytes (each window's first byte is context only)
        self.dom = domain[:n].reshape(-1, window)[:, 1:].ravel()
        self.psg = passage[:n].reshape(-1, window)[:, 1:].ravel()
        lps = [window_log_probs(g, windows[:, :-1], depth or g.default_depth) for g in members]
        self.stacked = np.stack(lps, axis=-2)  # [B, T, M, V]
        self.member_nll = [self.nll_of(lp) for lp in lps]
        # each member's log-probability of every scored byte [B, T, M], in text order
        self.seen = np.take_along_axis(self.stacked, self.targets[..., None, None], -1)[..., 0]
        self.domains = [(name, d) for name, d in (("kjv", 0), ("code", 1)) if (self.dom == d).any()]
        self._reputations: dict[tuple, np.ndarray] = {}

    def nll_of(self, log_y: np.ndarray) -> np.ndarray:
        return -np.take_along_axis(log_y, self.targets[..., None], -1)[..., 0].ravel()

    def scores(self, nll: np.ndarray) -> dict[str, float]:
        """Bits/byte per domain and overall (`mixed` only for a text that holds both domains)."""
        out = {"mixed": mean_bits(nll)} if len(self.domains) == 2 else {}
        for name, d in self.domains:
            out[name] = mean_bits(nll[self.dom == d])
        return out

    def reputations(self, share: float, carried: bool = True, rate: float = 1.0) -> np.ndarray:
        """Log pi before each scored byte [B, T, M]: over the whole text in order, or from uniform in each window."""
        key = (share, carried, rate)
        if key not in self._reputations:
            if not carried:
                log_pi = fixed_share_reputations(self.seen, share, learning_rate=rate)[..., :-1, :]
            else:
                flat = self.seen.reshape(-1, self.seen.shape[-1])
                log_pi = fixed_share_reputations(flat, share, learning_rate=rate)[:-1].reshape(self.seen.shape)
            self._reputations[key] = log_pi
        return self._reputations[key]

    def memory(self, config: dict, carried: bool = True) -> np.ndarray:
        return self.reputations(config["share"], carried, config["learning_rate"])


def memory_label(config: dict) -> str:
    """The memory controls of an arm as its label spells them: "beta=0 share=0.02 rate=0.5 arithmetic" (short: an arm
    label, with its mix's title, holds at most 100 characters)."""
    beta, share, pool, rate = (config[k] for k in ("beta", "share", "pool", "learning_rate"))
    return f"beta={beta:g} share={share:g} rate={rate:g} {pool}"


def label_controls(label: str) -> dict:
    """The memory controls a label spells (memory_label's inverse)."""
    parts = [part.rstrip(")") for part in label.split()]
    found = dict(part.split("=", 1) for part in parts if "=" in part)
    return {
        "beta": float(found["beta"]),
        "share": float(found["share"]),
        "pool": next(part for part in parts if part in POOLS),
        "learning_rate": float(found["rate"]),
    }


def memory_grid(betas_by_pool: dict[str, float] | None = None) -> list[dict]:
    """The memory's grid: every pool x beta x share at learning rate 1; or, given each pool's beta, every other
    learning rate x share at it."""
    if betas_by_pool is None:
        return [
            {"pool": pool, "beta": beta, "share": share, "learning_rate": 1.0}
            for pool in POOLS
            for share in SHARES
            for beta in MEMORY_BETAS
        ]
    return [
        {"pool": pool, "beta": beta, "share": share, "learning_rate": rate}
        for pool, beta in betas_by_pool.items()
        for rate in RATES
        for share in SHARES
    ]


def game_row(mix: Mix, ids: list[str], label: str, log_reputation=None, **controls) -> tuple[str, dict, dict]:
    """One decoder's row: the game at these controls over the whole mix (arm, bits/byte, extra figures)."""
    started = time.perf_counter()
    eq = equilibrium(mix.stacked, log_reputation=log_reputation, **controls)
    seconds = time.perf_counter() - started
    weights = eq.weights.reshape(-1, len(ids))
    extra = {
        "mean_iterations": float(eq.iterations.mean()),
        "converged_fraction": float(eq.converged.mean()),
        "solve_seconds": seconds,
    }
    for name, d in mix.domains:
        extra[f"mean_weights_{name}"] = [float(x) for x in weights[mix.dom == d].mean(axis=0)]
    if log_reputation is not None:
        pi = np.exp(log_reputation).reshape(-1, len(ids))
        for name, d in mix.domains:
            extra[f"mean_reputations_{name}"] = [float(x) for x in pi[mix.dom == d].mean(axis=0)]
    return label, mix.scores(mix.nll_of(eq.log_y)), extra


def memory_rows(mix: Mix, ids: list[str], configs: list[dict]) -> list[tuple[str, dict, dict]]:
    """The council with memory at each config, labelled "memory beta=... share=... rate=... <pool>"."""
    return [
        game_row(mix, ids, f"memory {memory_label(c)}", mix.memory(c), beta=c["beta"], pool=c["pool"]) for c in configs
    ]


def score_mix(mix: Mix, ids: list[str], grid: bool, memory: dict[str, dict], mixture_share: float | None):
    """Rows (arm, figures, extra) for one mix. grid: the beta x tau and pool x beta x share grids too; memory: named
    configs of the council with memory ("defaults" also reset per window); mixture_share: the fixed-share mixture
    at that share (else every share)."""
    rows: list[tuple[str, dict, dict]] = []
    for member_id, nll in zip(ids, mix.member_nll, strict=True):
        rows.append((f"{member_id} alone", mix.scores(nll), {}))

    def mixture(share: float, label: str) -> None:
        log_y = fixed_share_mixture(mix.stacked, mix.reputations(share))
        rows.append((label, mix.scores(mix.nll_of(log_y)), {"share": share}))

    rows.append(game_row(mix, ids, "average (beta=0)", beta=0.0, tau=0.0))
    rows.append(game_row(mix, ids, "equilibrium (defaults)"))
    if grid:
        for beta in BETAS:
            for tau in TAUS:
                if (beta, tau) != (2.0, 0.0):
                    rows.append(game_row(mix, ids, f"equilibrium beta={beta:g} tau={tau:g}", beta=beta, tau=tau))
    if mixture_share is not None:
        mixture(mixture_share, f"fixed-share mixture (share={mixture_share:g})")
    else:
        for share in SHARES:
            mixture(share, f"fixed-share mixture share={share:g}")
    for name, c in memory.items():
        controls = {"beta": c["beta"], "pool": c["pool"]}
        rows.append(game_row(mix, ids, f"memory ({name}: {memory_label(c)})", mix.memory(c), **controls))
        if name == "defaults":
            label = "memory reset per window (defaults)"
            rows.append(game_row(mix, ids, label, mix.memory(c, carried=False), **controls))
    if grid:
        rows += memory_rows(mix, ids, memory_grid())
    rows.append(("oracle (better member per passage)", mix.scores(oracle(mix.member_nll, mix.psg, mix.dom)), {}))
    return rows


def paired_interval(mix: Mix, nll: np.ndarray, other: np.ndarray, draws: int = 2000, seed: int = 0) -> dict:
    """Bits/byte of nll minus other over the mix, with a 95% interval from resampling its passages (both decoders
    on the same resampled passages: a paired bootstrap)."""
    ids, at = np.unique(mix.psg, return_inverse=True)
    gaps = np.bincount(at, weights=nll - other, minlength=len(ids))
    counts = np.bincount(at, minlength=len(ids)).astype(float)
    pick = np.random.default_rng(seed).integers(0, len(ids), size=(draws, len(ids)))
    resampled = mean_bits_of_sum(gaps[pick].sum(axis=1), counts[pick].sum(axis=1))
    low, high = np.quantile(resampled, [0.025, 0.975])
    difference = mean_bits(nll - other)
    return {"difference": difference, "low": float(low), "high": float(high), "passages": len(ids)}


def memory_intervals(mix: Mix, chosen: dict, mixture_share: float) -> dict:
    """The council with memory at its defaults against the fixed-share mixture and the oracle, passage-paired."""
    eq = equilibrium(mix.stacked, log_reputation=mix.memory(chosen), beta=chosen["beta"], pool=chosen["pool"])
    memory = mix.nll_of(eq.log_y)
    mixture = mix.nll_of(fixed_share_mixture(mix.stacked, mix.reputations(mixture_share)))
    best = oracle(mix.member_nll, mix.psg, mix.dom)
    return {"minus_mixture": paired_interval(mix, memory, mixture), "minus_oracle": paired_interval(mix, memory, best)}


def best_arm(rows, prefix: str, **controls) -> str:
    """The arm with the lowest mixed bits/byte among those whose label starts with prefix (and, given controls,
    whose label spells them)."""

    def spells(label: str) -> bool:
        return all(label_controls(label)[k] == v for k, v in controls.items())

    chosen = [r for r in rows if r[0].startswith(prefix) and (not controls or spells(r[0]))]
    return min(chosen, key=lambda r: r[1]["mixed"])[0]


def label_value(label: str, key: str) -> float:
    return float(label.split(f"{key}=")[1].split()[0].rstrip(")"))


def domain_bytes(mix: Mix) -> dict[str, int]:
    return {name: int((mix.dom == d).sum()) for name, d in mix.domains}
