"""The glossary: each term a reader meets on the portal's pages, its definition, and the text that names it."""

from __future__ import annotations

import html
import re
from dataclasses import dataclass


@dataclass(frozen=True)
class Term:
    slug: str  # the anchor on /glossary/
    term: str  # the heading
    pattern: str  # a regular expression matching the term's uses in running text (whole words)
    definition: str  # plain text, one paragraph
    case_sensitive: bool = True

    @property
    def regex(self) -> re.Pattern:
        return re.compile(rf"(?<![\w/#-])(?:{self.pattern})(?![\w-])", 0 if self.case_sensitive else re.IGNORECASE)

    @property
    def definition_html(self) -> str:
        """The definition, escaped, with `backticked` names as code."""
        escaped = html.escape(self.definition, quote=False)
        return re.sub(r"`([^`]+)`", r"<code>\1</code>", escaped)

    @property
    def short(self) -> str:
        """The definition's first sentence, for a link's title."""
        return self.definition.replace("`", "").split(". ")[0].rstrip(".") + "."


TERMS: tuple[Term, ...] = (
    Term(
        "eqlm",
        "EqLM",
        r"EqLM",
        "An equilibrium language model: one weight-tied transformer block applied again and again to its own "
        "output until the representation stops moving, instead of a stack of distinct layers. Its depth is a "
        "number of iterations chosen at run time, not a count of layers fixed by the architecture.",
    ),
    Term(
        "fixed-point",
        "Fixed point",
        r"fixed[ -]points?",
        "A state z with f(z) = z: applying the block once more leaves it unchanged. An EqLM's answer is read "
        "from (an approximation of) the fixed point of its block, given the input.",
        case_sensitive=False,
    ),
    Term(
        "block-iteration",
        "Block iteration, depth",
        r"block iterations?",
        "One application of the tied block. A model's depth is the number of block iterations it runs for a "
        "token; `mean_iterations` in the API reports the mean over the generated tokens.",
        case_sensitive=False,
    ),
    Term(
        "picard",
        "Picard iteration",
        r"Picard",
        "The plain way to reach a fixed point: apply the block to its last output, z ← f(z), until the change "
        "is below a tolerance or the iteration budget is spent.",
    ),
    Term(
        "anderson",
        "Anderson acceleration",
        r"Anderson",
        "A fixed-point solver that mixes the last few iterates, with weights from a small least-squares fit of "
        "their residuals, and so usually needs fewer block iterations than Picard iteration to reach the same "
        "point.",
    ),
    Term(
        "anytime",
        "Anytime",
        r"anytime",
        "A model is anytime when a solve stopped early still gives usable output: the programme's anytime arm "
        "(B1) trained with a loss on the iterates at depths 4, 8 and 12, not only on the last one. The portal's "
        "eqlm-demo-anytime is named after its recipe's first stage, which adds a loss at depths 4 and 8 to an "
        "equilibrium solve: it is the portal's own model, not the programme's B1 arm.",
        case_sensitive=False,
    ),
    Term(
        "bits-per-byte",
        "Bits/byte",
        r"bits/byte|bits per byte",
        "The model's cross-entropy on held-out text in bits, divided by the text's length in UTF-8 bytes: lower "
        "is better. The portal's models read bytes, so bits/byte compares them with any other model whatever "
        "its tokenizer.",
        case_sensitive=False,
    ),
    Term(
        "blimp",
        "BLiMP",
        r"BLiMP",
        "The Benchmark of Linguistic Minimal Pairs: pairs of English sentences that differ in one grammatical "
        "point. A model scores a pair right when it finds the grammatical sentence more likely; 0.5 is chance.",
    ),
    Term(
        "arms",
        "A1, A2, A3, B1, C1 (arms)",
        r"A1|A2|A3|B1|B2|B3|B4|C1",
        "The programme's names for the arms of its training runs. A1 is the explicit baseline (distinct layers), "
        "A2 and A3 the early EqLM arms (A3: the post-LN EqLM, the control of later comparisons); B1 is the "
        "anytime arm of exp13, trained with losses on iterates 4, 8 and 12 (B2-B4 are its screen-level "
        "variants); C1 is exp32's tied block at the explicit model's width, d = 768, iterated twelve times.",
    ),
    Term(
        "harness",
        "Harness A, harness B",
        r"[Hh]arness [AB]",
        "The programme's two training and evaluation setups, as their result files show. Harness A writes a "
        "results.json with its seed and recipe in the config.yaml beside it (exp10: arms A1 and A3); harness B "
        "writes one record per seed with an entry per arm (exp13 and exp32: arms B1 and C1).",
    ),
    Term(
        "tarka",
        "Tarka",
        r"Tarka",
        "The programme's adversarial reviewer, who checked findings before sign-off. A finding's status says "
        "whether Tarka gave a verdict, resolved a dispute (RESOLVED) or had not yet ruled when the record "
        "closed (PENDING): a pending finding is the programme's own claim, not yet reviewed.",
    ),
    Term(
        "spec",
        "SPEC and ADR numbers",
        r"SPEC \d{4}|ADR \d{4}",
        "A SPEC is one of the programme's pre-registered specifications of an experiment (what is run, what "
        "counts as success), numbered SPEC 0007, SPEC 0018 and so on; an ADR is a recorded design decision. "
        "Findings name the SPECs and ADRs they answer to.",
    ),
    Term(
        "h-numbers",
        "H-numbers",
        r"H\d{1,2}",
        "H1, H2, … H10 are the programme's numbered hypotheses. Each finding lists the hypotheses it tests, and "
        "the findings timeline filters by them.",
    ),
    Term(
        "entry-header",
        "Entry header, cycle",
        r"entry header",
        "The programme kept its record as dated entries written in numbered work cycles. A finding dated by its "
        "entry header takes its date from the heading of the entry that records it (written in the cycle "
        "named), because no reviewer's sign-off date exists for it.",
    ),
    Term(
        "sign-off",
        "Sign-off",
        r"sign-off|signed[ -]off",
        "The programme operator's acceptance of a finding after review. Findings recorded late in the programme "
        "often carry no sign-off, and their dates come from their entry headers instead.",
        case_sensitive=False,
    ),
    Term(
        "aa-cosine",
        "AA cosine (path independence)",
        r"AA cosine",
        "The asymptotic-alignment score of Anil et al. (2022): the mean cosine similarity between the final "
        "states the solve reaches from two different starts (here the zero start against N(0, 1) noise or a warm "
        "start). Close to 1 means the fixed point does not depend on where the solve began.",
    ),
    Term(
        "path-independence",
        "Path independence",
        r"path independence|path-independent",
        "A solve is path-independent when it reaches the same point from any start; measured by the AA cosine "
        "and by the share of positions whose most likely next byte agrees between starts.",
        case_sensitive=False,
    ),
    Term(
        "warm-start",
        "Warm start",
        r"warm start",
        "Starting a new position's solve at the previous token's state instead of at zero, which saves block "
        "iterations when consecutive states are close.",
        case_sensitive=False,
    ),
    Term(
        "sandwich",
        "Sandwich block",
        r"sandwich",
        "A variant of the tied block in which the attention and MLP branches are each normalised before and "
        "after they run (the original block normalises only the sum). It keeps the iteration stable at depth.",
        case_sensitive=False,
    ),
    Term(
        "halting",
        "Halting rule",
        r"halting",
        "The rule that stops a token's solve early: the residual rule stops when the state moves less than a "
        "tolerance, the KL rule when the next-byte distribution changes less than one.",
        case_sensitive=False,
    ),
    Term(
        "council",
        "Council",
        r"council",
        "Several language models combined into one answer by solving a game between them: each member's "
        "weight is an equilibrium of that game, recomputed as the text grows. The programme's council findings "
        "compare it with plain averaging and with routing each question to one member.",
        case_sensitive=False,
    ),
    Term(
        "exchange-rate",
        "Exchange rate",
        r"exchange rate",
        "What a tied model gives up for what it saves: the share of the explicit model's quality it keeps at "
        "equal compute per token, against the share of parameters it needs (F44, F45).",
        case_sensitive=False,
    ),
    Term(
        "explicit",
        "Explicit model",
        r"explicit (?:model|baseline|transformer)s?",
        "A conventional transformer with distinct layers, each with its own weights: the baseline an EqLM is "
        "compared with.",
        case_sensitive=False,
    ),
)

BY_SLUG = {term.slug: term for term in TERMS}

# Text inside these elements is never linked: links, code, headings and table headers, the glossary's own terms,
# forms (their controls and the notes the page rewrites as they change) and what is not prose (scripts, styles,
# templates, drawings).
SKIP_ELEMENTS = frozenset(
    {"a", "code", "pre", "kbd", "samp", "h1", "h2", "h3", "h4", "h5", "h6", "th", "script", "style", "template", "dfn",
     "summary", "form", "button", "label", "select", "option", "textarea", "svg", "math", "noscript"}
)  # fmt: skip
# A comment, or a tag whose quoted attribute values may hold ">".
_TAG = re.compile(r"""<!--.*?-->|<(/?)([a-zA-Z][a-zA-Z0-9-]*)(?:"[^"]*"|'[^']*'|[^'">])*>""", re.S)
# An element marked data-verbatim quotes the record exactly as recorded: its text is never linked either.
_VERBATIM = re.compile(r"\sdata-verbatim(?:[\s=>/])")
_VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}
# Elements whose content is raw text, never markup: skipped whole, to their closing tag.
_RAW_TEXT = {"script", "style", "textarea"}
# Any term at all: most runs of text between tags (numbers, labels) name none, and this one search says so.
_ANY_TERM = re.compile("|".join(f"(?{'' if t.case_sensitive else 'i'}:{t.regex.pattern})" for t in TERMS))


def link_terms(html: str, seen: set[str], url: str = "/glossary/") -> str:
    """`html` with the first use of each glossary term not yet in `seen` linked to its definition.

    `html` must be escaped HTML (markup is kept; text inside SKIP_ELEMENTS, comments and attributes is left
    alone). `seen` collects the slugs linked, so calls that share it link each term once per page."""
    out: list[str] = []
    skip_depth = 0
    verbatim: list[str] = []  # the open elements from one marked data-verbatim inward
    pos = 0
    for match in _TAG.finditer(html):
        if match.start() < pos:  # inside a raw-text element already copied whole
            continue
        text = html[pos : match.start()]
        out.append(text if skip_depth or verbatim else _link_text(text, seen, url))
        tag, name, end = match.group(0), (match.group(2) or "").lower(), match.end()
        closing = match.group(1) == "/"
        if name in _RAW_TEXT and not closing:
            close = re.compile(rf"</{name}\s*>", re.IGNORECASE).search(html, end)
            end = close.end() if close else len(html)
            tag = html[match.start() : end]
        elif name in SKIP_ELEMENTS and not tag.endswith("/>"):
            skip_depth = max(0, skip_depth - 1) if closing else skip_depth + 1
        if name and name not in _VOID and not tag.endswith("/>"):
            _track_verbatim(verbatim, name, closing, tag)
        out.append(tag)
        pos = end
    out.append(html[pos:] if skip_depth or verbatim else _link_text(html[pos:], seen, url))
    return "".join(out)


def _track_verbatim(open_names: list[str], name: str, closing: bool, tag: str) -> None:
    """Keep `open_names`, the elements open inside one marked `data-verbatim` (a quotation of the record, shown
    exactly as recorded), up to date with one tag."""
    if closing:
        if name in open_names:
            while open_names and open_names.pop() != name:
                pass
    elif open_names or _VERBATIM.search(tag):
        open_names.append(name)


def _link_text(text: str, seen: set[str], url: str) -> str:
    if len(seen) == len(TERMS) or not text.strip() or not _ANY_TERM.search(text):
        return text
    hits: list[tuple[int, int, Term]] = []
    for term in TERMS:
        if term.slug in seen:
            continue
        found = term.regex.search(text)
        if found and not any(found.start() < end and start < found.end() for start, end, _ in hits):
            hits.append((found.start(), found.end(), term))
    for start, end, term in sorted(hits, key=lambda hit: hit[0], reverse=True):
        seen.add(term.slug)
        title = term.short.replace("&", "&amp;").replace('"', "&quot;").replace("<", "&lt;")
        link = f'<a class="glossary-term" href="{url}#{term.slug}" title="{title}">{text[start:end]}</a>'
        text = text[:start] + link + text[end:]
    return text


_MAIN = re.compile(r'(<main\b[^>]*\bid="main"[^>]*>)(.*?)(</main>)', re.S)


def link_main(page: str, url: str = "/glossary/") -> str:
    """A whole page with the first use of each glossary term in its main content linked (header, navigation and
    footer are the frame, not the page's prose)."""
    found = _MAIN.search(page)
    if found is None:
        return page
    linked = link_terms(found.group(2), set(), url)
    return page[: found.start(2)] + linked + page[found.end(2) :]


_ENTRY_HEADER = re.compile(r"^entry header \(cycle (\d+)\)$")


def explain_date_basis(basis: str) -> str:
    """A finding's `date_basis` as a reader's phrase: "entry header (cycle 30)" says where the date comes from."""
    found = _ENTRY_HEADER.match(basis.strip())
    if found:
        return f"dated by its entry header: the record's entry, written in work cycle {found.group(1)}; no sign-off"
    if basis.strip() == "entry header (resolved)":
        return "dated by its entry header: the date the record marks it resolved"
    return basis


def explain_status(status_raw: str) -> str:
    """What a recorded status's reviewer tag means, or "" when it carries none."""
    if "Tarka PENDING" in status_raw:
        return "Tarka PENDING: the reviewer had not ruled on this finding when the record closed."
    if "SIGN-OFF PENDING" in status_raw:
        return "SIGN-OFF PENDING: reviewed, but not yet accepted by the operator when the record closed."
    if "Tarka RESOLVED" in status_raw:
        return "Tarka RESOLVED: the reviewer's objection was settled before sign-off."
    return ""
