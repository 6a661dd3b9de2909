"""Models for lab_app."""
