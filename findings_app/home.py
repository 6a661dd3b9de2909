"""What the home page says first: the programme's bottom line, then its headline numbers, each with its table.

No number is typed here: the bottom line quotes stored figures as [[F45: mean ratio]], and each headline card
reads its figure row. A card names the one benchmark table that recomputes its figure ("" where none does), and
its published-vs-recomputed checks are read from that table only.
"""

# The bottom line, in the programme's own order: the exchange rate it validated, the billion-parameter boundary
# it met, and where it closed. (title, Markdown quoting stored figures, table slug or "", finding code)
BOTTOM_LINE = [
    (
        "The exchange rate holds at small scale",
        "A weight-tied block built at the explicit model's width, and iterated once for each layer it replaces, "
        "keeps [[F45: mean ratio]] of the explicit transformer's BLiMP quality with [[F45: parameters]] "
        "parameters, at the same compute per token ([[F45: compute per token]]). Across every cached BLiMP "
        "phenomenon the ratio is [[F50: ratio]]. Validated: F45 over three seeds, F50 on one.",
        "f45-equal-compute",
        "F45",
    ),
    (
        "It does not carry to a billion parameters",
        "At about a billion parameters the compute-matched tied twin missed its kill gate "
        "([[F55: kill gate]]): its perplexity ratios against the explicit twin were [[F55: perplexity ratios]] "
        "along training, and both twins sat at chance on the task ladder ([[F55: six-task ladder mean]]). "
        "The cheaper routes to that scale closed too: tying a pretrained model's layers started at "
        "[[F51: pair-tying, thick shell]], and distillation's gain in held-out perplexity was [[F53: change]] "
        "against its gate of [[F53: gate]] (F51, F53).",
        "f55-ladder",
        "F55",
    ),
    (
        "The programme closed there",
        "F55 is recorded as a boundary, not a null result: the operator halted the programme because matching "
        "even Pythia-410m's training would take [[F55: Pythia-410m token budget on one card]]. Its last word on "
        "the exchange rate is [[F53: exchange-rate restatement]].",
        "",
        "F55",
    ),
]

# The headline numbers: (label, finding code, figure name, the table that recomputes the figure or "").
HEADLINES = [
    ("Tied block at the explicit model's width: quality ratio", "F45", "mean ratio", "f45-equal-compute"),
    ("…and its parameters, tied against explicit", "F45", "parameters", ""),
    (
        "Anytime-unrolled training at matched parameters (qualified by F44)",
        "F24",
        "B1 ratio vs explicit",
        "f24-anytime",
    ),
    (
        "The wide tied model at equal compute: quality ratio",
        "F44",
        "ratio at mean depth 2.08",
        "f44-compute-audit",
    ),
    ("The billion-parameter tied twin: perplexity ratio over training", "F55", "perplexity ratios", ""),
    ("Routing council against the designated single model", "F41", "deployed system vs designated single model", ""),
    ("Qwen2.5-7B-Instruct alone on the same questions", "F54", "Qwen2.5-7B-Instruct", ""),
]
