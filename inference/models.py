"""Models for inference."""
