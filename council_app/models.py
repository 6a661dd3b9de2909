"""Models for council_app."""
