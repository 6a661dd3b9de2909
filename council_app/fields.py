"""Field names of the council models, shared by the admin, the API serializers and the fixture builder.

Plain tuples with no Django import: `scripts/build_council_fixture.py` reads them without setting Django up.
"""

# Player: the benchmark columns of the baseline ladder, then the whole leaderboard.json row as stored.
PLAYER_SCORES = ("mmlu_acc", "arc_challenge_acc", "hellaswag_acc", "gsm8k_flexible", "mixed_arena")
PLAYER_LADDER = ("size_b", "source", *PLAYER_SCORES, "config_sha", "git_commit", "machine")

# FairBaseline: one arm's recorded figures.
BASELINE_FIGURES = ("accuracy", "generations_per_request", "council_wins", "council_losses", "z")

# AnchoredSeed: the accuracies and margins copied under the record's own names.
ANCHORED_MARGINS = ("mechanism", "router", "fallback_router", "margin_vs_plain", "margin_vs_fallback")
