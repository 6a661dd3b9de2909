"""The declared comparisons seeded into the portal, with the programme's published figures for each.

Published figures are copied from the findings record (../shared/findings/facts.json) and the
anchor-results README; `known_problem` carries the README's explanation where a published figure
does not follow from the stored rows.
"""

from .declared_local import ANYTIME, CONVERGENCE, COUNCIL_MIXED, HEAD_TO_HEAD

BUDGET_NOTE = (
    "The exp31 'budget 4/6/8' row of the programme's tables mixes tolerance-sweep points from different seeds; "
    "the only true fixed-budget rows are these, from exp13_seed*/budget_sweep.json."
)

F45_INTERVAL_NOTE = (
    "The record does not say how this interval was made; mean ± 1.96 · SD / √3 over the three seeds' ratios (a "
    "normal approximation, not a bootstrap CI) gives exactly these bounds, so that is what is recomputed. The "
    "bootstrap over three seeds would only be their range, shown in the ratio row."
)

COMPARISONS = [
    {
        "slug": "f18-h1-three-seed",
        "title": "F18 · Tied EqLM vs explicit at ~11M parameters (three seeds)",
        "kind": "ratio",
        "order": 10,
        "description": "Post-LN EqLM (A3) against the explicit transformer (A1), exp05_full_v4, 20k steps, "
        "seeds 42/43/44.",
        "treatment_experiment": "exp05_full_v4",
        "treatment_arm": "A3",
        "baseline_experiment": "exp05_full_v4",
        "baseline_arm": "A1",
        "findings": ["F17", "F18"],
        "published": [
            {"row": "treatment", "label": "A3 mean", "stat": "mean", "value": "0.6637"},
            {"row": "treatment", "label": "A3 SD", "stat": "sd", "value": "0.0365"},
            {"row": "baseline", "label": "A1 mean", "side": "baseline", "stat": "mean", "value": "0.7133"},
            {"row": "baseline", "label": "A1 SD", "side": "baseline", "stat": "sd", "value": "0.0294"},
            {"row": "ratio", "label": "mean ratio", "stat": "ratio_mean", "value": "0.9303"},
            {"row": "ratio", "label": "95% CI", "stat": "ci", "value": "[0.8979, 0.9492]"},
        ],
        "notes": "Seeds 43/44 of exp05 used a different A2 recipe (aux λ 1e-3) from seed 42 (0.01); "
        "A2 is not in this table.",
    },
    {
        "slug": "f20-h1-121m",
        "title": "F20 · Tied EqLM vs explicit at ~121M parameters",
        "kind": "ratio",
        "order": 20,
        "description": "exp10_5090: A3 EqLM-v3 (120,696,016 parameters) against A1 explicit (123,760,908), 10k steps.",
        "treatment_experiment": "exp10_5090",
        "treatment_arm": "A3",
        "baseline_experiment": "exp10_5090",
        "baseline_arm": "A1",
        "findings": ["F20"],
        "published": [
            {"row": "treatment", "label": "A3 mean", "stat": "mean", "value": "0.5377"},
            {"row": "baseline", "label": "A1 mean", "side": "baseline", "stat": "mean", "value": "0.6833"},
            {"row": "ratio", "label": "mean ratio", "stat": "ratio_mean", "value": "0.7868"},
            {"row": "ratio", "label": "95% CI", "stat": "ci", "value": "[0.785, 0.788]"},
            {"row": "ratio", "label": "seed 44 ratio", "stat": "ratio_per_seed", "seed": 44, "value": "0.7850"},
            {
                "row": "baseline",
                "label": "A1 final loss range",
                "side": "baseline",
                "stat": "range",
                "metric": "final_loss",
                "value": "2.73–3.07",
            },
            {
                "row": "treatment",
                "label": "EqLM final loss range",
                "stat": "range",
                "metric": "final_loss",
                "value": "3.29–4.00",
                "known_problem": "The published parameter-matched table takes its EqLM ('A3') loss and memory from "
                "exp10's A2 arm, so this range need not follow from A3's rows.",
            },
            {
                "row": "treatment",
                "label": "EqLM peak memory (GB)",
                "stat": "mean",
                "metric": "peak_memory_mb",
                "scale": 0.001,
                "seeds": [42],
                "value": "6.29",
                "known_problem": "6.29 GB is exp10 seed 42's A2 arm (6286 MB), not A3: the published "
                "parameter-matched table joins rows from different arms.",
            },
            {
                "row": "treatment",
                "label": "A3 wall clock (min)",
                "stat": "mean",
                "metric": "train_time_sec",
                "scale": 1 / 60,
                "seeds": [42],
                "value": "92",
            },
            {
                "row": "baseline",
                "label": "A1 wall clock (min)",
                "side": "baseline",
                "stat": "mean",
                "metric": "train_time_sec",
                "scale": 1 / 60,
                "seeds": [42],
                "value": "11",
            },
        ],  # fmt: skip
        "notes": "The programme's published 'parameter-matched' table joins rows from different experiments and "
        "scales: BLiMP from the ~11M exp05 runs, parameters, losses, wall clock and memory from the ~121M exp10 "
        "runs, and its 'A3' loss and memory from exp10's A2 arm. This table pairs like with like.",
    },
    {
        "slug": "f24-anytime",
        "title": "F24 · Anytime-unrolled tied block (B1) vs explicit",
        "kind": "ratio",
        "order": 30,
        "description": "exp13 arm B1 (anytime unrolled training) against exp10_5090 A1, paired by seed. "
        "exp13's own `control` block is stale for seeds 43/44 and is never used.",
        "treatment_experiment": "exp13",
        "treatment_arm": "B1",
        "baseline_experiment": "exp10_5090",
        "baseline_arm": "A1",
        "findings": ["F24", "F44"],
        "published": [
            {
                "row": "treatment",
                "label": "B1 mean",
                "stat": "mean",
                "value": "0.6805",
                "known_problem": "Noted with the programme's result files: "
                "B1's published 0.6805 ± 0.0202 does not follow from the stored rows.",
            },
            {
                "row": "treatment",
                "label": "B1 SD",
                "stat": "sd",
                "value": "0.0202",
                "known_problem": "Noted with the programme's result files: "
                "B1's published 0.6805 ± 0.0202 does not follow from the stored rows.",
            },
            {
                "row": "treatment",
                "label": "B1 final loss range",
                "stat": "range",
                "metric": "final_loss",
                "value": "2.95–3.15",
                "known_problem": "Noted with the programme's result files: "
                "the published loss 2.95–3.15 does not follow from the stored rows.",
            },
            {"row": "ratio", "label": "mean ratio", "stat": "ratio_mean", "value": "0.991"},
            {
                "row": "ratio",
                "label": "CI lower bound",
                "stat": "ci_low",
                "value": "0.971",
                "known_problem": "Noted with the programme's result files: "
                "the published CI lower bound 0.971 is 0.970 from the rows (seed 44's ratio).",
            },
            {"row": "ratio", "label": "CI upper bound", "stat": "ci_high", "value": "1.033"},
        ],  # fmt: skip
    },
    {
        "slug": "f45-equal-compute",
        "title": "F45 · Same-width tied block (C1) at equal compute vs explicit",
        "kind": "ratio",
        "order": 40,
        "description": "exp32 arm C1 (tied block at the baseline's width, 45,785,857 parameters) against "
        "exp10_5090 A1 (123,760,908), paired by seed.",
        "treatment_experiment": "exp32",
        "treatment_arm": "C1",
        "baseline_experiment": "exp10_5090",
        "baseline_arm": "A1",
        "findings": ["F45"],
        "published": [
            {"row": "ratio", "label": "mean ratio", "stat": "ratio_mean", "value": "0.9582"},
            {"row": "ratio", "label": "ratio SD", "stat": "ratio_sd", "value": "0.0169"},
            {"row": "ratio", "label": "weakest seed ratio", "stat": "ratio_min", "value": "0.9394"},
            {
                "row": "ratio",
                "label": "95% interval",
                "stat": "ci_normal",
                "value": "[0.939, 0.977]",
                "note": F45_INTERVAL_NOTE,
            },
            {
                "row": "ratio",
                "label": "earlier two-seed ratio (seeds 42/43)",
                "stat": "ratio_mean",
                "seeds": [42, 43],
                "value": "0.9676",
            },
        ],  # fmt: skip
        "notes": "The record states F45's seed count both as two and as three; the stored rows hold three seeds.",
    },
    {
        "slug": "f24-budget-sweep",
        "title": "F24 · B1 BLiMP at fixed solver budgets (anytime curve)",
        "kind": "curve",
        "order": 50,
        "description": "exp13 B1 evaluated with the solver stopped after 4, 8 and 12 iterations.",
        "treatment_experiment": "exp13",
        "treatment_arm": "B1",
        "baseline_experiment": "exp10_5090",
        "baseline_arm": "A1",
        "spec": {"x_key": "budget"},
        "findings": ["F24"],
        "published": [
            {"x": b, "seed": s, "stat": "per_seed", "label": f"s{s} at budget {b}", "value": v}
            for s, vals in (
                (42, ("0.62", "0.64", "0.66")),
                (43, ("0.60", "0.67", "0.70")),
                (44, ("0.59", "0.66", "0.67")),
            )
            for b, v in zip((4, 8, 12), vals, strict=True)
        ],
        "notes": BUDGET_NOTE,
    },
    ANYTIME,
    COUNCIL_MIXED,
    CONVERGENCE,
    {
        "slug": "exp31-adaptive-depth",
        "title": "exp31 · Adaptive vs uniform depth vs explicit",
        "kind": "adaptive",
        "order": 60,
        "description": "The B1 checkpoint stopped by a residual tolerance (adaptive) or after twelve iterations "
        "(uniform), against the explicit model; tolerance sweep at 2×, 4× and 8× the matched tolerance.",
        "treatment_experiment": "exp31",
        "findings": ["F44"],
        "published": [
            {"row": "explicit_fixed", "label": "explicit (seeds 43/44)", "seeds": [43, 44], "value": "0.684"},
            {"row": "eqlm_adaptive_matched", "label": "adaptive (seeds 43/44)", "seeds": [43, 44], "value": "0.681"},
            {
                "row": "eqlm_adaptive_matched",
                "label": "adaptive mean depth (seeds 43/44)",
                "seeds": [43, 44],
                "metric": "mean_depth",
                "value": "11.3",
            },
            {"row": "eqlm_uniform", "label": "uniform (seeds 43/44)", "seeds": [43, 44], "value": "0.684"},
            {
                "row": "eqlm_adaptive_matched",
                "label": "adaptive / explicit (seeds 43/44)",
                "seeds": [43, 44],
                "stat": "ratio_mean",
                "value": "0.9965",
            },
            {
                "row": "eqlm_uniform",
                "label": "uniform / explicit (seeds 43/44)",
                "seeds": [43, 44],
                "stat": "ratio_mean",
                "value": "1.0011",
            },
        ],  # fmt: skip
        "notes": "The published exp31 figures (explicit 0.684 vs adaptive 0.681 at mean depth 11.3) are two-seed "
        "values (seeds 43/44); the table above uses every stored seed.",
    },
    HEAD_TO_HEAD,
    {
        "slug": "f44-compute-audit",
        "title": "F44 · Compute audit: per-iteration cost and iterations at equal FLOPs",
        "kind": "audit",
        "order": 70,
        "description": "Parameter and compute composition of the tied block against the explicit model, and the "
        "BLiMP ratio at the shallow end of the exp31 tolerance sweep.",
        "treatment_experiment": "exp31_audit",
        "spec": {"depth_experiment": "exp31", "explicit_layers": 12, "sweep_multiples": [8, 4]},
        "findings": ["F44", "F24"],
        "published": [
            {
                "row": "ratio_per_step",
                "label": "compute ratio per iteration",
                "stat": "ratio_per_step",
                "value": "4.92",
            },
            {
                "row": "iterations_at_equal_flops",
                "label": "iterations at equal FLOPs",
                "stat": "iterations_at_equal_flops",
                "value": "2.44",
            },
            {
                "row": "sweep_x8_4344",
                "label": "ratio at equal FLOPs",
                "stat": "sweep_ratio",
                "value": "0.72",
                "known_problem": "Noted with the programme's result files: "
                "F44's 0.72 is a two-seed value at about 2.05 iterations, not at 2.44.",
            },
            {
                "row": "sweep_x8_4344",
                "label": "mean depth of that point",
                "stat": "sweep_depth",
                "value": "2.44",
                "known_problem": "Noted with the programme's result files: "
                "the 0.72 point sits at about 2.05 iterations, not 2.44.",
            },
            {
                "row": "sweep_x8_4344",
                "label": "seed 43 ratio",
                "stat": "sweep_ratio_per_seed",
                "seed": 43,
                "value": "0.72",
            },
            {
                "row": "sweep_x8_4344",
                "label": "seed 44 ratio",
                "stat": "sweep_ratio_per_seed",
                "seed": 44,
                "value": "0.73",
            },
            {
                "row": "sweep_x4_4344",
                "label": "seed 43 ratio at ~3.5 iterations",
                "stat": "sweep_ratio_per_seed",
                "seed": 43,
                "value": "0.89",
            },
            {
                "row": "sweep_x4_4344",
                "label": "seed 44 ratio at ~3.5 iterations",
                "stat": "sweep_ratio_per_seed",
                "seed": 44,
                "value": "0.86",
            },
            {
                "row": "params_total_M",
                "label": "EqLM total (M)",
                "stat": "value",
                "arm": "eqlm",
                "metric": "params_total_M",
                "value": "120.7",
            },
        ],  # fmt: skip
    },
    {
        "slug": "f55-ladder",
        "title": "F55 · The ~1B twins on the benchmark ladder",
        "kind": "ladder",
        "order": 80,
        "description": "Explicit twin (913M) and tied EqLM (158M resident) at 0.5B, 1B and 2.5B tokens, with "
        "reference models; six multiple-choice tasks (chance ≈ 0.33 on the mean) plus LAMBADA.",
        "treatment_experiment": "exp40_ladder",
        "spec": {"tasks": ["arc_easy", "arc_challenge", "hellaswag", "piqa", "winogrande", "sciq"]},
        "findings": ["F55"],
        "published": [
            {
                "label": "explicit perplexity 0.5B / 1B / 2.5B",
                "value": "1271.4 / 503.5 / 259.7",
                "known_problem": "Noted with the programme's result files: "
                "the F55 perplexities exist in the findings text only, in no result file.",
            },
            {
                "label": "tied perplexity 0.5B / 1B / 2.5B",
                "value": "1961.6 / 785.4 / 339.7",
                "known_problem": "Noted with the programme's result files: "
                "the F55 perplexities exist in the findings text only, in no result file.",
            },
        ],  # fmt: skip
    },
]
