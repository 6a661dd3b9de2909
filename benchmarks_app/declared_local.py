"""The declared tables that measure this portal's own models (experiment 'local' and the portal's experiments),
beside the programme's record in declared.py."""

BLIMP = "blimp_accuracy"

ANYTIME, COUNCIL_MIXED, CONVERGENCE = [
    {
        "slug": "local-anytime",
        "title": "This portal's demo EqLM · BLiMP by depth (anytime curve)",
        "kind": "curve",
        "order": 55,
        "description": "BLiMP accuracy of the portal's own small EqLM evaluated at each iteration depth "
        "(experiment 'local', written by the demo model's evaluation). Beside the programme's budget sweep above.",
        "treatment_experiment": "local",
        "treatment_arm": "",
        "spec": {"x_key": "depth", "series_by": "run"},
        "findings": [],
        "published": [],
    },
    {
        "slug": "local-council-mixed",
        "title": "This portal's live council · bits/byte on held-out mixed text (KJV + code)",
        "kind": "council",
        "order": 56,
        "description": "The portal's own EqLMs decoding together (eqlm-council) on KJV and Python passages, held "
        "out: each member alone, logit averaging, the influence game (defaults, beta x tau), the fixed-share mixture, "
        "the council with memory (both pools x beta x share x learning rate, chosen on a training-side tuning mix; "
        "judged on 128- and 512-byte mixes and each domain alone), and a per-passage routing oracle (a reference, "
        "not a decoder). Written by bench/council.py (experiment 'local-council'); lower is better.",
        "treatment_experiment": "local-council",
        "metric": "bits_per_byte",
        "findings": [],
        "published": [],
    },
    {
        "slug": "local-convergence",
        "title": "This portal's own models · quality and convergence by depth (held-out bits/byte, residual)",
        "kind": "convergence",
        "order": 57,
        "description": "Every registered model the quality-and-convergence evaluation has measured (experiment "
        "'local', arm = the model's id): held-out bits/byte, the median and 95th-percentile relative residual "
        "||f(z) - z|| / ||z|| and the share of positions below 0.01, by depth 1-128 from a cold start (past the "
        "models' serving cap of 64, on purpose), for Picard and Anderson; adaptive halting at several tolerances "
        "(cap 64) against fixed depth at the same mean depth; and Picard from N(0, 1) and warm starts, with the AA "
        "score (the mean cosine between their final states and the zero start's, Anil et al. 2022) and the greedy "
        "agreement at the deepest depth. The same stored rows feed the depth dial's convergence charts. The notes "
        "judge each model by the depth-curve experiment's criterion (its targets: from the best depth to 128 "
        "never more than 0.01 bits/byte above the best; depth 12 within 0.03 of the best; the best at most 2.18; "
        "depth 4 at most 2.35; AA cosine and greedy agreement with N(0, 1) at least 0.99; warm greedy agreement at "
        "least 99%), on the model's one evaluation; the bundled models' rows are on 24 held-out windows of 256 bytes "
        "(the experiment reads 48).",
        "treatment_experiment": "local",
        "metric": "heldout_bits_per_byte",
        "findings": [],
        "published": [],
    },
]

HEAD_TO_HEAD = {
    "slug": "local-head-to-head",
    "title": "Head-to-head on the portal's models · EqLM vs a 12-layer explicit transformer",
    "kind": "head_to_head",
    "order": 65,
    "description": "The programme's four head-to-head claims (F24, F44, F45, exp31), each beside the same test on "
    "the portal's own byte-level KJV models: the pre-registered experiment head-to-head-demo trains a standard "
    "12-layer transformer (d = 20), the d = 64 EqLM at matched parameters and the EqLM at the baseline's width "
    "(d = 20) from scratch, seeds 42/43/44, and evaluates them on the whole held-out slice and on BLiMP. The "
    "programme's column is the test run on the programme's stored rows, with its published figures checked "
    "against them; the portal's column is the experiment's own criterion on its rows.",
    "treatment_experiment": "head-to-head-demo",
    "findings": ["F24", "F44", "F45"],
    "spec": {
        "experiment": "head-to-head-demo",
        "settings": [
            {
                "finding": "F24",
                "part": 0,
                "table": "f24-anytime",
                "published": ["mean ratio", "CI lower bound", "CI upper bound"],
                "programme": [
                    {
                        "op": "ratio",
                        "of": {"experiment": "exp13", "arm": "B1", "metric": BLIMP, "where": {"budget": 12}},
                        "over": {"experiment": "exp10_5090", "arm": "A1", "metric": BLIMP, "where": {}},
                        "stat": "ci_low",
                        "cmp": ">=",
                        "value": 0.95,
                    }
                ],
            },
            {
                "finding": "F44",
                "part": 1,
                "seeds": [43, 44],
                "table": "f44-compute-audit",
                "published": ["ratio at equal FLOPs", "mean depth of that point", "iterations at equal FLOPs"],
                "programme": [
                    {
                        "op": "ratio",
                        "of": {
                            "experiment": "exp31",
                            "arm": "eqlm_adaptive",
                            "metric": BLIMP,
                            "where": {"tolerance_multiple": 8},
                        },
                        "over": {"experiment": "exp31", "arm": "explicit_fixed", "metric": BLIMP, "where": {}},
                        "stat": "ci_high",
                        "cmp": "<",
                        "value": 1.0,
                    },
                    None,
                ],
            },
            {
                "finding": "F45",
                "part": 2,
                "table": "f45-equal-compute",
                "published": ["mean ratio", "95% interval"],
                "programme": [
                    {
                        "op": "ratio",
                        "of": {"experiment": "exp32", "arm": "C1", "metric": BLIMP, "where": {}},
                        "over": {"experiment": "exp10_5090", "arm": "A1", "metric": BLIMP, "where": {}},
                        "stat": "ci_low",
                        "cmp": ">=",
                        "value": 0.95,
                    }
                ],
            },
            {
                "finding": "exp31",
                "part": 3,
                "table": "exp31-adaptive-depth",
                "published": [
                    "adaptive (seeds 43/44)",
                    "uniform (seeds 43/44)",
                    "adaptive mean depth (seeds 43/44)",
                ],
                "programme": [
                    {
                        "op": "difference",
                        "abs": True,
                        "of": {"experiment": "exp31", "arm": "eqlm_adaptive_matched", "metric": BLIMP, "where": {}},
                        "minus": {"experiment": "exp31", "arm": "eqlm_uniform", "metric": BLIMP, "where": {}},
                        "stat": "max",
                        "cmp": "<=",
                        "value": 0.01,
                    },
                    None,
                ],
            },
        ],
    },
    "published": [],
    "notes": "F44's programme figure is the exp31 tolerance sweep's shallowest point (about 2 iterations), on the "
    "two seeds the published 0.72 uses; the portal's reads 2 iterations, the whole iteration nearest its equal "
    "FLOPs (1.79), which gives EqLM 1.10x the baseline's compute. The programme never measured bits/byte for "
    "these comparisons, so those rows have no programme figure. exp31's published figures compare two-seed "
    "means; the test asks it of the per-seed differences.",
}
