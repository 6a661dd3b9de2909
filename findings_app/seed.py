"""Demo seed for findings_app: the findings record from fixtures/findings.yaml (run by `manage.py seed`)."""

from .services import import_findings, read_fixture


def seed() -> str:
    summary = import_findings(read_fixture())
    return (
        f"{summary['findings']} findings loaded, {summary['unchanged']} already present "
        f"({summary['figures']} figures, {summary['references']} provenance entries, {summary['links']} links, "
        f"{summary['notes']} notes)"
    )
