"""The recipe schema's building blocks: a typed key with its default and check, and the error that names a key."""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

REQUIRED = object()


class RecipeError(ValueError):
    """A recipe that cannot be trained: the message names the key."""


@dataclass(frozen=True)
class Key:
    """One recipe key: its type(s), default, and an optional check returning an error text or None."""

    types: tuple
    default: Any = REQUIRED
    check: Any = None
    doc: str = ""


def positive(v):
    return None if v > 0 else "must be > 0"


def non_negative(v):
    return None if v >= 0 else "must be >= 0"


def fraction(v):
    return None if 0 <= v <= 1 else "must be in [0, 1]"


def one_of(*choices):
    return lambda v: None if v in choices else f"must be one of {list(choices)}"


def depth_list(v):
    return None if all(isinstance(d, int) and not isinstance(d, bool) and d >= 1 for d in v) else "must be depths >= 1"


INT, FLOAT, STR, BOOL, LIST = (int,), (float, int), (str,), (bool,), (list,)
OPT_STR = (str, type(None))


def _type_name(types: tuple) -> str:
    names = {int: "an integer", float: "a number", str: "a string", bool: "true or false", list: "a list"}
    return " or ".join(
        names.get(t, "nothing") for t in types if t is not type(None) and not (t is int and float in types)
    )


def check_value(key: Key, value, where: str):
    """The value if it has the key's type and passes its check (an int is a fine float, a bool is not an int)."""
    if isinstance(value, bool) and bool not in key.types:
        raise RecipeError(f"{where}: expected {_type_name(key.types)}, got {value!r}")
    if not isinstance(value, key.types):
        raise RecipeError(f"{where}: expected {_type_name(key.types)}, got {value!r}")
    if isinstance(value, int) and not isinstance(value, bool) and float in key.types:
        value = float(value)
    if key.check is not None and value is not None:
        problem = key.check(value)
        if problem:
            raise RecipeError(f"{where}: {problem}")
    return value


def check_table(schema: dict, data, path: str) -> dict:
    """`data` checked against `schema` (keys, nested tables, or callables that check a table of their own) with
    defaults filled in; the RecipeError names the first bad key by its dotted path."""
    if not isinstance(data, dict):
        raise RecipeError(f"{path.rstrip('.')}: expected a table")
    unknown = sorted(set(data) - set(schema))
    if unknown:
        raise RecipeError(f"unknown key {path}{unknown[0]}")
    out = {}
    for name, key in schema.items():
        where = f"{path}{name}"
        if callable(key):
            out[name] = key(data.get(name, {}), where)
        elif isinstance(key, dict):
            out[name] = check_table(key, data.get(name, {}), where + ".")
        elif name in data:
            out[name] = check_value(key, data[name], where)
        elif key.default is REQUIRED:
            raise RecipeError(f"missing key {where}")
        else:
            out[name] = copy.deepcopy(key.default)
    return out
