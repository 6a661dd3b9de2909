"""The browser's tokenizer (static/js/tokenizer.js) is byte-for-byte the Python one, streaming decode included."""

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from eqlm import tokenizer

pytestmark = pytest.mark.slow  # node

ROOT = Path(__file__).resolve().parents[2]
TRICKY = [
    "",
    "In the beginning God created the heaven and the earth.",
    "naïve café — “quotes” ‘single’ … ½",
    "emoji 👩🏽‍🚀 and flags 🇬🇧, ZWJ sequences",
    "中文字符, 日本語, 한국어, עברית, العربية",
    "combining: e\u0301 a\u0308\u0301, BOM \ufeff, NUL \x00, tabs\tand\r\nnewlines",
    "surrogate-range text 𝔘𝔫𝔦𝔠𝔬𝔡𝔢 and max \U0010ffff",
]
# Byte streams that are not valid UTF-8: the streaming decoders must replace the same bytes the same way.
BROKEN = [[0xE2, 0x82, 0x41], [0xF0, 0x9F, 0x98], [0xFF, 0x41, 0xC3], [0xC0, 0xAF, 0x61], [0xE2, 0x28, 0xA1]]
# An encoded surrogate (ED A0 80): both decoders replace it with three U+FFFD, but Python emits them at the third
# byte and the browser's TextDecoder at the second and third. The text is the same; only the split differs.
SURROGATE = [0xED, 0xA0, 0x80]

NODE_SCRIPT = """
import(require("url").pathToFileURL(process.argv[1])).then((t) => {
const input = JSON.parse(require("fs").readFileSync(0, "utf8"));
const out = {
  encoded: input.texts.map((s) => t.encode(s)),
  decoded: input.texts.map((s) => t.decode(t.encode(s))),
  streamed: input.streams.map((bytes) => {
    const d = new t.IncrementalDecoder();
    return bytes.map((b) => d.push(b)).concat([d.flush()]);
  }),
  whole: input.streams.map((bytes) => t.decode(bytes)),
  vocab: t.VOCAB_SIZE,
};
process.stdout.write(JSON.stringify(out));
});
"""


@pytest.fixture(scope="module")
def node_results():
    if not shutil.which("node"):
        pytest.skip("node is not installed")
    streams = [tokenizer.encode(text) for text in TRICKY] + BROKEN + [SURROGATE]
    result = subprocess.run(
        ["node", "-e", NODE_SCRIPT, str(ROOT / "static/js/tokenizer.js")],
        input=json.dumps({"texts": TRICKY, "streams": streams}),
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    )
    return streams, json.loads(result.stdout)


def test_js_encodes_tricky_strings_to_the_same_tokens_as_python(node_results):
    _, js = node_results
    assert js["vocab"] == tokenizer.VOCAB_SIZE
    assert js["encoded"] == [tokenizer.encode(text) for text in TRICKY]
    assert js["decoded"] == TRICKY


def test_js_streaming_decode_matches_python_piece_by_piece(node_results):
    streams, js = node_results
    for bytes_, pieces in zip(streams, js["streamed"], strict=True):
        decoder = tokenizer.IncrementalDecoder()
        python_pieces = [decoder.push(b) for b in bytes_] + [decoder.flush()]
        if bytes_ is SURROGATE:
            assert "".join(pieces) == "".join(python_pieces) == "\ufffd" * 3
        else:
            assert pieces == python_pieces
    assert js["whole"] == [tokenizer.decode(b) for b in streams]


def test_the_browser_reads_a_manifests_tokenizer_name_as_python_does():
    from eqlm.tokenizers import tokenizer_name

    if not shutil.which("node"):
        pytest.skip("node is not installed")
    manifests = [{}, {"tokenizer": "gpt2"}, {"tokenizer": "bytes"}, {"tokenizer": None},
                 {"tokenizer": "utf-8 bytes (token id = byte value)"}, {"tokenizer": "llama"}]  # fmt: skip
    script = (
        'import(require("url").pathToFileURL(process.argv[1])).then((t) => process.stdout.write(JSON.stringify('
        "JSON.parse(process.argv[2]).map((m) => { try { return t.tokenizerName(m); } catch { return null; } }))));"
    )
    done = subprocess.run(
        ["node", "-e", script, str(ROOT / "static/js/tokenizer.js"), json.dumps(manifests)],
        capture_output=True, text=True, timeout=30, check=True,
    )  # fmt: skip

    def python(manifest):
        try:
            return tokenizer_name(manifest)
        except ValueError:
            return None

    names = [python(m) for m in manifests]
    assert json.loads(done.stdout) == names == ["bytes", "gpt2", "bytes", "bytes", "bytes", None]
