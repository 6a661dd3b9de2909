"""The programme's model config (its EqLMConfig fields, exactly), validated by name, and sizes computed from it alone.

No torch here: `declared_bytes` lets a caller refuse a file whose config declares too much before anything is
allocated, and `expected_shapes` is what a state_dict must hold.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, fields

MODEL_CLASSES = ("EqLM", "ExplicitLM")
SOLVERS = ("picard", "anderson", "broyden")
MAP_FORMS = ("residual", "postln")
FLOAT32_BYTES = 4


class ProgrammeConfigError(ValueError):
    """A config_dict that is not the programme's config (the message names the field)."""


@dataclass(frozen=True)
class ProgrammeConfig:
    """The programme's EqLMConfig. dropout, jfb, aux_residual and lambda_aux only matter in training: they are
    recorded and type-checked, never range-checked."""

    vocab_size: int
    d_model: int
    n_heads: int
    d_ff: int
    max_seq_len: int
    deq_max_iter: int
    deq_tol: float
    solver: str
    jfb: bool
    dropout: float
    spectral_norm: bool
    residual_damping: float
    map_form: str
    aux_residual: bool
    lambda_aux: float

    @property
    def head_dim(self) -> int:
        return self.d_model // self.n_heads

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> ProgrammeConfig:
        """The config of a config_dict, or ProgrammeConfigError naming the first field that is wrong."""
        if not isinstance(data, dict):
            raise ProgrammeConfigError(f"config_dict must be a dict, not {type(data).__name__}")
        names = [f.name for f in fields(cls)]
        unknown = sorted(str(k) for k in data if k not in names)
        if unknown:
            raise ProgrammeConfigError(f"unknown config field(s): {', '.join(unknown)}")
        missing = [n for n in names if n not in data]
        if missing:
            raise ProgrammeConfigError(f"missing config field(s): {', '.join(missing)}")
        for f in fields(cls):
            _check_type(f.name, f.type, data[f.name])
        config = cls(**{n: float(data[n]) if _FIELD_TYPES[n] == "float" else data[n] for n in names})
        config.validate()
        return config

    def validate(self) -> None:
        for name in ("vocab_size", "d_model", "n_heads", "d_ff", "max_seq_len", "deq_max_iter"):
            if getattr(self, name) <= 0:
                raise ProgrammeConfigError(f"config field {name} must be positive, not {getattr(self, name)}")
        if self.d_model % self.n_heads:
            raise ProgrammeConfigError(f"d_model ({self.d_model}) is not divisible by n_heads ({self.n_heads})")
        if self.solver not in SOLVERS:
            raise ProgrammeConfigError(f"config field solver must be one of {SOLVERS}, not {self.solver!r}")
        if self.map_form not in MAP_FORMS:
            raise ProgrammeConfigError(f"config field map_form must be one of {MAP_FORMS}, not {self.map_form!r}")
        if not (math.isfinite(self.deq_tol) and self.deq_tol >= 0):
            raise ProgrammeConfigError(f"config field deq_tol must be finite and >= 0, not {self.deq_tol}")
        if not 0.0 < self.residual_damping <= 1.0:
            raise ProgrammeConfigError(f"config field residual_damping must be in (0, 1], not {self.residual_damping}")


_FIELD_TYPES = {f.name: f.type for f in fields(ProgrammeConfig)}


def _check_type(name: str, kind: str, value) -> None:
    # bool is a subclass of int in Python: `d_model: true` or `spectral_norm: 1` are refused, not coerced
    if kind == "bool":
        ok = isinstance(value, bool)
    elif kind == "int":
        ok = isinstance(value, int) and not isinstance(value, bool)
    elif kind == "float":
        ok = isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)
    else:
        ok = isinstance(value, str)
    if not ok:
        raise ProgrammeConfigError(f"config field {name} must be a finite {kind}, not {value!r}")


def check_model_class(model_class, n_layers) -> None:
    """Refuse an unknown model_class, and an n_layers that is not a positive int for ExplicitLM (or set for EqLM)."""
    if model_class not in MODEL_CLASSES:
        raise ProgrammeConfigError(f"unknown model_class {model_class!r}; expected one of {MODEL_CLASSES}")
    if model_class == "ExplicitLM":
        if not isinstance(n_layers, int) or isinstance(n_layers, bool) or n_layers <= 0:
            raise ProgrammeConfigError(f"n_layers must be a positive int for ExplicitLM, not {n_layers!r}")
    elif n_layers is not None:
        raise ProgrammeConfigError(f"n_layers is for ExplicitLM only; an EqLM file has {n_layers!r}")


def block_shapes(config: ProgrammeConfig) -> dict[str, tuple[int, ...]]:
    """State-dict entries of one block (names relative to the block) and their shapes."""
    d, ff = config.d_model, config.d_ff
    linears = {
        "q_proj": (d, d),
        "k_proj": (d, d),
        "v_proj": (d, d),
        "out_proj": (d, d),
        "fc1": (ff, d),
        "fc2": (d, ff),
        "input_gate": (1, d),
    }
    shapes: dict[str, tuple[int, ...]] = {f"{ln}.{p}": (d,) for ln in ("ln1", "ln2") for p in ("weight", "bias")}
    for name, (out, inp) in linears.items():
        shapes[f"{name}.bias"] = (out,)
        if config.spectral_norm:
            shapes[f"{name}.parametrizations.weight.original"] = (out, inp)
            shapes[f"{name}.parametrizations.weight.0._u"] = (out,)
            shapes[f"{name}.parametrizations.weight.0._v"] = (inp,)
        else:
            shapes[f"{name}.weight"] = (out, inp)
    return shapes


def expected_shapes(config: ProgrammeConfig, model_class: str, n_layers: int | None = None) -> dict:
    """Every state_dict key of a model of this config and its shape (the tied head included)."""
    check_model_class(model_class, n_layers)
    d = config.d_model
    prefixes = ["block."] if model_class == "EqLM" else [f"layers.{i}." for i in range(n_layers)]
    shapes = {"embedding.weight": (config.vocab_size, d), "pos_embedding.weight": (config.max_seq_len, d)}
    for prefix in prefixes:
        shapes.update({prefix + key: shape for key, shape in block_shapes(config).items()})
    shapes.update({"ln_final.weight": (d,), "ln_final.bias": (d,), "lm_head.weight": (config.vocab_size, d)})
    return shapes


def _sizes(config: ProgrammeConfig, model_class: str, n_layers: int | None) -> tuple[int, int, int]:
    """(numel outside the blocks with the tied pair once, numel of one block's parameters, of its _u/_v buffers),
    computed without enumerating the blocks, so a declared n_layers of 10**9 costs nothing."""
    check_model_class(model_class, n_layers)
    d = config.d_model
    outside = config.vocab_size * d + config.max_seq_len * d + 2 * d
    params = buffers = 0
    for key, shape in block_shapes(config).items():
        if key.endswith(("._u", "._v")):
            buffers += math.prod(shape)
        else:
            params += math.prod(shape)
    return outside, params, buffers


def _blocks(model_class: str, n_layers: int | None) -> int:
    return 1 if model_class == "EqLM" else n_layers


def parameter_count(config: ProgrammeConfig, model_class: str, n_layers: int | None = None) -> int:
    """Parameters of the model: the tied head counted once, spectral norm's _u and _v (buffers) left out."""
    outside, params, _ = _sizes(config, model_class, n_layers)
    return outside + _blocks(model_class, n_layers) * params


def declared_bytes(config: ProgrammeConfig, model_class: str, n_layers: int | None = None) -> int:
    """fp32 bytes of the state_dict as the file stores it: the tied pair once, the _u/_v buffers included."""
    outside, params, buffers = _sizes(config, model_class, n_layers)
    return FLOAT32_BYTES * (outside + _blocks(model_class, n_layers) * (params + buffers))


# The published models' settings (the seed card kinetic-eqlm-anytime-121m-babylm), which every published size shares
PUBLISHED_SETTINGS = {
    "vocab_size": 50257, "max_seq_len": 128, "deq_max_iter": 12, "deq_tol": 0.001, "solver": "anderson", "jfb": True,
    "dropout": 0.1, "spectral_norm": True, "residual_damping": 0.2, "map_form": "postln", "aux_residual": False,
    "lambda_aux": 0.1,
}  # fmt: skip
# name: (model_class, shape, n_layers, parameters), each confirmed by the published parameter count
PUBLISHED_SIZES = {
    "anytime": ("EqLM", {"d_model": 1704, "n_heads": 12, "d_ff": 6807}, None, 120_696_016),
    "explicit": ("ExplicitLM", {"d_model": 768, "n_heads": 12, "d_ff": 3072}, 12, 123_760_908),
    "block-at-width": ("EqLM", {"d_model": 768, "n_heads": 12, "d_ff": 3072}, None, 45_785_857),
}


def published_config(size: str, **overrides) -> ProgrammeConfig:
    """The config of a published size (PUBLISHED_SIZES), with fields overridden (e.g. a tiny width for tests)."""
    return ProgrammeConfig.from_dict({**PUBLISHED_SETTINGS, **PUBLISHED_SIZES[size][1], **overrides})
