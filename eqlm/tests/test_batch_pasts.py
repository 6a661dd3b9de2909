"""A batch's pasts kept between its explicit passes: what a copy of every row's cache would give, built again
whenever the rows, their caches or their lengths say the buffer no longer holds them."""

from pathlib import Path

import numpy as np

from eqlm.batch_pasts import CHUNK, BatchPasts
from eqlm.batch_solve import padded_pasts, prefix_mask
from eqlm.decoder import DecodeCache, OnnxEqLM

EXPLICIT = Path(__file__).resolve().parents[2] / "models" / "explicit-demo" / "onnx"
MODEL = OnnxEqLM(EXPLICIT)
RNG = np.random.default_rng(0)


def cache(length: int) -> DecodeCache:
    out = DecodeCache(MODEL, 12)
    out.k[:, :, :, :length] = RNG.standard_normal(out.k[:, :, :, :length].shape)
    out.v[:, :, :, :length] = RNG.standard_normal(out.v[:, :, :, :length].shape)
    out.length = length
    return out


def holds(pasts: BatchPasts, caches: list[DecodeCache], order: list[int]) -> None:
    """The buffer's feed is each row's past (in its order), zero past it, and the mask of its positions."""
    feed = pasts.feed()
    rows = [caches[i] for i in order]
    want_k, want_v = padded_pasts([(c.k[:, 0, :, : c.length], c.v[:, 0, :, : c.length]) for c in rows])
    p = want_k.shape[-2]
    capacity = feed["past_valid"].shape[1]
    assert capacity % CHUNK == 0 and capacity > max(c.length for c in rows)
    np.testing.assert_array_equal(feed["past_valid"], prefix_mask([c.length for c in rows], capacity))
    for layer in range(12):
        got_k, got_v = feed[f"past_k_{layer:02d}"], feed[f"past_v_{layer:02d}"]
        assert got_k.flags.c_contiguous and got_k.shape == (len(rows), MODEL.n_heads, capacity, MODEL.head_dim)
        np.testing.assert_array_equal(got_k[:, :, :p], want_k[layer])
        np.testing.assert_array_equal(got_v[:, :, :p], want_v[layer])
        assert not got_k[:, :, p:].any() and not got_v[:, :, p:].any()


def advance(pasts: BatchPasts, caches: list[DecodeCache], order: list[int]) -> None:
    """One pass's new position into the buffer and into each row's cache, as the scheduler writes it."""
    shape = (12, len(order), MODEL.n_heads, 1, MODEL.head_dim)
    k, v = RNG.standard_normal(shape).astype(np.float32), RNG.standard_normal(shape).astype(np.float32)
    pasts.put(k, v)
    for row, i in enumerate(order):
        caches[i].put(slice(None), k[:, row : row + 1], v[:, row : row + 1])
        caches[i].length += 1


def test_the_buffer_keeps_the_rows_pasts_between_passes_and_writes_only_the_new_positions():
    pasts, caches = BatchPasts(), [cache(3), cache(0), cache(9)]
    order = pasts.take(caches)
    buffer = pasts.k
    for _ in range(CHUNK - 2):  # the longest row (9 positions) fits a buffer of 16 until it holds 15
        holds(pasts, caches, order)
        advance(pasts, caches, order)
        order = pasts.take(caches[::-1])  # the rows hand in their passes in any order
        caches = caches[::-1]
        assert pasts.k is buffer
    holds(pasts, caches, order)


def test_a_row_that_outgrows_the_buffer_has_it_built_again_larger():
    pasts, caches = BatchPasts(), [cache(CHUNK - 1), cache(2)]
    order = pasts.take(caches)
    advance(pasts, caches, order)
    order = pasts.take(caches)
    assert pasts.k.shape[3] == 2 * CHUNK
    holds(pasts, caches, order)


def test_the_buffer_is_built_again_when_a_row_joins_or_leaves_or_its_cache_changes_elsewhere():
    pasts, caches = BatchPasts(), [cache(4), cache(5)]
    order = pasts.take(caches)
    advance(pasts, caches, order)
    joined = [*caches, cache(2)]
    holds(pasts, joined, pasts.take(joined))
    left = joined[1:]
    holds(pasts, left, pasts.take(left))
    advance(pasts, left, pasts.take(left))
    left[0].k[:, :, :, left[0].length] = 7.0  # a solve of its own wrote a position into one row's cache
    left[0].length += 1
    holds(pasts, left, pasts.take(left))
    other = [cache(left[0].length), left[1]]  # another request's cache of the same length in the same place
    holds(pasts, other, pasts.take(other))
