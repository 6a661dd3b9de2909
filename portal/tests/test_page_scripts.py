"""The page scripts follow one scheme: hyphenated file names, ES modules, and URLs read from the page, not typed in."""

import re
from pathlib import Path

from django.conf import settings

JS = Path(settings.BASE_DIR) / "static" / "js"
TEMPLATES = Path(settings.BASE_DIR) / "templates"

# Scripts loaded as classic scripts, each with its reason; every other page script is an ES module.
CLASSIC = {
    "js/theme.js": "sets the theme in <head> before the first paint (a module is deferred: the page would flash)",
}


def page_scripts() -> list[tuple[str, str, str]]:
    """(template, static path, the <script> tag) for every script a template loads from static/js/."""
    found = []
    for template in TEMPLATES.rglob("*.html"):
        for tag in re.findall(r"<script\b[^>]*>", template.read_text()):
            path = re.search(r"\{% static '(js/[^']+)' %\}", tag)
            if path:
                found.append((str(template.relative_to(TEMPLATES)), path[1], tag))
    return found


def test_every_script_file_name_is_lowercase_and_hyphenated():
    names = [path.relative_to(JS).as_posix() for path in JS.rglob("*.js")]
    assert names and [name for name in names if not re.fullmatch(r"[a-z0-9/-]+\.js", name)] == []


def test_no_script_types_an_api_or_page_url_in():
    typed = []
    for path in JS.rglob("*.js"):
        for number, line in enumerate(path.read_text().splitlines(), 1):
            if re.search(r"""["'`]/(api|v1|lab|benchmarks|demo|council|findings)/""", line):
                typed.append(f"{path.relative_to(JS)}:{number}: {line.strip()}")
    assert typed == [], "\n".join(typed)


def test_page_scripts_are_es_modules_except_the_listed_classic_ones():
    scripts = page_scripts()
    assert len(scripts) > 10
    classic = sorted({path for _, path, tag in scripts if 'type="module"' not in tag})
    assert classic == sorted(CLASSIC), classic
    for path in CLASSIC:
        assert (Path(settings.BASE_DIR) / "static" / path).is_file(), path


def test_no_page_script_declares_with_var_or_wraps_itself_in_a_function():
    """One dialect: module code (const/let, import/export), no ES5 `var` and no IIFE wrapper."""
    old = []
    for path in JS.rglob("*.js"):
        text = path.read_text()
        if re.search(r"^\s*var\s", text, re.M) or re.search(r"^\(function\s*\(", text, re.M):
            old.append(path.relative_to(JS).as_posix())
    assert old == []
