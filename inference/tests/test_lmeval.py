"""EleutherAI's lm-evaluation-harness runs against the live server and agrees with the portal's own measurements.

`lm_eval` (PyPI lm-eval[api], pinned in requirements-lmeval.txt, in its own venv .venv-lmeval made by
`make lmeval-env`) runs as a subprocess with the `local-completions` model and `tokenizer_backend=remote`,
an API key, and tasks defined from local files (fixtures/lmeval/, no hub download). Its per-pair decisions
(read from --log_samples) must equal the portal's BLiMP evaluator's (eqlm/blimp.py, torch, on the checkpoint the
served ONNX files were exported from), and its rolling bits/byte the portal's lm-eval-compatible measurement.
"""

import json
import os
import subprocess
from pathlib import Path

import pytest
from django.conf import settings

from inference.models import ApiKey

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

FIXTURES = Path(__file__).parent / "fixtures" / "lmeval"
LM_EVAL = Path(settings.BASE_DIR) / ".venv-lmeval" / "bin" / "lm_eval"
DEPTH = 12
MAX_LENGTH = 256
MARGIN = 1e-4  # nats: closer pairs are reported, not compared (torch and onnxruntime differ by ~1e-6 per byte)
BLIMP_TASKS = [p.stem for p in sorted(FIXTURES.glob("eqlm_blimp_mini_*.yaml"))]


@pytest.fixture(scope="module")
def demo_export(tmp_path_factory):
    """The default model's checkpoint (torch) and its ONNX export made now, so both are the same weights."""
    from eqlm.checkpoint import load_checkpoint
    from eqlm.export import export_onnx

    model, _ = load_checkpoint(Path(settings.MODELS_DIR) / "eqlm-demo" / "checkpoint.pt")
    out = tmp_path_factory.mktemp("lmeval-onnx")
    export_onnx(model, out, model_id="eqlm-demo")
    return model, out


@pytest.fixture
def served_demo(settings, serve_models, demo_export):
    settings.API_REQUIRE_KEY = True
    serve_models(default=demo_export[1])
    return demo_export


def run_lm_eval(
    live_server,
    raw_key: str,
    tasks: list[str],
    out: Path,
    model: str = f"eqlm-demo@depth={DEPTH}",
    root: str = "",
    max_length: int = MAX_LENGTH,
) -> dict:
    """Run the harness against the live server (at `root` below it: "/serve/<id>" is one model's server root);
    returns {"results": ..., "samples": {task: [rows]}}."""
    if not LM_EVAL.exists():
        pytest.fail(f"{LM_EVAL} is missing: run `make lmeval-env` (make test does) to install lm-eval")
    model_args = ",".join(
        [
            f"model={model}",
            f"base_url={live_server.url}{root}/v1/completions",
            "tokenizer_backend=remote",
            f"max_length={max_length}",
            f"auth_token={raw_key}",
            "max_retries=1",
        ]
    )
    env = {
        **os.environ,
        "OPENAI_API_KEY": raw_key,
        "HF_DATASETS_OFFLINE": "1",
        "HF_HUB_OFFLINE": "1",
        "HF_HOME": str(out / "hf"),
        "TOKENIZERS_PARALLELISM": "false",
    }
    command = [
        str(LM_EVAL), "run", "--model", "local-completions", "--model_args", model_args,
        "--tasks", ",".join(tasks), "--include_path", str(FIXTURES), "--output_path", str(out / "results"),
        "--log_samples", "--batch_size", "1",
    ]  # fmt: skip
    done = subprocess.run(command, cwd=FIXTURES, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, f"lm_eval failed ({done.returncode}):\n{done.stdout[-3000:]}\n{done.stderr[-6000:]}"
    results_files = sorted((out / "results").rglob("results_*.json"))
    assert results_files, f"lm_eval wrote no results:\n{done.stderr[-3000:]}"
    results = json.loads(results_files[-1].read_text())
    samples = {}
    for task in tasks:
        files = sorted((out / "results").rglob(f"samples_{task}_*.jsonl"))
        assert files, f"no --log_samples file for {task}"
        samples[task] = [json.loads(line) for line in files[-1].read_text().splitlines() if line.strip()]
    return {"results": results["results"], "samples": samples}


@pytest.fixture
def api_key():
    _, raw = ApiKey.issue("lm-eval", requests_per_minute=100_000, tokens_per_minute=100_000_000)
    return raw


def test_lm_eval_through_the_api_agrees_with_the_portals_own_blimp_and_bits_per_byte(
    live_server, served_demo, api_key, tmp_path
):
    from eqlm.blimp import compare, load_pairs, sentence_logprobs
    from eqlm.decoder import OnnxEqLM
    from eqlm.scoring import rolling_bits_per_byte

    model, onnx_dir = served_demo
    harness = run_lm_eval(live_server, api_key, [*BLIMP_TASKS, "eqlm_heldout_rolling"], tmp_path)

    # BLiMP: pair for pair, the harness decides as the portal's evaluator does (torch, same weights, same depth)
    paradigms = [task.removeprefix("eqlm_blimp_mini_") for task in BLIMP_TASKS]
    pairs = {(p.paradigm, p.pair_id): p for p in load_pairs(FIXTURES, paradigms)}
    compared, ties, close, worst = 0, 0, 0, 0.0
    for task, paradigm in zip(BLIMP_TASKS, paradigms, strict=True):
        rows = harness["samples"][task]
        assert len(rows) == sum(1 for key in pairs if key[0] == paradigm)
        for row in rows:
            pair = pairs[(paradigm, row["doc"]["pairID"])]
            good_ll, bad_ll = (float(resp[0][0]) for resp in row["resps"])
            good, bad = sentence_logprobs(model, [pair.good, pair.bad], [DEPTH])[DEPTH]
            worst = max(worst, abs(good_ll - good), abs(bad_ll - bad))
            portal = compare(good, bad)
            ties += portal == "tie"
            if abs(good - bad) <= MARGIN:
                close += 1
                continue
            assert compare(good_ll, bad_ll) == portal, (pair, good_ll, bad_ll, good, bad)
            assert row["acc"] == (1.0 if portal == "correct" else 0.0)
            compared += 1
    print(
        f"\nlm-eval BLiMP mini at depth {DEPTH}: {compared} pairs decided alike, {close} within {MARGIN} nats "
        f"(not compared), {ties} ties; largest sentence log-prob difference {worst:.2e} nats"
    )
    assert compared >= 20 and worst <= 1e-3

    # rolling log-likelihood: the harness's bits/byte is the portal's lm-eval-compatible measurement
    measured = harness["results"]["eqlm_heldout_rolling"]["bits_per_byte,none"]
    docs = [json.loads(line)["text"].encode() for line in (FIXTURES / "kjv_heldout.jsonl").read_text().splitlines()]
    onnx = OnnxEqLM(onnx_dir)
    bits = sum(rolling_bits_per_byte(onnx, doc, DEPTH, MAX_LENGTH) * len(doc) for doc in docs)
    portal_bpb = bits / sum(len(doc) for doc in docs)
    print(
        f"held-out bits/byte at depth {DEPTH}, max_length {MAX_LENGTH}: lm-eval {measured:.6f}, portal {portal_bpb:.6f}"
    )
    assert abs(measured - portal_bpb) <= 0.01
    assert 1.0 < portal_bpb < 4.0  # a trained model, not noise
