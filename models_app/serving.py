"""The serving layer: model id -> ONNX runtime (eqlm.generation.Generator), loaded lazily and thread-safely.

Servable models are every folder `settings.MODELS_DIR/<id>/` with an export `onnx/manifest.json` (the bundled ones;
the default id is served from `MODELS_DIR/<settings.DEFAULT_MODEL>/onnx/`) and every registry row that names an ONNX
folder (`RegisteredModel.onnx_dir`). Each model's graphs are addressed by their sha256, so a browser that loaded a
manifest can never fetch a graph from another export. Never imports torch.
"""

from __future__ import annotations

import hashlib
import json
import logging
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from eqlm.batched_generator import BatchedGenerator, batched_graphs
from eqlm.generation import Generator
from eqlm.limits import DEFAULT_DEPTH, DEFAULT_MODEL_ID, DEPTH_MAX, model_depths
from eqlm.manifest import DEFAULT_PRECISION, depth_range, graph_roles, precisions_of
from eqlm.model_files import ONNX, current_path

from .model_ids import base_id

log = logging.getLogger(__name__)


# graphs checked and served when an export has them (eqlm/export_batched.py), as are an explicit model's
# `batched_layers`
OPTIONAL_ROLES = ("step_batched",)


class UnknownModel(LookupError):
    """No servable model has this id."""

    def __init__(self, model_id: str, available: list[str], reason: str = ""):
        why = f" ({reason})" if reason else ""
        super().__init__(f"The model '{model_id}' does not exist{why}. Available: {', '.join(available) or 'none'}.")
        self.model_id, self.available, self.reason = model_id, available, reason

    def with_available(self, extra: list[str]) -> UnknownModel:
        """The same error listing more ids (the API adds the council, which is not a servable folder)."""
        return UnknownModel(self.model_id, [*self.available, *extra], self.reason)


class ModelUnavailable(RuntimeError):
    """The model is known but its runtime could not be loaded (the reason is the message)."""


@dataclass(frozen=True)
class ModelCard:
    """What is known about a servable model without loading it: where its files are and what they hold."""

    id: str
    name: str
    onnx_dir: Path
    source: str  # "bundled" or "registry"
    default_depth: int  # limits.model_depths of the manifest: its own default and cap
    max_depth: int
    created: int  # the manifest's modification time (seconds), OpenAI's `created`
    graphs: dict[str, str] = field(compare=False)  # role -> file name in onnx_dir
    graph_sha256: dict[str, str] = field(compare=False)  # role -> sha256 of that file
    manifest: dict = field(compare=False, repr=False)
    error: str = ""  # why the files cannot be served (a manifest naming a graph that is missing or altered)

    @property
    def version(self) -> str:
        """Changes whenever any graph changes: the runtime cache and the graph URLs are keyed by it."""
        joined = ",".join(f"{r}={self.graph_sha256.get(r, '')}" for r in sorted(self.graphs))
        return hashlib.sha256(f"{self.onnx_dir}|{joined}".encode()).hexdigest()[:16]

    def runtime(self, precision: str = DEFAULT_PRECISION) -> Generator:
        """This model's runtime at `precision` (fp32, or int8 where the export has int8 graphs), loaded on first use
        and shared by every request; raises ModelUnavailable."""
        return _load(self, precision)

    def file_for_sha(self, sha256: str) -> Path | None:
        """The graph file whose content has this sha256 (None when this export has no such graph)."""
        for role, digest in self.graph_sha256.items():
            if digest == sha256:
                return self.onnx_dir / self.graphs[role]
        return None


# --- discovery: folders and registry rows -> cards ---------------------------------------------------------------

_sha_cache: dict[tuple[str, int, int], str] = {}
_sha_lock = threading.Lock()


def file_sha256(path: Path) -> str:
    """sha256 of a file, cached by (path, size, mtime) so a page view does not re-read every graph."""
    stat = path.stat()
    key = (str(path), stat.st_size, stat.st_mtime_ns)
    with _sha_lock:
        known = _sha_cache.get(key)
    if known is None:
        digest = hashlib.sha256()
        with path.open("rb") as fh:  # in blocks: a tied matrix is hundreds of MB, never held whole
            for block in iter(lambda: fh.read(1 << 20), b""):
                digest.update(block)
        known = digest.hexdigest()
        with _sha_lock:
            _sha_cache[key] = known
    return known


def external_files(manifest: dict) -> list[str]:
    """The external-data files the manifest's graphs read: {file: [roles]} under `external_data`."""
    files = manifest.get("external_data") or {}
    return [str(name) for name in files] if isinstance(files, dict) else []


def read_card(model_id: str, onnx_dir: Path, source: str, name: str = "") -> ModelCard | None:
    """The card of the export in onnx_dir, or None when the folder holds no readable manifest."""
    onnx_dir = Path(onnx_dir)
    manifest_path = onnx_dir / "manifest.json"
    try:
        manifest = json.loads(manifest_path.read_text())
        created = int(manifest_path.stat().st_mtime)
    except (OSError, ValueError):
        return None
    try:  # the graphs a runtime loads: embed, step (an EqLM) or each layer (an explicit transformer), head
        roles, error = graph_roles(manifest), ""
        if "int8" in precisions_of(manifest):  # the int8 twins are served beside the fp32 graphs
            roles = (*roles, *(f"{role}_int8" for role in roles))
    except ValueError as exc:
        roles, error = (), f"the manifest is refused: {exc}"
    listed = manifest.get("graphs") or {}
    optional = (*OPTIONAL_ROLES, *(str(role) for role in manifest.get("batched_layers") or []))
    roles = (*roles, *(role for role in optional for role in (role, f"{role}_int8") if role in listed))
    graphs = {role: str(name_) for role, name_ in (manifest.get("graphs") or {}).items() if role in roles}
    declared = manifest.get("graph_sha256") or {}
    digests = {}
    for role in roles:
        if role not in graphs:
            error = error or f"the manifest names no {role} graph"
            continue
        path = onnx_dir / graphs[role]
        if Path(graphs[role]).name != graphs[role] or not path.is_file():
            error = error or f"the {role} graph {graphs[role]!r} is missing"
            continue
        digests[role] = file_sha256(path)
        if declared.get(role) and declared[role] != digests[role]:
            error = error or f"the {role} graph does not match the sha256 its manifest declares"
    for name in external_files(manifest):  # data files graphs read (a tied matrix stored once), served like graphs
        path = onnx_dir / name
        if Path(name).name != name or not path.is_file():
            error = error or f"the external data file {name!r} is missing"
            continue
        graphs[name], digests[name] = name, file_sha256(path)
        if declared.get(name) and declared[name] != digests[name]:
            error = error or f"{name} does not match the sha256 its manifest declares"
    try:
        default_depth, max_depth = model_depths(manifest)
        depth_range(manifest)
    except (TypeError, ValueError) as exc:  # the runtime would refuse it too: say why instead of serving it
        default_depth, max_depth = DEFAULT_DEPTH, DEPTH_MAX
        error = error or f"the manifest's depths are refused: {exc}"
    return ModelCard(
        id=model_id,
        name=name or str(manifest.get("name") or model_id),
        onnx_dir=onnx_dir,
        source=source,
        default_depth=default_depth,
        max_depth=max_depth,
        created=created,
        graphs=graphs,
        graph_sha256=digests,
        manifest=manifest,
        error=error,
    )


REGISTRY_TTL_S = 5.0  # a registry row is served (or dropped) at most this long after it is saved
_registry_cache: tuple[float, list[tuple[str, str, str]]] | None = None


def _registry_rows() -> list[tuple[str, str, str]]:
    """(slug, name, onnx_dir) of registry rows, read at most every REGISTRY_TTL_S; empty when the database cannot
    answer (serving the bundled models, and the health probe, must not depend on it)."""
    global _registry_cache
    cached = _registry_cache
    if cached is not None and cached[0] > time.monotonic():
        return cached[1]
    try:
        from .models import RegisteredModel

        rows = list(RegisteredModel.objects.values_list("slug", "name", "onnx_dir"))
    except Exception as exc:  # noqa: BLE001
        log.debug("registry unavailable for model discovery: %s", exc)
        rows = []
    _registry_cache = (time.monotonic() + REGISTRY_TTL_S, rows)
    return rows


def _absolute(path: str | Path) -> Path:
    from django.conf import settings

    path = Path(path)
    return current_path(path, Path(settings.BASE_DIR))  # a row from before models/<id>/ names the old place


def default_onnx_dir() -> Path:
    """The default model's export: `MODELS_DIR/<DEFAULT_MODEL>/onnx/`."""
    from django.conf import settings

    return Path(settings.MODELS_DIR) / settings.DEFAULT_MODEL / ONNX


def _model_folders(rows: list[tuple[str, str, str]]) -> dict[str, tuple[Path, str]]:
    """{model id: (its export's folder, "bundled" | "registry")}: the default first, then the bundled folders that
    hold a manifest, then the registry's rows (`rows`) whose slug names neither; reads no manifest."""
    from django.conf import settings

    folders: dict[str, tuple[Path, str]] = {DEFAULT_MODEL_ID: (default_onnx_dir(), "bundled")}
    root = Path(settings.MODELS_DIR)
    if root.is_dir():
        for child in sorted(root.iterdir()):
            onnx = child / ONNX
            if child.name not in folders and (onnx / "manifest.json").is_file():
                folders[child.name] = (onnx, "bundled")
    for slug, _, onnx_dir in rows:
        if onnx_dir and slug not in folders:
            folders[slug] = (_absolute(onnx_dir), "registry")
    return folders


def model_cards(only: str | None = None) -> dict[str, ModelCard]:
    """Every servable model, the default first, then the bundled ones and the registry's, by id; `only`: that
    model's card alone, where it has one (its folder is the only one read)."""
    rows = _registry_rows()
    names = {slug: name for slug, name, _ in rows}
    folders = _model_folders(rows)
    if only is not None:
        folders = {only: folders[only]} if only in folders else {}
    cards = {}
    for model_id, (folder, source) in folders.items():
        card = read_card(model_id, folder, source, names.get(model_id, ""))
        if card is not None:
            cards[model_id] = card
    return cards


# --- runtimes ---------------------------------------------------------------------------------------------------


@dataclass
class _Slot:
    lock: threading.Lock = field(default_factory=threading.Lock)
    version: str = ""
    runtime: Generator | None = None
    error: str = ""
    loaded_at: float | None = None
    load_seconds: float | None = None


_slots: dict[str, _Slot] = {}
_slots_lock = threading.Lock()


def _slot(model_id: str) -> _Slot:
    with _slots_lock:
        return _slots.setdefault(model_id, _Slot())


def _runtime(onnx_dir: Path, precision: str = DEFAULT_PRECISION) -> Generator:
    """A model's runtime at a precision: batched (eqlm.batched_generator) when batching is on, its export has that
    precision's batched step and it has API_BATCH_MIN_PARAMS parameters or more (below, a step costs less than
    handing it over). Such a model runs on API_ONNX_THREADS threads; a smaller one on one."""
    from django.conf import settings

    manifest = json.loads((Path(onnx_dir) / "manifest.json").read_text())
    big = int(manifest.get("num_params") or 0) >= settings.API_BATCH_MIN_PARAMS
    threads = max(1, settings.API_ONNX_THREADS) if big else 1
    if settings.API_BATCH_GENERATIONS and batched_graphs(manifest, precision) and big:
        return BatchedGenerator(onnx_dir, max_rows=settings.API_BATCH_MAX_ROWS, precision=precision, threads=threads)
    return Generator(onnx_dir, precision=precision, threads=threads)


def _load(card: ModelCard, precision: str = DEFAULT_PRECISION) -> Generator:
    """The card's runtime, loaded on first use (once per export version and precision); raises ModelUnavailable."""
    if card.error:
        raise ModelUnavailable(card.error)
    slot = _slot(card.id if precision == DEFAULT_PRECISION else f"{card.id}|{precision}")
    version = card.version
    if slot.version == version and slot.runtime is not None:
        return slot.runtime
    with slot.lock:
        if slot.version != version:  # a new export replaced the files: forget the old runtime and failure
            slot.version, slot.runtime, slot.error, slot.loaded_at = version, None, "", None
        if slot.runtime is None and not slot.error:
            started = time.perf_counter()
            try:
                runtime = _runtime(card.onnx_dir, precision)
            except Exception as exc:  # noqa: BLE001 - onnxruntime raises several types for a bad graph
                slot.error = f"{type(exc).__name__}: {exc}"[:500]
                log.warning("model %s could not be loaded: %s", card.id, slot.error)
            else:
                runtime.model_id = card.id
                runtime.default_depth = card.default_depth
                slot.runtime, slot.loaded_at = runtime, time.time()
                slot.load_seconds = round(time.perf_counter() - started, 3)
        if slot.error:
            raise ModelUnavailable(slot.error)
        return slot.runtime


def resolve(model_id: str | None = None) -> ModelCard:
    """The one way from a model id to a model: its card, without loading anything; `card.runtime()` loads it.

    None is the default model; a configuration suffix (`eqlm-demo@depth=12`, models_app/model_ids.py) names its
    base model. Raises UnknownModel for an id that names no servable model (for a missing default model, the
    message says which folder lacks its manifest).
    """
    model_id = base_id(model_id or DEFAULT_MODEL_ID)
    card = model_cards(only=model_id).get(model_id)  # its card alone: reading every model's cost each request 5 ms
    if card is None:
        cards = model_cards()  # for the error's list of the known ids
        reason = ""
        if model_id == DEFAULT_MODEL_ID:
            reason = f"no manifest.json in {default_onnx_dir()}"
        raise UnknownModel(model_id, list(cards), reason)
    return card


def model_state(card: ModelCard) -> dict:
    """{"state": "loaded" | "not loaded" | "failed", ...} of one model in this process (loads nothing)."""
    if card.error:
        return {"state": "failed", "error": card.error}
    with _slots_lock:
        slot = _slots.get(card.id)
    if slot is None or slot.version != card.version:
        return {"state": "not loaded"}
    if slot.runtime is not None:
        return {"state": "loaded", "load_seconds": slot.load_seconds}
    if slot.error:
        return {"state": "failed", "error": slot.error}
    return {"state": "not loaded"}


def model_states() -> list[dict]:
    """Every servable model with its state in this process, the default first (for /api/health and /v1/models)."""

    cards = model_cards()
    states = [
        {"id": card.id, "name": card.name, "source": card.source, "default": card.id == DEFAULT_MODEL_ID,
         **model_state(card)}
        for card in cards.values()
    ]  # fmt: skip
    if DEFAULT_MODEL_ID not in cards:
        missing = f"no manifest.json in {default_onnx_dir()}"
        states.insert(0, {"id": DEFAULT_MODEL_ID, "name": DEFAULT_MODEL_ID, "source": "bundled", "default": True,
                          "state": "failed", "error": missing})  # fmt: skip
    return states


def warm_up_all() -> dict[str, str]:
    """Load every servable model now; a model that fails is logged and skipped. Returns {id: state}."""
    states = {}
    for card in model_cards().values():
        try:
            card.runtime()
            states[card.id] = "loaded"
        except ModelUnavailable as exc:
            log.warning("model %s not loaded at start-up: %s", card.id, exc)
            states[card.id] = "failed"
    return states


def forget_registry_rows() -> None:
    """Read the registry again on the next lookup (this process; others see a change within REGISTRY_TTL_S)."""
    global _registry_cache
    _registry_cache = None


def reset() -> None:
    """Forget every loaded runtime and the cached registry rows (tests, or after replacing files by hand)."""
    global _registry_cache
    with _slots_lock:
        _slots.clear()
    _registry_cache = None
