"""Reading a recorded figure string ("1.93 [1.90,1.96]", "0.7133±0.0294") as a number and an interval.

Pure functions, no Django: the recorded string stays the fact; the parse is a convenience for sorting,
plotting and the API, and is left empty whenever the string is more than one plain number.
"""

import math
import re
from dataclasses import dataclass

_NUMBER = r"[-+−]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?:[eE][-+−]?\d+)?"
_UNIT = r"%|pp|×|x|times|nats(?:/token)?|MB/layer|[KMG]?B|[kKMB]|ms|s|min|h"
_VALUE = re.compile(
    rf"""^
    (?:(?P<symbol>[A-Za-zτλρβα]{{1,3}})\s*=\s*)?          # lr=0.1, τ=0.1
    (?P<qualifier>[≈~<>≤≥])?\s*
    (?P<number>{_NUMBER})
    \s*(?P<unit>{_UNIT})?
    (?:\s*(?:±|\+/-)\s*(?P<spread>{_NUMBER})\s*(?:{_UNIT})?)?
    (?:\s*\[\s*(?P<low>{_NUMBER})\s*,\s*(?P<high>{_NUMBER})\s*\])?
    (?:\s*\([^()]*\))?                                    # a trailing aside: "(loss 3.75)"
    $""",
    re.VERBOSE,
)
# An interval stated in the context column: "95% bootstrap CI [0.8979, 0.9492]", "95% interval [0.939, 0.977]".
_CONTEXT_INTERVAL = re.compile(rf"(?:CI|interval)\s*\[\s*(?P<low>{_NUMBER})\s*,\s*(?P<high>{_NUMBER})\s*\]")

INTERVAL_BRACKET = "bracket"
INTERVAL_PLUS_MINUS = "plus_minus"
INTERVAL_CONTEXT = "context"


@dataclass(frozen=True)
class ParsedValue:
    """What a figure string says as numbers. `number` is None when the string is not one plain number."""

    number: float | None = None
    low: float | None = None
    high: float | None = None
    interval_kind: str = ""
    qualifier: str = ""
    unit: str = ""


def to_float(text: str) -> float:
    """A recorded number as a float: thousands separators dropped, the Unicode minus read as '-'."""
    return float(text.replace(",", "").replace("−", "-"))


def parse_value(value: str, context: str = "") -> ParsedValue:
    """Parse one figure string; an interval in `context` is used only when the value states none.

    >>> parse_value("1.93 [1.90,1.96]")
    ParsedValue(number=1.93, low=1.9, high=1.96, interval_kind='bracket', qualifier='', unit='')
    """
    match = _VALUE.match(value.strip())
    if not match:
        return ParsedValue()
    number = to_float(match["number"])
    low = high = None
    kind = ""
    if match["low"] is not None:
        low, high, kind = to_float(match["low"]), to_float(match["high"]), INTERVAL_BRACKET
    elif match["spread"] is not None:
        spread = to_float(match["spread"])
        low, high, kind = _tidy(number - spread), _tidy(number + spread), INTERVAL_PLUS_MINUS
    elif context and not match["qualifier"]:
        found = _CONTEXT_INTERVAL.search(context)
        if found:
            c_low, c_high = to_float(found["low"]), to_float(found["high"])
            if c_low <= number <= c_high:
                low, high, kind = c_low, c_high, INTERVAL_CONTEXT
    return ParsedValue(
        number=number,
        low=low,
        high=high,
        interval_kind=kind,
        qualifier=match["qualifier"] or "",
        unit=match["unit"] or "",
    )


def _tidy(number: float) -> float:
    """Round away float noise from a ± sum (0.7133 + 0.0294 -> 0.7427, not 0.74270000000001)."""
    if number == 0 or not math.isfinite(number):
        return number
    return round(number, 12 - int(math.floor(math.log10(abs(number)))))


def interval_label(context: str) -> str:
    """What a figure's bracketed interval is, read from its context: a bootstrap CI only where it says bootstrap.

    >>> interval_label("95% bootstrap CI [0.8979, 0.9492]"), interval_label("SD 0.0169; 95% interval [0.939, 0.977]")
    ('95% bootstrap CI', 'interval as recorded')
    """
    lowered = context.lower()
    if "bootstrap" in lowered:
        return "95% bootstrap CI" if "95%" in lowered else "bootstrap CI"
    if "ci" in lowered.split() or "ci [" in lowered:
        return "CI as recorded"
    return "interval as recorded"


def badge_text(display: str, status: str, status_raw: str) -> str:
    """A finding's badge: the outcome, and why when the record's own status word differs from it.

    The record writes VALIDATED for a measurement the reviewer checked, even when what it measured missed its
    target, so such a badge reads "Missed · measurement validated"; an OTHER outcome names the record's word.

    >>> badge_text("Missed", "MISSED", "VALIDATED (formal H1 miss) · SIGNED-OFF")
    'Missed · measurement validated'
    >>> badge_text("Other", "OTHER", "RECORDED AS A BOUNDARY (operator halt, ADR 0011) · single seed")
    'Other · recorded as a boundary'
    """
    head = status_raw.split("·")[0].split("(")[0].strip()
    if head.upper() == "VALIDATED" and status != "VALIDATED":
        return f"{display} · measurement validated"
    if status == "OTHER" and head:
        return f"{display} · {head.lower()}"
    return display
