"""Every table on every page has as many cells in each row as its header has columns, so no figure sits under
another column's name."""

from html.parser import HTMLParser

import pytest

pytestmark = pytest.mark.django_db


class TableShapes(HTMLParser):
    """Collects, per <table>, its caption, the width of its header rows and the width of each body row
    (colspans counted, and cells that span rows counted in every row they cover)."""

    def __init__(self):
        super().__init__()
        self.tables: list[dict] = []
        self._stack: list[dict] = []
        self._section = ""
        self._row: int | None = None
        self._in_caption = False

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "table":
            self._stack.append({"caption": "", "header": [], "rows": [], "spans": []})
        elif not self._stack:
            return
        elif tag in ("thead", "tbody", "tfoot"):
            self._section = tag
        elif tag == "caption":
            self._in_caption = True
        elif tag == "tr":
            table = self._stack[-1]
            self._row = sum(cols for _, cols in table["spans"])  # cells above that reach down into this row
            table["spans"] = [(rows - 1, cols) for rows, cols in table["spans"] if rows > 1]
        elif tag in ("td", "th") and self._row is not None:
            cols, rows = int(attrs.get("colspan") or 1), int(attrs.get("rowspan") or 1)
            self._row += cols
            if rows > 1:
                self._stack[-1]["spans"].append((rows - 1, cols))

    def handle_endtag(self, tag):
        if not self._stack:
            return
        table = self._stack[-1]
        if tag == "caption":
            self._in_caption = False
        elif tag == "tr" and self._row is not None:
            (table["header"] if self._section == "thead" else table["rows"]).append(self._row)
            self._row = None
        elif tag == "table":
            self.tables.append(self._stack.pop())
            self._section = ""

    def handle_data(self, data):
        if self._stack and self._in_caption:
            self._stack[-1]["caption"] += data


def table_shape_problems(html: str) -> list[str]:
    parser = TableShapes()
    parser.feed(html)
    problems = []
    for table in parser.tables:
        if not table["header"]:
            continue
        width = table["header"][-1]
        wrong = sorted({cells for cells in table["rows"] if cells != width})
        if wrong:
            problems.append(f"{table['caption'].strip()[:60]!r}: header {width} columns, rows of {wrong} cells")
    return problems


def test_the_shape_check_catches_a_row_wider_than_its_header():
    head = "<thead><tr><th>a</th><th>b</th></tr></thead>"
    html = f"<table><caption>t</caption>{head}<tbody><tr><td>1</td><td>2</td><td>3</td></tr></tbody></table>"
    assert table_shape_problems(html) == ["'t': header 2 columns, rows of [3] cells"]
    spanned = (
        "<table><thead><tr><th>a</th><th>b</th></tr></thead><tbody><tr><td colspan='2'>none</td></tr></tbody></table>"
    )
    assert table_shape_problems(spanned) == []
    two_rows = (
        "<table><thead><tr><th rowspan='2'>r</th><th colspan='2'>g</th></tr><tr><th>x</th><th>y</th></tr></thead>"
        "<tbody><tr><th>1</th><td>2</td><td>3</td></tr></tbody></table>"
    )
    assert table_shape_problems(two_rows) == []


def test_every_table_row_has_as_many_cells_as_its_header(client, seeded_pages):
    pages = [url for url in seeded_pages if not url.startswith("/admin/")]
    assert any(url.startswith("/benchmarks/local-") for url in pages)  # every benchmark table, not just one
    problems = []
    tables_seen = 0
    for url in pages:
        response = client.get(url)
        assert response.status_code == 200, url
        html = response.content.decode()
        tables_seen += html.count("<table")
        problems += [f"{url} {problem}" for problem in table_shape_problems(html)]
    assert tables_seen > 20
    assert problems == [], "\n".join(problems)
