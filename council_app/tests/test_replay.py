"""The question-by-question replay: transcript, filters and previous/next links that work without JS."""

import re

import pytest

pytestmark = pytest.mark.django_db


def current_index(html: str) -> int:
    return int(re.search(r'id="transcript"[^>]*data-index="(\d+)"', html, re.S).group(1))


def test_replay_opens_on_the_first_question_of_the_first_seed(client, council):
    response = client.get("/council/replay/")
    html = response.content.decode()
    assert response.status_code == 200
    assert 'data-seed="45"' in html and current_index(html) == 0
    assert "Outcomes, not text." in html and "per-token influence weights" in html
    assert 'id="council-next"' in html and 'id="council-prev"' not in html


def test_transcript_shows_each_players_correctness_and_each_rules_pick(client, council):
    question = council["seeds"][0]["questions"][0]
    html = client.get("/council/replay/?seed=45&q=0").content.decode()
    transcript = re.search(r'<section id="transcript".*?</section>', html, re.S).group(0)
    players = re.findall(
        r'chat-player">\s*<span class="chat-who">([^<]+?)\s*(?:<span|</span>).*?(✓|✗)', transcript, re.S
    )
    assert {name.strip(): mark == "✓" for name, mark in players} == {
        name.split("/")[1]: correct for name, correct in question["players"].items()
    }
    for outcome in question["rules"].values():
        assert outcome["winner"].split("/")[1] in transcript
    assert "router's maths champion" in transcript
    assert "Majority vote" in transcript and "not recorded" in transcript


def test_next_and_previous_links_step_through_the_seed(client, council):
    html = client.get("/council/replay/?seed=46&q=5").content.decode()
    assert current_index(html) == 5
    next_url = re.search(r'href="([^"]+)" rel="next"', html).group(1).replace("&amp;", "&")
    prev_url = re.search(r'href="([^"]+)" rel="prev"', html).group(1).replace("&amp;", "&")
    assert current_index(client.get(next_url).content.decode()) == 6
    assert current_index(client.get(prev_url).content.decode()) == 4
    assert "question 6 of 40" in html


def test_disagreement_filter_keeps_only_split_questions(client, council):
    seed = council["seeds"][1]
    split = [q["index"] for q in seed["questions"] if len(set(q["players"].values())) > 1]
    html = client.get("/council/replay/?seed=46&split=players").content.decode()
    listed = [int(i) for i in re.findall(r">#(\d+)</a>", html)]
    assert listed == split
    assert current_index(html) == split[0]
    next_url = re.search(r'href="([^"]+)" rel="next"', html).group(1).replace("&amp;", "&")
    assert "split=players" in next_url
    assert current_index(client.get(next_url).content.decode()) == split[1]


def test_rule_outcome_filter(client, council):
    seed = council["seeds"][2]
    wrong = [q["index"] for q in seed["questions"] if not q["rules"]["equilibrium"]["correct"]]
    html = client.get("/council/replay/?seed=47&rule=equilibrium&outcome=wrong").content.decode()
    assert [int(i) for i in re.findall(r">#(\d+)</a>", html)] == wrong


def test_rules_split_filter(client, council):
    seed = council["seeds"][0]
    split = [q["index"] for q in seed["questions"] if len({q["rules"][r]["winner"] for r in q["rules"]}) > 1]
    html = client.get("/council/replay/?seed=45&split=rules").content.decode()
    assert [int(i) for i in re.findall(r">#(\d+)</a>", html)] == split


def test_general_domain_says_honestly_that_none_was_sampled(client, council):
    html = client.get("/council/replay/?seed=45&domain=general").content.decode()
    assert 'id="no-questions"' in html
    assert "the sample has no general-knowledge question" in html


@pytest.mark.parametrize(
    "query", ["seed=99", "seed=abc", "seed=45&domain=chemistry", "seed=45&rule=majority", "seed=45&q=abc"]
)
def test_bad_filters_get_a_form_error_and_400(client, council, query):
    response = client.get(f"/council/replay/?{query}")
    assert response.status_code == 400
    assert "field-error" in response.content.decode()


def test_replay_without_a_record_says_how_to_load_it(client, db):
    response = client.get("/council/replay/")
    assert response.status_code == 200
    assert "manage.py seed" in response.content.decode()


def test_sample_tallies_sit_beside_the_recorded_maths_accuracy(client, council):
    seed = council["seeds"][0]
    right = sum(q["rules"]["equilibrium"]["correct"] for q in seed["questions"])
    html = client.get("/council/replay/?seed=45").content.decode()
    table = re.search(r'<table id="tallies-table">.*?</table>', html, re.S).group(0)
    row = re.search(r"Equilibrium \(influence game\)</th>(.*?)</tr>", table, re.S).group(1)
    assert f"{right} of 40" in row
    assert "0.7667" in row  # the seed's recorded maths accuracy for the equilibrium rule
