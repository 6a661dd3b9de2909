"""The tokenizer endpoints speak the served model's tokens: GPT-2 BPE for a model whose manifest says "gpt2", bytes
for one that names none. A council takes only members that share one tokenizer."""

import json
import shutil

import pytest

from eqlm.council import CouncilGenerator, Kinetic
from eqlm.generation import Generator
from eqlm.tokenizers import get_tokenizer

pytestmark = pytest.mark.django_db


def with_tokenizer(source, target, name):
    """A copy of an exported model whose manifest names `name` as its tokenizer (the key GPT-2 exports carry);
    the key absent when name is None."""
    shutil.copytree(source, target)
    manifest = json.loads((target / "manifest.json").read_text())
    manifest.pop("tokenizer", None)
    if name is not None:
        manifest["tokenizer"] = name
    (target / "manifest.json").write_text(json.dumps(manifest))
    return target


@pytest.fixture
def served(serve_models, tmp_path, tiny_onnx_dir):
    # The tiny model's graphs are byte-sized; these endpoints read only its manifest and its context (64).
    with_tokenizer(tiny_onnx_dir, tmp_path / "eqlm-demo" / "onnx", None)
    with_tokenizer(tiny_onnx_dir, tmp_path / "bpe-demo" / "onnx", "gpt2")
    return serve_models(tmp_path)


def post(client, path, **body):
    response = client.post(path, json.dumps(body), content_type="application/json")
    return response.status_code, response.json()


def test_tokenize_gives_gpt2_ids_for_a_gpt2_model(client, served):
    status, body = post(client, "/tokenize", model="bpe-demo", prompt="The quick brown fox", return_token_strs=True)
    assert status == 200, body
    assert body == {
        "tokens": [464, 2068, 7586, 21831],
        "count": 4,
        "max_model_len": 64,
        "token_strs": ["The", " quick", " brown", " fox"],
    }
    status, body = post(client, "/tokenize", model="bpe-demo", prompt="🚀", add_special_tokens=True)
    assert body["tokens"] == [50256] + get_tokenizer("gpt2").encode("🚀")
    status, body = post(client, "/tokenize", model="bpe-demo", messages=[{"role": "user", "content": "Hi"}])
    assert body["tokens"] == get_tokenizer("gpt2").encode("Hi\n")


def test_detokenize_reads_gpt2_ids_and_refuses_ids_past_its_vocabulary(client, served):
    ids = get_tokenizer("gpt2").encode("naïve 🚀 <|endoftext|>")
    assert post(client, "/detokenize", model="bpe-demo", tokens=ids) == (200, {"prompt": "naïve 🚀 <|endoftext|>"})
    status, body = post(client, "/detokenize", model="bpe-demo", tokens=[464, 50257])
    assert status == 400 and body["error"]["param"] == "tokens"
    assert "tokens[1] is 50257" in body["error"]["message"] and "0 to 50256" in body["error"]["message"]
    status, body = post(client, "/detokenize", model="eqlm-demo", tokens=[464])
    assert status == 400 and "token ids are bytes, 0 to 255" in body["error"]["message"]


def test_tokenizer_info_describes_each_models_own_tokenizer(client, served):
    gpt2 = client.get("/tokenizer_info", {"model": "bpe-demo"}).json()
    assert (gpt2["tokenizer"], gpt2["tokenizer_class"], gpt2["vocab_size"]) == ("gpt2", "GPT2Tokenizer", 50257)
    assert gpt2["bos_token"] == gpt2["eos_token"] == "<|endoftext|>" and gpt2["eos_token_id"] == 50256
    assert gpt2["model_max_length"] == 64
    byte = client.get("/tokenizer_info").json()  # the default model: its manifest names no tokenizer
    assert (byte["tokenizer"], byte["vocab_size"], byte["bos_token_id"]) == ("bytes", 256, 10)
    assert byte["eos_token"] is None and byte["eos_token_id"] is None


def test_a_model_naming_an_unknown_tokenizer_is_unavailable_not_a_crash(client, serve_models, tmp_path, tiny_onnx_dir):
    with_tokenizer(tiny_onnx_dir, tmp_path / "eqlm-demo" / "onnx", "llama")
    serve_models(tmp_path)
    status, body = post(client, "/tokenize", prompt="x")
    assert status == 503 and "unknown tokenizer 'llama'" in body["error"]["message"]


def test_a_council_refuses_members_with_different_tokenizers_naming_each(tmp_path, tiny_onnx_dir):
    members = [
        Generator(with_tokenizer(tiny_onnx_dir, tmp_path / "a", None)),
        Generator(with_tokenizer(tiny_onnx_dir, tmp_path / "b", "gpt2")),
    ]
    with pytest.raises(ValueError, match=r"share one tokenizer.*members\[0\] uses bytes, members\[1\] uses gpt2"):
        CouncilGenerator(members, Kinetic())
    same = [members[0], Generator(with_tokenizer(tiny_onnx_dir, tmp_path / "c", "bytes"))]
    assert CouncilGenerator(same, Kinetic()).members == same
