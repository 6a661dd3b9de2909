"""What each notch buys: the dial's quality chart reads the demo model's stored measurements, nothing made up."""

import pytest

from results.records import ingest_records

pytestmark = pytest.mark.django_db


def blimp_record(depth: int, value: float, n: int, arm: str = "eqlm-demo", run: str = "local:eqlm-demo:abc") -> dict:
    return {
        "run": run,
        "experiment": "local",
        "arm": arm,
        "seed": 0,
        "metric": "blimp_accuracy",
        "value": value,
        "unit": "fraction",
        "n": n,
        "step": None,
        "condition": {"depth": depth},
        "model_family": "tied-anytime",
        "model_name": arm,
        "num_params": 1000,
        "config_hash": "x",
        "git_commit": "y",
    }


def test_blimp_by_depth_of_the_demo_model_joins_the_chart_table(client):
    ingest_records(
        [blimp_record(4, 0.55, 100), blimp_record(12, 0.61, 100), blimp_record(12, 0.9, 10, run="local:eqlm-demo:tiny")]
        + [blimp_record(12, 0.99, 500, arm="someone-elses-upload", run="local:other:1")],
        source_name="test evaluation",
    )
    rows = {row["depth"]: row for row in client.get("/demo/quality.json").json()["rows"]}
    assert rows[4]["blimp_accuracy"] == 0.55
    assert rows[12]["blimp_accuracy"] == 0.61  # the evaluation over more pairs; other models' rows are not shown
    page = client.get("/demo/").content.decode()
    assert "BLiMP accuracy</th>" in page and "0.610" in page
