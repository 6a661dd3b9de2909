"""Static files and page markup: collected ES modules import the content-hashed files of their dependencies,
and wide tables sit in focusable regions."""

import json
from pathlib import Path

import pytest
from django.conf import settings as django_settings
from django.core.management import call_command

pytestmark = pytest.mark.slow  # collects and compresses every static file (plotly included)


def test_collected_es_modules_import_their_dependencies_by_content_hash(tmp_path, settings):
    settings.STATIC_ROOT = tmp_path
    settings.STORAGES = {**settings.STORAGES, "staticfiles": {"BACKEND": "portal.storage.ModuleStaticFilesStorage"}}
    call_command("collectstatic", "--noinput", verbosity=0)
    paths = json.loads((tmp_path / "staticfiles.json").read_text())["paths"]
    lab = (tmp_path / paths["js/lab/lab.js"]).read_text()
    for dependency in ("js/lab/solvers.js", "js/lab/render.js"):
        assert f'from "./{Path(paths[dependency]).name}"' in lab  # a new lab.js never runs against an old solvers.js
    solvers = (tmp_path / paths["js/lab/solvers.js"]).read_text()
    assert f'from "./solvers/{Path(paths["js/lab/solvers/games.js"]).name}"' in solvers
    # the vendored bundles are copied byte for byte
    source = Path(django_settings.BASE_DIR) / "static" / "vendor" / "plotly.min.js"
    assert (tmp_path / paths["vendor/plotly.min.js"]).read_bytes() == source.read_bytes()


def test_a_table_region_is_a_focusable_region_named_after_its_table_with_the_name_escaped():
    from django.template import Context, Template

    html = Template('{% load portal_tags %}<div {% table_region "Figures of " code %}>').render(
        Context({"code": "<F1>"})
    )
    assert html == (
        '<div class="table-wrap" tabindex="0" role="region" aria-label="Figures of &lt;F1&gt; (scrolls sideways)">'
    )
