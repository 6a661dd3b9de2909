"""A batch's past K/V of every layer kept batch-major between its calls (eqlm.batch_decode's explicit passes).

A call of an explicit transformer's chained batched layers takes every row's past K and V of every layer, [B, H, P,
Dh] a layer. Copied from the rows' own caches at every call (batch_solve.padded_pasts), that is each row's whole past
once a token: 12 MB for 8 rows of the 124M model at 22 positions, about 2 ms beside a 12-15 ms int8 call. `BatchPasts`
keeps them between the calls in one buffer whose positions are rounded up to CHUNK (past a row's own positions, zeros
that its mask hides, as a shorter row's padding is), and writes only each call's new position into it. The buffer is
built again, one copy of each row's cache, when the batch's rows change (a row joins or leaves), when a row's cache
holds another number of positions than the buffer (anything else wrote into it: its prompt, a solve of its own), and
when a row outgrows the buffer.
"""

from __future__ import annotations

import numpy as np

from .batch_solve import padded_pasts, prefix_mask
from .chained import past_inputs
from .decoder import DecodeCache

CHUNK = 8  # positions the buffer grows by (each call attends over them all, masked)


class BatchPasts:
    """The rows' past K/V of every layer: k and v [layers, rows, H, capacity, Dh], `caches` the rows in that order."""

    def __init__(self) -> None:
        self.caches: list[DecodeCache] = []
        self.lengths: list[int] = []
        self.k = self.v = np.zeros((0, 0, 0, 0, 0), dtype=np.float32)

    def take(self, caches: list[DecodeCache]) -> list[int]:
        """The rows of `caches` in the buffer's order (their indices in `caches`); the buffer then holds their pasts,
        built again where it must be."""
        order = self._order(caches)
        if order is None:
            self._build(caches)
            order = list(range(len(caches)))
        return order

    def feed(self) -> dict[str, np.ndarray]:
        """The chained batched layers' inputs but `z` (eqlm/chained.py): each layer's `past_k_NN` and `past_v_NN`
        [rows, H, capacity, Dh], views of the buffer, and `past_valid` [rows, capacity], each row's positions."""
        return {"past_valid": prefix_mask(self.lengths, self.k.shape[3]), **past_inputs(self.k, self.v)}

    def put(self, k: np.ndarray, v: np.ndarray) -> None:
        """Each layer's K and V of the rows' new positions ([layers, rows, H, 1, Dh], rows in the buffer's order)
        into the buffer, after each row's past."""
        for row, n in enumerate(self.lengths):
            self.k[:, row, :, n], self.v[:, row, :, n] = k[:, row, :, 0], v[:, row, :, 0]
        self.lengths = [n + 1 for n in self.lengths]

    def _order(self, caches: list[DecodeCache]) -> list[int] | None:
        if len(caches) != len(self.caches):
            return None
        where = {id(cache): i for i, cache in enumerate(caches)}
        order = [where.get(id(cache)) for cache in self.caches]
        if None in order or any(caches[i].length != n for i, n in zip(order, self.lengths, strict=True)):
            return None
        return order if max(self.lengths) < self.k.shape[3] else None

    def _build(self, caches: list[DecodeCache]) -> None:
        self.caches, self.lengths = list(caches), [cache.length for cache in caches]
        capacity = -(-(max(self.lengths) + 1) // CHUNK) * CHUNK
        pasts = [(cache.k[:, 0, :, : cache.length], cache.v[:, 0, :, : cache.length]) for cache in caches]
        self.k, self.v = padded_pasts(pasts, capacity)
