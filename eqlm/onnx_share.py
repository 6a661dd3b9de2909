"""Weights that two graphs of one export both hold, stored once: step.onnx and step_batched.onnx carry the same block
(139 MB at the published 121M size), so each large initializer they share moves into one external-data file that
both graphs reference, as the tied embedding and head do (tied.bin). Needs onnx; never torch."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

MIN_SHARED_BYTES = 1 << 16  # smaller initializers stay inside their graphs
ALIGN = 64  # each tensor starts on a 64-byte boundary of the shared file


def sha256(path: Path) -> str:
    """The content hash a manifest addresses a graph or an external-data file by."""
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def share_weights(out_dir: Path, roles: tuple[str, ...], file_name: str) -> dict:
    """Move the initializers of at least MIN_SHARED_BYTES that every graph of `roles` holds byte for byte into
    `file_name`, once, and point each graph at it; list it in manifest.json (`external_data`, `graph_sha256`) and
    return the manifest. Nothing changes when a role is missing from the export or the graphs share nothing."""
    import onnx
    from onnx.external_data_helper import set_external_data

    out_dir = Path(out_dir)
    manifest = json.loads((out_dir / "manifest.json").read_text())
    graphs = manifest.get("graphs") or {}
    if not all(role in graphs for role in roles):
        return manifest
    models = {role: onnx.load(str(out_dir / graphs[role])) for role in roles}
    digests = [{_digest(t) for t in _large(model)} for model in models.values()]
    shared = set.intersection(*digests)
    if not shared:
        return manifest
    blob, offsets = bytearray(), {}
    for model in models.values():
        for tensor in _large(model):
            digest = _digest(tensor)
            if digest not in shared:
                continue
            if digest not in offsets:
                blob.extend(b"\0" * (-len(blob) % ALIGN))
                offsets[digest] = (len(blob), len(tensor.raw_data))
                blob.extend(tensor.raw_data)
            offset, length = offsets[digest]
            set_external_data(tensor, location=file_name, offset=offset, length=length)
            tensor.ClearField("raw_data")
            tensor.data_location = onnx.TensorProto.EXTERNAL
    (out_dir / file_name).write_bytes(bytes(blob))
    hashes = dict(manifest.get("graph_sha256") or {})
    for role, model in models.items():
        onnx.save(model, str(out_dir / graphs[role]))
        hashes[role] = sha256(out_dir / graphs[role])
    hashes[file_name] = sha256(out_dir / file_name)
    manifest["graph_sha256"] = hashes
    manifest["external_data"] = {**(manifest.get("external_data") or {}), file_name: list(roles)}
    (out_dir / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
    return manifest


def _large(model) -> list:
    return [t for t in model.graph.initializer if t.HasField("raw_data") and len(t.raw_data) >= MIN_SHARED_BYTES]


def _digest(tensor) -> tuple:
    return (tensor.data_type, tuple(tensor.dims), hashlib.sha256(tensor.raw_data).hexdigest())
