"""Writing recipes: TOML text for a recipe's table (``dumps``), and the recipe a promoted checkpoint gets, which trains
the stage chain it records again: `extends` its recipe with the recorded overrides written in (``extending_recipe``),
or, where that cannot say it, the chain written out (``pinned_recipe``). No Django imports here.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

from .recipe import Recipe, RecipeError, _merge, _set, load_recipe, parse_override, recipe_file

BARE_KEY = set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-")


def _key(key: str) -> str:
    return key if key and set(key) <= BARE_KEY else _toml_value(key)


def _toml_value(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return repr(value)  # 0.003, 1e-05, inf: all TOML floats
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False).replace("\x7f", "\\u007f")
    if isinstance(value, list):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    if isinstance(value, dict) and not value:
        return "{}"
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{_key(k)} = {_toml_value(v)}" for k, v in value.items()) + " }"
    raise RecipeError(f"cannot write {type(value).__name__} {value!r} to TOML")


def dumps(data: dict) -> str:
    """TOML text for a recipe's raw table (strings, numbers, booleans, lists, tables); tomllib reads it back equal."""
    lines: list[str] = []

    def table(path: list[str], body: dict) -> None:
        scalars = [(k, v) for k, v in body.items() if not isinstance(v, dict) or not v]
        tables = [(k, v) for k, v in body.items() if isinstance(v, dict) and v]
        if path and scalars:
            lines.extend(["", f"[{'.'.join(_key(k) for k in path)}]"])
        lines.extend(f"{_key(k)} = {_toml_value(v)}" for k, v in scalars)
        for key, value in tables:
            table([*path, key], value)

    table([], data)
    return "\n".join(lines).lstrip("\n") + "\n"


def _without_none(data: dict) -> dict:
    return {k: _without_none(v) if isinstance(v, dict) else v for k, v in data.items() if v is not None}


def _recorded_source(provenance: dict) -> tuple[Recipe, list[str], str]:
    """The recipe, overrides and stage a checkpoint records, refused where the recipe no longer resolves to it."""
    if not provenance.get("recipe") or not provenance.get("stage"):
        raise RecipeError("the checkpoint records no recipe and stage (trained before recipes?)")
    source = load_recipe(provenance["recipe"])
    overrides = list(provenance.get("overrides") or [])
    stage = provenance["stage"]
    resolved = source.resolve(stage, overrides)
    if provenance.get("recipe_hash") and resolved.recipe_hash != provenance["recipe_hash"]:
        raise RecipeError(
            f"{source.path.name} stage {stage} with {overrides or 'no overrides'} resolves to recipe_hash "
            f"{resolved.recipe_hash}, but the checkpoint records {provenance['recipe_hash']}: the recipe changed since"
        )
    return source, overrides, stage


def pinned_recipe(name: str, provenance: dict, title: str, description: str) -> dict:
    """The raw table of a recipe `name` that trains the stage chain a checkpoint records exactly as it was trained:
    its recipe's model, corpus and defaults, the stages its recorded stage starts from, each with the recorded
    overrides written in (the trainer applies them to every stage of the chain). Refuses (RecipeError) a checkpoint
    that records no recipe, or one whose recipe no longer resolves to the stage it recorded (its recipe_hash)."""
    source, overrides, stage = _recorded_source(provenance)
    chain = source.chain(stage)
    stages = {}
    for link in chain:
        written = copy.deepcopy(source.raw["stages"][link])
        for text in overrides:
            keys, value = parse_override(text)
            _set(written, keys, value)
        stages[link] = written
    raw = {"title": title, "description": description}
    raw |= {k: copy.deepcopy(source.raw[k]) for k in ("model", "corpus", "defaults") if k in source.raw}
    pinned = Recipe(name, source.path, raw | {"stages": stages})
    if all(pinned.resolve(link).recipe_hash == source.resolve(link, overrides).recipe_hash for link in chain):
        return pinned.raw
    # an override that replaces a whole table would merge with the defaults here: write each stage out in full
    # (TOML has no null; a key left out is its default, None)
    stages = {link: _without_none(source.resolve(link, overrides).to_dict()) for link in chain}
    return {k: v for k, v in raw.items() if k != "defaults"} | {"stages": stages}


def extending_recipe(name: str, provenance: dict, title: str, description: str) -> dict:
    """The raw table of a recipe `name` that trains what a checkpoint records as `pinned_recipe` does, written as
    `extends = "<its recipe>"` with the recorded overrides in [defaults], or in each stage where a stage sets the key
    itself. Where neither form resolves to the recorded stages (its recipe has stages beyond the chain, cannot be
    named from `name`'s folder, is `name` itself, or an override replaces a whole table), the pinned form instead."""
    source, overrides, stage = _recorded_source(provenance)
    chain = source.chain(stage)
    named = source.name != name and recipe_file(source.name).resolve() == Path(source.path).resolve()
    if chain == source.stage_names and named:
        expected = {link: source.resolve(link, overrides).recipe_hash for link in chain}
        written: dict = {}
        for text in overrides:
            keys, value = parse_override(text)
            _set(written, keys, value)
        head = {"extends": source.name, "title": title, "description": description}
        for form in ({"defaults": written}, {"stages": {link: copy.deepcopy(written) for link in chain}}):
            form = {k: v for k, v in form.items() if v}
            merged = Recipe(name, source.path, _merge(source.raw, form))
            if all(merged.resolve(link).recipe_hash == expected[link] for link in chain):
                return head | form
    return pinned_recipe(name, provenance, title, description)
