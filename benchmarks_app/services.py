"""The benchmarks app's services for other apps and scripts: uploads of result files (uploads.py).

Rows themselves are written through results.records (ingest_records). Inside the app, import from uploads
directly; this module only names the public entry points.
"""

from .uploads import create_upload, import_path, ingest_bytes, ingest_source_file

__all__ = ["create_upload", "import_path", "ingest_bytes", "ingest_source_file"]
