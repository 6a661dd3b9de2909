"""One registered model's page, /models/<slug>/: its uploaded card (rendered safely), measured facts, the protocol
result beside the published figure, its depth curve, and what the figures do and do not claim."""

from __future__ import annotations

import markdown
import nh3
from django.shortcuts import get_object_or_404, render

from .facts import folder_of, model_facts, precision_facts
from .models import EvaluationRun, RegisteredModel

CARD_TAGS = {
    "a", "abbr", "b", "blockquote", "br", "code", "em", "h1", "h2", "h3", "h4", "h5", "h6", "hr", "i", "li", "ol",
    "p", "pre", "strong", "table", "tbody", "td", "th", "thead", "tr", "ul",
}  # fmt: skip


def render_card(text: str) -> str:
    """Markdown to HTML, then sanitised with nh3: no script, style, event handler or javascript: URL survives."""
    html = markdown.markdown(text, extensions=["tables", "fenced_code", "sane_lists"])
    return nh3.clean(html, tags=CARD_TAGS, url_schemes={"http", "https", "mailto"}, link_rel="noopener nofollow")


def split_front_matter(text: str) -> tuple[dict, str]:
    """A Hugging Face card's YAML front matter (between `---` lines at the top) and the Markdown after it."""
    import yaml

    if not text.startswith("---"):
        return {}, text
    parts = text.split("\n---", 1)
    if len(parts) != 2:
        return {}, text
    try:
        meta = yaml.safe_load(parts[0][3:]) or {}
    except yaml.YAMLError:
        return {}, text
    return (meta if isinstance(meta, dict) else {}), parts[1].split("\n", 1)[-1]


def uploaded_card(row: RegisteredModel) -> tuple[dict, str]:
    """(front matter, sanitised HTML) of the card uploaded with the checkpoint; ({}, "") when there is none."""
    if not row.checkpoint:
        return {}, ""
    try:
        meta, body = split_front_matter((folder_of(row) / "card.md").read_text(encoding="utf-8"))
    except OSError:
        return {}, ""
    return meta, render_card(body)


def protocol_runs(row: RegisteredModel) -> list[EvaluationRun]:
    runs = row.evaluations.filter(kind=EvaluationRun.Kind.BLIMP, options__has_key="protocol", status="done")
    return list(runs.order_by("-finished_at")[:5])


def claims(facts: dict, protocol: dict | None) -> tuple[list[str], list[str]]:
    """What this page's figures show, and what they do not."""
    shows = [f"The file loads as a {facts['model_class']} with {facts['parameters']:,} parameters."
             if facts.get("parameters") else f"The file loads as a {facts['model_class']}."]  # fmt: skip
    not_shown = []
    if protocol:
        shows.append(
            f"Re-measured here, the {protocol['protocol']} BLiMP protocol counts {protocol['num_correct']} of "
            f"{protocol['num_total']} pairs ({protocol['device']}, {protocol['dtype']})."
        )
        not_shown.append(
            "A BLiMP count on 1,000 pairs has a binomial standard error of about 15 pairs: a difference of a few "
            "pairs from a published figure is within noise."
        )
    if facts.get("format") == "programme" and facts.get("model_class") == "EqLM":
        not_shown.append(
            "At the file's own settings the Anderson solve is joint over the sentence and not bit-reproducible: "
            "thread count moves single sentence scores by up to 0.04 nats. Picard at a fixed depth reproduces exactly."
        )
    if not facts.get("declared"):
        not_shown.append("The uploader did not declare which published run this file is, so no figure is compared.")
    return shows, not_shown


def model_detail(request, slug: str):
    """/models/<slug>/: a published card, a bundled model, or an uploaded or imported checkpoint."""
    from .bundled import bundled_models
    from .model_cards import registered_sections
    from .model_pages import bundled_page, published_cards, published_page

    card = next((c for c in published_cards().get("models", []) if c["slug"] == slug), None)
    if card is not None:
        return published_page(request, card)
    bundled = next((m for m in bundled_models() if m.id == slug), None)
    if bundled is not None:
        return bundled_page(request, bundled)
    row = get_object_or_404(RegisteredModel, slug=slug)
    facts = model_facts(row)
    metrics = row.metrics or {}
    protocol = metrics.get("blimp_programme") or metrics.get("blimp_full")
    meta, card_html = uploaded_card(row)
    shows, not_shown = claims(facts, protocol)
    context = {
        "row": row,
        "facts": facts,
        "card_html": card_html,
        "protocol": protocol,
        "protocol_runs": protocol_runs(row),
        "depth_curve": metrics.get("depth_curve") or [],
        "shows": shows,
        "not_shown": not_shown,
        "latest_import": row.imports.order_by("-created_at").first(),
        "hf": registered_sections(row, meta),
        "precision": precision_facts(row.onnx_dir),
        "section": "models",
    }
    return render(request, "models_app/model_detail.html", context)
