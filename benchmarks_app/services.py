"""The benchmarks app's services for other apps and scripts: record writes (records.py) and uploads (uploads.py).

Inside the app, import from records or uploads directly; this module only names the public entry points.
"""

from .records import clean_records, condition_key, ingest_records, invalidate_tables, tables_cache_version
from .uploads import create_upload, import_path, ingest_bytes, ingest_source_file

__all__ = [
    "clean_records",
    "condition_key",
    "create_upload",
    "import_path",
    "ingest_bytes",
    "ingest_records",
    "ingest_source_file",
    "invalidate_tables",
    "tables_cache_version",
]
