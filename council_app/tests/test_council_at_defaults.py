"""The bundled council at its default controls writes in the prompt's domain, bare or chat-framed
(bench/council.py --defaults measures the same on 20 prompts)."""

import json

import pytest
from rest_framework.test import APIClient

pytestmark = pytest.mark.django_db

MEMBERS = ["eqlm-demo-anytime", "eqlm-code"]
KJV = "And God said, Let there be"
CODE = "    def __init__(self, *args, **kwargs):\n        super()"


def council(path: str, prompt: str) -> dict:
    body = {"model": "eqlm-council", "max_tokens": 16, "temperature": 0}
    if path.endswith("chat/completions"):
        body["messages"] = [{"role": "user", "content": prompt}]
    else:
        body["prompt"] = prompt
    response = APIClient().post(path, json.dumps(body), content_type="application/json")
    assert response.status_code == 200, response.content
    return response.json()


def text_of(answer: dict) -> str:
    choice = answer["choices"][0]
    return choice["message"]["content"] if "message" in choice else choice["text"]


@pytest.mark.parametrize("path", ["/v1/completions", "/v1/chat/completions"])
@pytest.mark.parametrize("prompt, member", [(KJV, "eqlm-demo-anytime"), (CODE, "eqlm-code")])
def test_the_member_of_the_prompts_domain_holds_most_of_the_weight_by_the_fifth_byte(path, prompt, member):
    answer = council(path, prompt)
    tokens = answer["eqlm"]["council"]["tokens"]
    assert tokens[4]["weights"][MEMBERS.index(member)] > 0.5, (text_of(answer), tokens[4]["weights"])


def test_a_chat_framed_verse_is_continued_in_words_not_spaces():
    text = text_of(council("/v1/chat/completions", KJV))
    assert text.strip() and sum(c.isalpha() for c in text) >= len(text) // 2, repr(text)
