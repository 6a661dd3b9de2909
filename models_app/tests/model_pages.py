"""The models' pages as a reader reaches them: /models/ (the listing) and every page it links, read as one text."""

import re


def every_model_page(client) -> str:
    """The listing's HTML followed by each linked /models/<id>/ page's, in the listing's order."""
    listing = client.get("/models/").content.decode()
    slugs = dict.fromkeys(re.findall(r'href="/models/([a-z0-9-]+)/"', listing))
    return listing + "".join(client.get(f"/models/{slug}/").content.decode() for slug in slugs)
