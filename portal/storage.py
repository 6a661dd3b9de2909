"""Media storage that never leaves a half-written file: a failed write (disk full, read-only) is removed."""

import errno
import os
from contextlib import suppress

from django.core.files.storage import FileSystemStorage
from whitenoise.storage import CompressedManifestStaticFilesStorage

NO_SPACE = {errno.ENOSPC, errno.EDQUOT, errno.EFBIG}


class StorageUnavailable(OSError):
    """The media directory cannot take this file right now (full, read-only or missing); nothing was kept."""

    def __init__(self, cause: OSError):
        super().__init__(cause.errno, cause.strerror)
        self.full = cause.errno in NO_SPACE
        self.reason = "no space left on the server's disk" if self.full else "the server's media folder is not writable"


class SafeFileSystemStorage(FileSystemStorage):
    def _save(self, name, content):
        path = self.path(name)
        existed = os.path.lexists(path)  # then Django writes under another name: never remove someone else's file
        try:
            return super()._save(name, content)
        except OSError as exc:
            if not existed:
                with suppress(OSError):
                    os.remove(path)
            raise StorageUnavailable(exc) from exc


class ModuleStaticFilesStorage(CompressedManifestStaticFilesStorage):
    """Hashed, compressed static files whose ES module imports point at the hashed files too.

    A page loads `lab.js` under its content hash; without this its `import ... from "./solvers.js"` fetched the
    unhashed file, so after a deploy a browser could run a new module against an old one it had cached. The vendored
    third-party bundles (static/vendor/) are copied as they are: their minified text is not rewritten.
    """

    support_js_module_import_aggregation = True

    def url_converter(self, name, hashed_files, template=None):
        if name.startswith("vendor/"):
            return lambda matchobj: matchobj["matched"]
        return super().url_converter(name, hashed_files, template)
