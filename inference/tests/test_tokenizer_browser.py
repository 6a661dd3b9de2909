"""The browser's tokenizers (static/js/tokenizer.js in Chromium) give Python's ids, token names and streamed text.

GPT-2's BPE runs from the vendored gpt-tokenizer modules (static/vendor/gpt-tokenizer/, imported on demand); the
corpus is KJV-like verses, code, unicode and emoji, whitespace runs and BLiMP sentences (eqlm/tests/tokenizer_corpus).
"""

from pathlib import Path

import pytest
from django.templatetags.static import static

from eqlm.tests.tokenizer_corpus import blimp_sentences, corpus
from eqlm.tokenizers import get_tokenizer

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

IN_PAGE = """async ({ module, name, texts }) => {
  const t = await import(module);
  const tok = await t.getTokenizer(name);
  const streamed = texts.map((text) => {
    const decoder = tok.incrementalDecoder();
    return tok.encode(text).map((id) => decoder.push(id)).concat([decoder.flush()]);
  });
  return {
    vocab: tok.vocabSize,
    bos: tok.bosTokenId,
    eot: tok.eotTokenId,
    ids: texts.map((text) => tok.encode(text)),
    decoded: texts.map((text) => tok.decode(tok.encode(text))),
    names: Array.from({ length: tok.vocabSize }, (_, id) => tok.tokenString(id)),
    reversed: Array.from({ length: tok.vocabSize }, (_, id) => tok.tokenFromString(tok.tokenString(id)) === id),
    streamed,
  };
}"""


@pytest.fixture
def texts(settings):
    return corpus() + blimp_sentences(Path(settings.BLIMP_DIR), pairs=50)


def run_in_page(page, name: str, texts: list[str]) -> dict:
    page.goto("/")
    result = page.evaluate(IN_PAGE, {"module": static("js/tokenizer.js"), "name": name, "texts": texts})
    page.watch.assert_clean()
    return result


def python_stream(tokenizer, text: str) -> list[str]:
    decoder = tokenizer.incremental_decoder()
    return [decoder.push(i) for i in tokenizer.encode(text)] + [decoder.flush()]


def test_gpt2_in_the_browser_gives_pythons_ids_names_and_streamed_text(page, texts):
    gpt2 = get_tokenizer("gpt2")
    js = run_in_page(page, "gpt2", texts)
    assert (js["vocab"], js["bos"], js["eot"]) == (50257, 50256, 50256)
    for text, ids in zip(texts, js["ids"], strict=True):
        assert ids == gpt2.encode(text), text
    assert js["decoded"] == texts
    assert js["names"] == [gpt2.token_string(i) for i in range(gpt2.vocab_size)]
    assert all(js["reversed"])
    assert js["streamed"] == [python_stream(gpt2, text) for text in texts]
    assert any(request.endswith("encoding/r50k_base.js") for request in page.watch.requests)


def test_the_byte_tokenizer_by_name_in_the_browser_is_pythons_and_loads_no_bpe(page, texts):
    byte = get_tokenizer("bytes")
    js = run_in_page(page, "bytes", texts)
    assert (js["vocab"], js["bos"], js["eot"]) == (256, 10, None)
    assert js["ids"] == [byte.encode(text) for text in texts]
    assert js["names"] == [byte.token_string(i) for i in range(256)] and all(js["reversed"])
    assert js["streamed"] == [python_stream(byte, text) for text in texts]
    assert not any("gpt-tokenizer" in request for request in page.watch.requests)
