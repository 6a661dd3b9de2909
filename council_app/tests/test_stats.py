"""The pure statistics used to check the record against itself."""

import math

import pytest

from council_app import stats


def test_paired_z_is_the_sign_test_over_disagreements():
    assert stats.paired_z(38, 8) == pytest.approx(30 / math.sqrt(46))
    assert round(stats.paired_z(14, 84), 2) == -7.07
    assert stats.paired_z(0, 0) is None


def test_paired_z_refuses_negative_counts():
    with pytest.raises(ValueError):
        stats.paired_z(-1, 3)


def test_mean_and_sample_sd():
    assert stats.mean([0.6083, 0.5917, 0.6583]) == pytest.approx(0.619433, abs=1e-6)
    assert stats.mean([]) is None
    assert stats.sample_sd([1.0, 2.0, 3.0]) == pytest.approx(1.0)
    assert stats.sample_sd([1.0]) is None


def test_agreement_is_judged_at_the_recorded_precision():
    assert stats.decimals(4.42) == 2
    assert stats.decimals(0.4833) == 4
    assert stats.decimals(1.0) == 0
    assert stats.agrees(4.42, 4.4233, 2)
    assert not stats.agrees(0.0416, 0.0833, 3)
    assert stats.agrees(None, None)
    assert not stats.agrees(0.5, None)
