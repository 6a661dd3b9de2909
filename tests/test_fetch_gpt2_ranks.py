"""The set-up step that puts GPT-2's ranks in place: idempotent, offline once done, and only the pinned bytes."""

import io
import os
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from eqlm import bpe

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "scripts" / "fetch_gpt2_ranks.py"


def load_script():
    import importlib.util

    spec = importlib.util.spec_from_file_location("fetch_gpt2_ranks", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def sdist_with(path: Path, member: str, data: bytes) -> Path:
    with tarfile.open(path, "w:gz") as archive:
        info = tarfile.TarInfo(member)
        info.size = len(data)
        archive.addfile(info, io.BytesIO(data))
    return path


def test_with_the_pinned_file_in_place_the_step_does_nothing_and_needs_no_network(tmp_path):
    if not bpe.ranks_present():
        pytest.fail(f"GPT-2's ranks are not at {bpe.ranks_path()}: run make setup")
    target = tmp_path / "gpt2.tiktoken"
    target.write_bytes(bpe.ranks_path().read_bytes())
    before = target.stat().st_mtime_ns
    # an unreachable proxy and no index: any download would fail
    env = {**os.environ, "GPT2_RANKS_PATH": str(target), "HTTPS_PROXY": "http://127.0.0.1:9", "PIP_NO_INDEX": "1"}
    result = subprocess.run([sys.executable, str(SCRIPT)], env=env, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout == "" and target.stat().st_mtime_ns == before


def test_the_pinned_member_of_the_sdist_is_extracted_and_checked(tmp_path):
    if not bpe.ranks_present():
        pytest.fail(f"GPT-2's ranks are not at {bpe.ranks_path()}: run make setup")
    script = load_script()
    sdist = sdist_with(tmp_path / "openai_whisper.tar.gz", bpe.WHISPER_SDIST_MEMBER, bpe.ranks_path().read_bytes())
    target = tmp_path / "out" / "gpt2.tiktoken"
    target.parent.mkdir()
    script.extract_ranks(sdist, target)
    assert bpe.ranks_present(target)


def test_other_bytes_in_the_sdist_are_refused_and_nothing_is_left(tmp_path):
    script = load_script()
    sdist = sdist_with(tmp_path / "openai_whisper.tar.gz", bpe.WHISPER_SDIST_MEMBER, b"IQ== 0\n")
    target = tmp_path / "gpt2.tiktoken"
    with pytest.raises(SystemExit, match="is not the pinned file"):
        script.extract_ranks(sdist, target)
    assert list(tmp_path.iterdir()) == [sdist]
