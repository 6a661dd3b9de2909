"""bench/council.py measures two members on held-out mixed text; its rows become the council table on /benchmarks/."""

import importlib.util
from pathlib import Path

import pytest

from benchmarks_app.declared import COMPARISONS
from benchmarks_app.models import Comparison
from benchmarks_app.tables import build_table
from results.models import ResultRow
from results.records import ingest_records

ROOT = Path(__file__).resolve().parents[2]


def load_bench():
    spec = importlib.util.spec_from_file_location("bench_council", ROOT / "bench" / "council.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def measured(tiny_onnx_export):
    """A real (small) bench run over two tiny random EqLMs: 4 passages per domain."""
    from eqlm.generation import Generator

    bench = load_bench()
    members = [Generator(tiny_onnx_export(seed)) for seed in (1, 2)]
    report = bench.measure(members, ["tiny-a", "tiny-b"], passages_per_domain=4, timing_prompts=1, timing_tokens=4)
    return bench, report, bench.to_records(report, members)


def test_the_oracle_is_never_worse_than_either_member_and_averaging_converges_at_once(measured):
    _, report, _ = measured
    by_arm = {row["arm"]: row for row in report["rows"]}
    oracle = by_arm["oracle (better member per passage)"]["bits_per_byte"]["mixed"]
    assert oracle <= min(by_arm[f"{m} alone"]["bits_per_byte"]["mixed"] for m in ("tiny-a", "tiny-b")) + 1e-12
    assert by_arm["average (beta=0)"]["mean_iterations"] <= 32
    assert report["scored_bytes"]["kjv"] + report["scored_bytes"]["code"] == report["scored_bytes"]["mixed"]
    assert report["ms_per_token"]["council"] > 0


def test_the_bench_rows_are_the_council_table_on_the_benchmarks_page(db, client, measured):
    _, report, records = measured
    spec = next(c for c in COMPARISONS if c["slug"] == "local-council-mixed")
    Comparison.objects.create(**spec)
    assert ingest_records(records, source_name="test:council-bench") == len(records)
    assert ResultRow.objects.filter(experiment="local-council").count() == len(records)

    table = build_table(Comparison.objects.get(slug="local-council-mixed"), use_cache=False)
    rows = {row["id"]: [cell["text"] for cell in row["cells"]] for row in table["rows"]}
    assert list(rows)[:4] == ["tiny-a alone", "tiny-b alone", "average (beta=0)", "equilibrium (defaults)"]
    bench, _, _ = measured
    stored = {
        bench.arm_label(row["arm"], mix): row["bits_per_byte"]
        for mix, result in report["mixes"].items()
        for row in result["rows"]
    }  # every mix's arms: the held-out 128-byte mix's as they always were, the others' ending in the mix
    assert set(rows) == set(stored)
    for arm, cells in rows.items():
        assert cells[1:4] == [f"{stored[arm][d]:.4f}" if d in stored[arm] else "–" for d in ("mixed", "kjv", "code")]
    assert any(arm.startswith("fixed-share mixture (share=") for arm in rows)
    assert any(arm.startswith("memory (defaults: beta=") for arm in rows)
    best = min(stored["tiny-a alone"]["mixed"], stored["tiny-b alone"]["mixed"])
    assert rows["equilibrium (defaults)"][4] == f"{stored['equilibrium (defaults)']['mixed'] - best:+.4f}"
    assert any(note.startswith("Goal (the equilibrium beats") for note in table["notes"])
    memory = next(note for note in table["notes"] if note.startswith("The council with memory (defaults: beta="))
    held_out = {row["arm"]: row["bits_per_byte"]["mixed"] for row in report["mixes"]["heldout-512"]["rows"]}
    assert f"{held_out['oracle (better member per passage)']:.4f} for the oracle." in memory  # the 512-byte mix's
    assert any(note.startswith("With memory at its defaults it takes") for note in table["notes"])
    weights = {row["arm"]: row for row in report["rows"]}["equilibrium (defaults)"]
    shown = " · ".join("/".join(f"{w:.2f}" for w in weights[f"mean_weights_{d}"]) for d in ("kjv", "code"))
    assert rows["equilibrium (defaults)"][-1] == shown
    assert rows["tiny-a alone"][-1] == ""

    page = client.get("/benchmarks/local-council-mixed/")
    assert page.status_code == 200
    assert "equilibrium (defaults)" in page.content.decode()


def test_seed_loads_the_shipped_bench_rows_once(db):
    import json

    from council_app import seed as council_seed

    if not council_seed.BENCH_FIXTURE.is_file():
        pytest.skip("no fixtures/council_bench.json shipped")
    records = json.loads(council_seed.BENCH_FIXTURE.read_text())["records"]
    assert council_seed.load_bench() == len(records)
    assert council_seed.load_bench() == 0  # idempotent
    spec = next(c for c in COMPARISONS if c["slug"] == "local-council-mixed")
    table = build_table(Comparison.objects.create(**spec), use_cache=False)
    assert not table["empty"] and table["rows"][0]["id"] == "eqlm-demo-anytime alone"


def test_the_memorys_margins_come_with_passage_paired_intervals(measured):
    _, report, _ = measured
    for mix in ("heldout-128", "heldout-512"):
        rows = {row["arm"]: row["bits_per_byte"]["mixed"] for row in report["mixes"][mix]["rows"]}
        memory = next(v for arm, v in rows.items() if arm.startswith("memory (defaults"))
        mixture = next(v for arm, v in rows.items() if arm.startswith("fixed-share mixture"))
        found = report["intervals"][mix]["minus_mixture"]
        assert found["difference"] == pytest.approx(memory - mixture, abs=1e-9)
        assert found["low"] <= found["difference"] <= found["high"]
