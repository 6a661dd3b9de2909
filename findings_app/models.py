"""Models for findings_app."""
