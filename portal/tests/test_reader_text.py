"""Reader pages speak of the programme and its models, never of how the portal was built: no process words."""

import html as htmllib
import json
import re

import pytest
from django.core.management import call_command

# Whole words only ("issue", not "tissue"). A bundled data file named as a row's source ("fixtures/results.json" in
# a provenance column) is an identifier, not a citation of the portal's working files, so only other fixtures/
# paths count; command examples in <pre> blocks are code, not prose.
PROCESS_WORDS = re.compile(
    r"\b(?:issues?|sessions?|lent|this machine)\b|fixtures/(?![\w-]+\.json)|docs/decisions|README:",
    re.IGNORECASE,
)
SKIP_BLOCKS = re.compile(r"<(script|style|template|pre)\b.*?</\1>", re.S | re.I)
TAGS = re.compile(r"<[^>]+>")
TITLES = re.compile(r'\b(?:title|aria-label|alt|content)="([^"]*)"')


def reader_text(page: str) -> str:
    """What a reader sees or hears: the text, and the titles, labels and descriptions on elements."""
    without_code = SKIP_BLOCKS.sub(" ", page)
    attributes = " ".join(TITLES.findall(without_code))
    return htmllib.unescape(TAGS.sub(" ", without_code) + " " + attributes)


def process_words(text: str) -> list[str]:
    return [text[max(0, m.start() - 60) : m.end() + 60].replace("\n", " ") for m in PROCESS_WORDS.finditer(text)]


def reader_pages() -> list[str]:
    from benchmarks_app.models import Comparison
    from experiments_app.models import Experiment
    from findings_app.models import Finding

    pages = ["/", "/findings/", "/benchmarks/", "/benchmarks/experiments/", "/demo/", "/models/", "/council/",
             "/council/replay/", "/lab/", "/glossary/", "/api/", "/api/docs/"]  # fmt: skip
    pages += [finding.get_absolute_url() for finding in Finding.objects.all()]
    pages += [f"/benchmarks/{slug}/" for slug in Comparison.objects.values_list("slug", flat=True)]
    pages += [f"/benchmarks/experiments/{slug}/" for slug in Experiment.objects.values_list("slug", flat=True)]
    return pages


def test_the_process_word_check_catches_what_it_should():
    for text in ("the depth issue", "a session", "lent to us", "on this machine", "fixtures/runs/x", "README: y"):
        assert process_words(text), text
    for text in ("tissue", "sessional", "lentil", "this machinery", "silent", "source fixtures/results.json"):
        assert not process_words(text), text


@pytest.mark.slow
@pytest.mark.django_db
def test_no_reader_page_uses_process_words(client):
    call_command("seed", verbosity=0)
    found = {}
    for url in reader_pages():
        response = client.get(url)
        assert response.status_code == 200, url
        hits = process_words(reader_text(response.content.decode()))
        if hits:
            found[url] = hits
    assert not found, "\n".join(f"{url}: {hits}" for url, hits in found.items())


@pytest.mark.slow
@pytest.mark.django_db
def test_the_api_schema_and_model_list_use_no_process_words(client):
    call_command("seed", verbosity=0)
    found = {}
    for url in ("/api/schema/", "/v1/models"):
        text = client.get(url).content.decode()
        hits = process_words(text)
        if hits:
            found[url] = hits
    assert not found, "\n".join(f"{url}: {hits}" for url, hits in found.items())


@pytest.mark.django_db
def test_a_database_seeded_with_the_old_wording_gets_the_readers_wording_on_the_next_seed():
    from benchmarks_app.declared import COMPARISONS
    from benchmarks_app.models import Comparison
    from benchmarks_app.seed import seed_comparisons
    from experiments_app.models import Experiment
    from experiments_app.seed import load_fixture

    spec = next(s for s in COMPARISONS if any("known_problem" in p for p in s.get("published", [])))
    old = [dict(p) for p in spec["published"]]
    for entry in old:
        if entry.get("known_problem", "").startswith("Noted with"):
            entry["known_problem"] = "README: " + entry["known_problem"].split(": ", 1)[1]
    Comparison.objects.create(**{**spec, "published": old})
    load_fixture()
    Experiment.objects.filter(slug="depth-curve-v7").update(notes="carried in fixtures/runs/depth-curve-v7", summary="")

    seed_comparisons()
    load_fixture()

    table = Comparison.objects.get(slug=spec["slug"])
    assert not any(p.get("known_problem", "").startswith("README:") for p in table.published)
    v7 = Experiment.objects.get(slug="depth-curve-v7")
    assert "fixtures/" not in v7.notes and v7.summary


@pytest.mark.django_db
def test_an_experiments_hypothesis_on_its_page_and_in_its_json_is_reader_text_and_its_registration_stays_word_for_word(
    client,
):
    """The page and the JSON give the hypothesis a reader reads: the registered text itself, or, where the
    registration speaks of how the work was done, a dated, hashed rewording. The registration record keeps the
    registered text word for word, and its sha256 (which names the training runs) does not move."""
    from experiments_app import amendments, services
    from experiments_app.models import Experiment
    from experiments_app.seed import load_fixture

    load_fixture()
    reworded = []
    for experiment in Experiment.objects.all():
        page = reader_text(client.get(f"/benchmarks/experiments/{experiment.slug}/").content.decode())
        assert not process_words(page), (experiment.slug, process_words(page))
        body = client.get(f"/api/experiments/{experiment.slug}/").json()
        assert not process_words(json.dumps(body)), (experiment.slug, process_words(json.dumps(body)))
        assert body["hypothesis"] == amendments.reader_hypothesis(experiment) and body["registration_intact"] is True
        record = client.get(body["registration_record"]).json()
        assert record["registered"]["hypothesis"] == experiment.hypothesis
        assert record["registration_hash"] == experiment.registration_hash and services.registration_intact(experiment)
        if process_words(experiment.hypothesis):
            reworded.append(experiment.slug)
            assert body["amendment"]["amendment_intact"] and record["amendment"]["hypothesis"] == body["hypothesis"]
            assert "registration record" in page and "word for word" in page
    # the depth-curve registrations speak of the lab's circumstances; each is shown in its reader's wording
    assert {"depth-curve", "depth-curve-v7"} <= set(reworded)


def test_the_bundled_experiments_reader_fields_use_no_process_words():
    """The experiments fixture's reader fields (title, hypothesis, notes) are reader text; only the registration
    record inside it keeps the registered wording."""
    from experiments_app.seed import FIXTURE

    for item in json.loads(FIXTURE.read_text())["experiments"]:
        for field in ("title", "hypothesis", "notes"):
            assert not process_words(item.get(field) or ""), (item["slug"], field, process_words(item[field]))
