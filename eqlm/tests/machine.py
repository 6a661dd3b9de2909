"""The kind of CPU a test runs on, for the few results that torch's kernels round differently from CPU to CPU."""

from __future__ import annotations

from pathlib import Path

import pytest


def cpu_flags() -> set[str]:
    """The CPU's feature flags (/proc/cpuinfo), empty where the file is not there."""
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return set()
    for line in text.splitlines():
        if line.startswith("flags"):
            return set(line.split(":", 1)[1].split())
    return set()


# Intel Xeon with AVX-512 FP16 (and AMX): its kernels round the programme's capped Anderson solve of the residual-nosn
# reference file further from the programme's record than the programme's stated tolerances
INTEL_AVX512_FP16 = "avx512_fp16" in cpu_flags()
_ROUNDS_ANDERSON_AWAY = (
    "measured on Intel Xeon with AVX-512 FP16, one record per machine kind as for the training digests: the "
    "residual-nosn file's capped Anderson solve (12 iterations, condition numbers near 1e3) lands {what}. Rounding "
    "alone moves it: there, across the lstsq drivers (gelsy, gelsd, gelss, gels), one or two threads, MKL's "
    "reproducibility modes and torch's kernels pinned to AVX2, the worst text moved between 0.8e-4 and 2.7e-4 from "
    "texts[]; the whole solve in float64 lands 1.3e-4 from it, so the record carries that much of its own machine's "
    "rounding. The earlier runs' machines (AVX2; AVX-512 without FP16) met the tolerance."
)


def anderson_record_away_here(what: str):
    """A strict xfail, on Intel Xeon with AVX-512 FP16 only, of a residual-nosn Anderson record test (`what`: how far
    it lands there); elsewhere the test runs as it is."""
    return pytest.mark.xfail(INTEL_AVX512_FP16, strict=True, reason=_ROUNDS_ANDERSON_AWAY.format(what=what))
