"""Text that no part of the portal should store: invalid UTF-8, lone surrogates and NUL characters (pure functions)."""

import re
from urllib.parse import unquote_to_bytes

# A backslash run before `u` + a surrogate or NUL code; an even run is an escaped backslash, not an escape.
_SUSPECT_ESCAPE = re.compile(r"(\\+)u(d[89ab][0-9a-f]{2}|d[c-f][0-9a-f]{2}|0000)", re.IGNORECASE)
_LOW_ESCAPE = re.compile(r"\\ud[c-f][0-9a-f]{2}", re.IGNORECASE)


def json_escape_problem(text: str) -> str | None:
    """What is wrong with the JSON escapes in `text` (a lone surrogate or a NUL), or None.

    A surrogate pair (`\\ud83d\\ude00`) is a valid character and passes. Scans with a regular expression
    instead of parsing, so it costs microseconds and works on any body the view may read as JSON.
    """
    if "\\u" not in text and "\\U" not in text:
        return None
    paired_low = -1
    for match in _SUSPECT_ESCAPE.finditer(text):
        backslashes = match.group(1)
        if len(backslashes) % 2 == 0:
            continue
        escape_at = match.start(1) + len(backslashes) - 1
        code = int(match.group(2), 16)
        if code == 0:
            return "contains a NUL character (\\u0000), which cannot be stored"
        if code <= 0xDBFF:
            if _LOW_ESCAPE.match(text, match.end()):
                paired_low = match.end()
                continue
            return f"contains a lone surrogate (\\u{code:04x}), which is not valid Unicode"
        if escape_at != paired_low:
            return f"contains a lone surrogate (\\u{code:04x}), which is not valid Unicode"
    return None


def text_problem(raw: bytes, *, percent_encoded: bool) -> str | None:
    """What is wrong with a query string or body as UTF-8 text (after percent-decoding), or None."""
    data = unquote_to_bytes(raw.replace(b"+", b" ")) if percent_encoded else raw
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as exc:
        return f"is not valid UTF-8 (byte {exc.start}: {data[exc.start : exc.start + 1]!r})"
    if percent_encoded and b"\x00" in data:
        return "contains a NUL character (%00), which cannot be stored"
    return None


def stored_text_problem(value) -> tuple[str, str] | None:
    """(where, what) for the first string inside `value` (dicts, lists, keys included) that cannot be stored.

    A lone surrogate cannot be encoded as UTF-8 and PostgreSQL refuses NUL characters in text and JSON.
    """
    stack = [("", value)]
    while stack:
        where, item = stack.pop()
        if isinstance(item, dict):
            for key, child in item.items():
                stack.append((f"{where}/{key}", key))
                stack.append((f"{where}/{key}", child))
        elif isinstance(item, list | tuple):
            stack.extend((f"{where}/{index}", child) for index, child in enumerate(item))
        elif isinstance(item, str):
            if "\x00" in item:
                return where or "/", "contains a NUL character, which cannot be stored"
            try:
                item.encode("utf-8")
            except UnicodeEncodeError as exc:
                code = ord(item[exc.start])
                return where or "/", f"contains a lone surrogate (\\u{code:04x}), which is not valid Unicode"
    return None
