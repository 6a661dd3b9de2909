"""The top layer: the URLconf, the WSGI and ASGI entry points, and the project-level views (health, the API
reference, the glossary, error pages). It imports the apps; nothing imports it (portal is the base they stand on)."""
