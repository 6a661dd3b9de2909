"""The portal's record agrees with the programme's facts sheet (skipped when ../shared is absent).

Figures are facts and must reach the API verbatim; titles and summaries must be the portal's own words.
"""

import pytest

from findings_app.fixture_check import MAX_SUMMARY_SIMILARITY, MAX_TITLE_SIMILARITY, compare, copied, read_facts

pytestmark = pytest.mark.django_db


@pytest.fixture
def facts(shared_dir):
    return read_facts(shared_dir)


def test_every_facts_figure_value_appears_verbatim_in_the_api_for_its_finding(client, record, facts):
    assert len(facts) == 57
    for fact in facts:
        body = client.get(f"/api/findings/{fact['id']}/").json()
        served = {(figure["name"], figure["value"], figure["context"]) for figure in body["figures"]}
        for figure in fact["figures"]:
            assert (figure["name"], figure["value"], figure["context"]) in served, (fact["id"], figure)


def test_titles_and_summaries_are_not_copied_from_the_facts(client, record, facts):
    served = {}
    url = "/api/findings/"
    while url:
        page = client.get(url).json()
        served.update({row["code"]: row for row in page["results"]})
        url = page["next"]
    for fact in facts:
        row = served[fact["id"]]
        assert not copied(row["title"], fact["title"], MAX_TITLE_SIMILARITY), fact["id"]
        assert not copied(row["summary"], fact["summary"], MAX_SUMMARY_SIMILARITY), fact["id"]


def test_status_date_provenance_and_links_match_the_facts(client, record, facts):
    link_kinds = ["supersedes", "superseded_by", "corrects", "corrected_by", "related"]
    for fact in facts:
        body = client.get(f"/api/findings/{fact['id']}/").json()
        assert (body["status"], body["date"], body["status_raw"]) == (fact["status"], fact["date"], fact["status_raw"])
        assert body["tarka_verdict"] == (fact["tarka"] or "")
        assert fact["summary"] not in body["body"], fact["id"]
        experiments = [ref["recorded_as"] for ref in body["references"] if ref["kind"] == "experiment"]
        assert experiments == fact["experiments"], fact["id"]
        links = {(link["kind"], link["code"]) for link in body["links"]}
        assert links == {(kind, code) for kind in link_kinds for code in fact[kind]}, fact["id"]


def test_the_fixture_checker_finds_no_difference(fixture_data, facts):
    assert compare(fixture_data, facts) == []


def test_the_fixture_checker_notices_an_altered_figure_and_a_copied_title(fixture_data, facts):
    import copy

    altered = copy.deepcopy(fixture_data)
    altered["findings"][0]["figures"][0]["value"] = "11 md5-distinct"
    altered["findings"][1]["title"] = facts[1]["title"]
    problems = compare(altered, facts)
    assert any("F1: figure 'seeds'" in line for line in problems)
    assert any(line.startswith("F2: title is copied") for line in problems)
