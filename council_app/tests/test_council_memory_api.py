"""The council remembers: with the bundled members, each domain's member leads its own text, and the controls are
checked like the others (unknown ones refused by name)."""

import json

import pytest
from django.test import Client

SCRIPTURE = "And God said"
CODE = "def get_queryset(self):\n        return"


def chat(prompt: str, **extra) -> dict:
    """Sampled as the dial samples (temperature 0.8, top_p 0.9), seed 0."""
    body = {"model": "eqlm-council", "messages": [{"role": "user", "content": prompt}], "max_tokens": 30}
    body |= {"temperature": 0.8, "top_p": 0.9, "seed": 0}
    response = Client().post("/v1/chat/completions", json.dumps(body | extra), content_type="application/json")
    assert response.status_code == 200, response.content
    return response.json()


def leaders(body: dict) -> list[str]:
    council = body["eqlm"]["council"]
    return [council["members"][max(range(2), key=lambda i: t["weights"][i])] for t in council["tokens"]]


@pytest.mark.django_db
@pytest.mark.parametrize(("prompt", "member"), [(SCRIPTURE, "eqlm-demo-anytime"), (CODE, "eqlm-code")])
def test_at_the_defaults_the_member_of_the_prompts_domain_leads_and_the_answer_is_text(prompt, member):
    body = chat(prompt)
    led = leaders(body)
    assert led.count(member) > 0.8 * len(led)
    text = body["choices"][0]["message"]["content"]
    assert text.strip() and sum(c.isalpha() for c in text) >= 10
    tokens = body["eqlm"]["council"]["tokens"]
    assert all(len(t["reputations"]) == 2 and abs(sum(t["reputations"]) - 1) < 1e-6 for t in tokens)
    assert body["eqlm"]["council"]["kinetic"]["memory"] == "fixed_share"


@pytest.mark.django_db
def test_without_memory_the_old_game_answers_the_scripture_prompt_led_by_the_code_member():
    """Why the memory: the memoryless game at beta 2 leans on the code model even on scripture."""
    led = leaders(chat(SCRIPTURE, kinetic={"memory": "none"}))
    assert led.count("eqlm-code") > led.count("eqlm-demo-anytime")


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("kinetic", "param"),
    [({"betta": 2}, "kinetic.betta"), ({"memory": "always"}, "kinetic.memory"), ({"share": 1.0}, "kinetic.share")],
)
def test_an_unknown_or_bad_control_is_refused_naming_it(kinetic, param):
    body = {"model": "eqlm-council", "prompt": "x", "max_tokens": 1, "kinetic": kinetic}
    response = Client().post("/v1/completions", json.dumps(body), content_type="application/json")
    assert response.status_code == 400
    assert response.json()["error"]["param"] == param


@pytest.mark.django_db
def test_the_models_list_states_the_councils_default_controls():
    council = next(m for m in Client().get("/v1/models").json()["data"] if m["id"] == "eqlm-council")
    defaults = council["eqlm"]["kinetic_defaults"]
    assert defaults["memory"] == "fixed_share" and defaults["share"] == 0.002 and defaults["beta"] == 0.0
    assert defaults["pool"] == "arithmetic" and defaults["learning_rate"] == 0.1
