"""The compiled QRE kernel (qre_kernel.c): built from source with the system C compiler, loaded with ctypes.

`load()` returns the library, or None when no compiler is found or the build fails; qre.py then runs its numpy
code, which takes the same steps. The build lands in __pycache__ under a name carrying the source's hash, so an
edited source is rebuilt and a stale library is never loaded. The first solve on a fresh checkout builds it (about
a second); `python -m lab_app.solvers.kernel` builds it ahead of time.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

SOURCE = Path(__file__).with_name("qre_kernel.c")
_loaded: ctypes.CDLL | None | bool = False  # False: not tried yet


def library_path() -> Path:
    digest = hashlib.sha256(SOURCE.read_bytes()).hexdigest()[:16]
    return SOURCE.parent / "__pycache__" / f"qre_kernel-{digest}.so"


def build() -> Path | None:
    """Compile the kernel if it is not built yet; returns its path, or None without a working compiler."""
    target = library_path()
    if target.exists():
        return target
    compiler = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
    if compiler is None:
        return None
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(suffix=".so", dir=target.parent)
        os.close(fd)
    except OSError:  # a read-only checkout: numpy it is
        return None
    cmd = [compiler, "-O2", "-std=c99", "-D_POSIX_C_SOURCE=199309L", "-shared", "-fPIC", str(SOURCE), "-o", tmp, "-lm"]
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
        if done.returncode != 0:
            print(f"qre kernel: build failed, numpy is used instead:\n{done.stderr}", file=sys.stderr)
            return None
        os.replace(tmp, target)  # atomic: a concurrent loader sees the old state or the whole library
        for stale in target.parent.glob("qre_kernel-*.so"):  # builds of earlier sources
            if stale != target:
                stale.unlink(missing_ok=True)
        return target
    except (OSError, subprocess.SubprocessError):
        return None
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def _lapack_pointer(name: str) -> int:
    """The address of scipy's LAPACK routine (scipy.linalg.cython_lapack exports them as capsules)."""
    from scipy.linalg import cython_lapack

    capsule = cython_lapack.__pyx_capi__[name]
    get_name = ctypes.pythonapi.PyCapsule_GetName
    get_name.restype, get_name.argtypes = ctypes.c_char_p, [ctypes.py_object]
    get_pointer = ctypes.pythonapi.PyCapsule_GetPointer
    get_pointer.restype, get_pointer.argtypes = ctypes.c_void_p, [ctypes.py_object, ctypes.c_char_p]
    return get_pointer(capsule, get_name(capsule))


def load() -> ctypes.CDLL | None:
    """The kernel library (built on first use), or None when it cannot be built here."""
    global _loaded
    if _loaded is not False:
        return _loaded
    _loaded = None
    try:
        path = build()
        if path is None:
            return None
        lib = ctypes.CDLL(str(path))
    except OSError:
        return None
    p, i, d = ctypes.c_void_p, ctypes.c_int, ctypes.c_double
    lib.lab_set_lapack.argtypes = [p, p]
    lib.lab_set_lapack.restype = None
    lib.lab_set_lapack(_lapack_pointer("dgetrf"), _lapack_pointer("dgetrs"))
    lib.lab_newton.argtypes = [i, i, p, p, d, p, d, i, p, p, p]
    lib.lab_newton.restype = i
    lib.lab_trace.argtypes = [i, i, p, p, d, i, d, d, d, p, p, p, p]
    lib.lab_trace.restype = i
    _loaded = lib
    return lib


if __name__ == "__main__":
    built = build()
    print(f"qre kernel: {built}" if built else "qre kernel: no C compiler; the numpy code is used")
