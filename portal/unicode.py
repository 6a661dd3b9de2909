"""Text that no part of the portal should store: invalid UTF-8, lone surrogates and NUL characters."""

import codecs
import re
from urllib.parse import unquote_to_bytes

from django.http.multipartparser import MultiPartParserError

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


# --- multipart form fields -------------------------------------------------------------------------------------
# Django's multipart parser decodes every field, field name and file name with errors="replace", so invalid UTF-8
# would arrive as U+FFFD instead of being refused like every other body. The request middleware gives multipart
# requests this encoding instead (Django's parser and DRF's both read request.encoding): a codec that is UTF-8 but
# raises InvalidFormText for invalid UTF-8, whatever `errors` the caller passes. (A NUL is valid UTF-8: the form's
# own validation names the field that holds one, as Django's CharField and the upload's path hints do.)
STRICT_UTF8 = "portal-strict-utf-8"


class InvalidFormText(MultiPartParserError, ValueError):
    """Text that is not UTF-8 in a multipart body: Django answers it 400; DRF's parsers turn it into a ParseError
    (a multipart parse error, or, read as JSON, a ValueError), which the API's handler answers as invalid_encoding."""

    def __init__(self, message: str, offset: int):
        super().__init__(message)
        self.offset = offset  # an instance attribute also keeps the codec machinery from rewording the message


def _strict_decode(data, errors="strict", final=True):
    try:
        return codecs.utf_8_decode(data, "strict", final)
    except UnicodeDecodeError as exc:
        bad = bytes(data[exc.start : exc.start + 1])
        raise InvalidFormText(f"A form field is not valid UTF-8 (byte {exc.start}: {bad!r}).", exc.start) from None


class _StrictIncrementalDecoder(codecs.BufferedIncrementalDecoder):
    def _buffer_decode(self, data, errors, final):
        return _strict_decode(data, errors, final)


class _StrictStreamReader(codecs.StreamReader):
    def decode(self, data, errors="strict"):
        return _strict_decode(data, errors, False)  # a character cut by a read boundary waits for the next read


def _search_strict(name: str):
    if name.replace("-", "_") == STRICT_UTF8.replace("-", "_"):
        utf8 = codecs.lookup("utf-8")
        return codecs.CodecInfo(
            utf8.encode,
            _strict_decode,
            name=STRICT_UTF8,
            incrementalencoder=utf8.incrementalencoder,
            incrementaldecoder=_StrictIncrementalDecoder,
            streamreader=_StrictStreamReader,
            streamwriter=utf8.streamwriter,
        )
    return None


codecs.register(_search_strict)
