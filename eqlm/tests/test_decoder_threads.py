"""How many onnxruntime threads each graph of a runtime gets."""

from pathlib import Path

from eqlm import decoder
from eqlm.decoder import OnnxEqLM, graph_bytes

ROOT = Path(__file__).resolve().parents[2]
EXPLICIT = ROOT / "models" / "explicit-demo" / "onnx"


def threads_of(session) -> int:
    return session.get_session_options().intra_op_num_threads


def test_an_iteration_graph_of_few_weight_bytes_runs_on_one_thread_and_the_rest_on_the_threads_asked():
    model = OnnxEqLM(EXPLICIT, threads=2)
    assert all(
        graph_bytes(EXPLICIT, model.manifest, f"{role}.onnx") < decoder.SMALL_GRAPH_BYTES
        for role in model.manifest["layers"]
    )
    assert [threads_of(s) for s in model.layer_sessions] == [1] * 12
    assert threads_of(model.head_sess) == threads_of(model.embed_sess) == 2


def test_a_large_iteration_graph_runs_on_the_threads_asked(monkeypatch):
    monkeypatch.setattr(decoder, "SMALL_GRAPH_BYTES", 0)
    model = OnnxEqLM(EXPLICIT, threads=2)
    assert [threads_of(s) for s in model.layer_sessions] == [2] * 12


def test_a_graphs_bytes_count_the_external_data_its_role_reads(tmp_path):
    (tmp_path / "step.onnx").write_bytes(b"x" * 10)
    (tmp_path / "block.bin").write_bytes(b"x" * 100)
    (tmp_path / "tied.bin").write_bytes(b"x" * 1000)
    manifest = {
        "graphs": {"step": "step.onnx", "step_batched": "step_batched.onnx"},
        "external_data": {"block.bin": ["step", "step_batched"], "tied.bin": ["embed", "head"]},
    }
    assert graph_bytes(tmp_path, manifest, "step.onnx") == 110
