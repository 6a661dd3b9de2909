"""Findings F1-F55: the programme's record as a searchable timeline."""
