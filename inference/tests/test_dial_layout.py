"""The dial's first screen: the output beside the controls, sampling by default with its settings stated, greedy
one click away, a note on what a model this small can do, and the long training text in a collapsed card."""

import re

import pytest

from models_app import serving

pytestmark = pytest.mark.django_db


def test_the_output_sits_in_the_column_beside_the_controls(client):
    html = client.get("/demo/").content.decode()
    grid = html[html.index('<div class="demo-grid">') : html.index('id="model-card"')]
    assert 'id="dial-form"' in grid and 'id="output"' in grid
    assert grid.index('id="output"') < grid.index('id="quality-heading"')  # above the quality chart, not below it


def test_sampling_is_the_default_with_its_temperature_and_top_p_stated_and_greedy_one_click_away(client):
    html = client.get("/demo/").content.decode()
    temperature = re.search(r'<input type="range" id="temperature"[^>]*>', html)[0]
    top_p = re.search(r'<input type="number" id="top-p"[^>]*>', html)[0]
    assert 'value="0.8"' in temperature and 'value="0.9"' in top_p
    assert "Sampling at temperature 0.80 with top_p 0.90" in html
    assert '<button type="button" id="greedy" class="secondary">Greedy (temperature 0)</button>' in html


def test_a_note_by_the_output_says_what_to_expect_of_a_model_this_small(client):
    html = client.get("/demo/").content.decode()
    params = serving.resolve("eqlm-demo").manifest["num_params"]
    note = re.search(r'<p id="output-expect" class="muted">(.*?)</p>', html, re.S)[1]
    assert f"{params:,} parameters" in note and "greedy text loops" in note
    assert html.index('id="output"') < html.index('id="output-expect"') < html.index('id="quality-heading"')


def test_the_long_training_text_is_in_a_collapsed_card(client):
    html = client.get("/demo/").content.decode()
    card = re.search(r'<details class="model-card" id="model-card">(.*?)</details>', html, re.S)
    assert card and "how it was trained" in card[1]
    help_text = re.search(r'<p id="model-help" class="muted">(.*?)</p>', html, re.S)[1]
    assert len(re.sub(r"<[^>]+>", "", help_text)) < 200  # a pointer to the card, not the card
