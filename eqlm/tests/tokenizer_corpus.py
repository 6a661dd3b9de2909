"""Texts that tokenizers must agree on: KJV-like verses, code, unicode and emoji, whitespace runs, BLiMP sentences."""

from __future__ import annotations

import json
from pathlib import Path

# The BLiMP paradigms whose pairs the programme's reference files score (programme-models/README.md).
BLIMP_PARADIGMS = (
    "adjunct_island",
    "anaphor_gender_agreement",
    "anaphor_number_agreement",
    "animate_subject_passive",
    "animate_subject_trans",
)

KJV = [
    "In the beginning God created the heaven and the earth.",
    "And the earth was without form, and void; and darkness was upon the face of the deep.",
    "And God said, Let there be light: and there was light.\n\n",
    "1:3 And God saw the light, that it was good: and God divided the light from the darkness.",
    "Thou shalt not kill.  Thou shalt not commit adultery.\n",
    "Blessed are the meek: for they shall inherit the earth. (Matthew 5:5)",
]
CODE = [
    "def f(x):\n    return x ** 2  # square\n",
    "for (let i = 0; i < n; i++) {\n\tconsole.log(`i=${i}`);\n}\n",
    "    if x != y and not z:\n        raise ValueError(f'{x!r}')\n\n\n",
    '{"key": [1, 2.5e-3, null], "nested": {"a": "b"}}',
    "SELECT * FROM users WHERE id = 42; -- comment\r\n",
]
UNICODE = [
    "",
    "naïve café — “quotes” ‘single’ … ½ ¾ 100°C",
    "emoji 👩🏽‍🚀 and flags 🇬🇧🇫🇷, ZWJ 👨‍👩‍👧‍👦, skin 👍🏿",
    "中文字符, 日本語のテキスト, 한국어, עברית, العربية, ελληνικά, русский",
    "combining: e\u0301 a\u0308\u0301, BOM \ufeff, NUL \x00, NEL \x85, nbsp \xa0, ideographic space \u3000.",
    "math 𝔘𝔫𝔦𝔠𝔬𝔡𝔢 ∀x∈ℝ: x² ≥ 0, max \U0010ffff",
    "don't can't I'LL we've they're she'd it's O'Neil's",
    "<|endoftext|>Text after the end-of-text token, and one more: <|endoftext|>",
]
WHITESPACE = [
    "  leading spaces",
    "trailing spaces   ",
    "a\n\n\nb",
    "tabs\t\tand\t spaces \t mixed",
    "\r\n\r\nwindows\r\nnewlines\r\n",
    "     ",
    "\n",
    "word \n word\n \n  \n",
    "x" + " " * 17 + "y",
    "line\u2028paragraph\u2029 narrow\u202fnbsp\u205f\u3000 ogham\u1680end \x0b\x0c\x1c\x1d\x1e\x1f",
]


def blimp_sentences(blimp_dir: Path, pairs: int = 50) -> list[str]:
    """The good and bad sentences of the first `pairs` pairs of each of BLIMP_PARADIGMS (none without the files)."""
    sentences = []
    if not all((blimp_dir / f"{paradigm}.jsonl").is_file() for paradigm in BLIMP_PARADIGMS):
        return sentences
    for paradigm in BLIMP_PARADIGMS:
        with open(blimp_dir / f"{paradigm}.jsonl", encoding="utf-8") as lines:
            for _, line in zip(range(pairs), lines, strict=False):
                pair = json.loads(line)
                sentences += [pair["sentence_good"], pair["sentence_bad"]]
    return sentences


def corpus() -> list[str]:
    return KJV + CODE + UNICODE + WHITESPACE
