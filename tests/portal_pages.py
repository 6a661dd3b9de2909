"""The portal's pages for cross-cutting checks: seed the reference data once, then list one URL per page kind."""

import io
from contextlib import redirect_stdout

from django.core.management import call_command


def seed_portal() -> None:
    with redirect_stdout(io.StringIO()):
        call_command("seed")


def lab_job_url() -> str:
    from lab_app import services
    from lab_app.tasks import run_lab_job

    run = services.create_job({"game": "biased_rps", "solver": "mmd", "params": {"steps": 50}})
    run.refresh_from_db()
    if not run.is_finished:  # inside a test transaction on_commit never fires: run it here, as a worker would
        run_lab_job(run.pk)
    return f"/lab/jobs/{run.pk}/"


def public_page_urls(with_lab_job: bool = True, tables: int | None = None) -> list[str]:
    """Every public page kind, with real rows behind it (call after seed_portal)."""
    from benchmarks_app.models import Comparison
    from findings_app.models import Finding
    from results.models import Run

    urls = [
        "/",
        "/findings/",
        "/benchmarks/",
        "/benchmarks/runs/",
        "/benchmarks/compare/",
        "/benchmarks/experiments/",
        "/lab/",
        "/council/",
        "/council/replay/",
        "/demo/",
        "/models/",
        "/models/eqlm-anytime-120m/",
        "/models/eqlm-demo/",
        "/api/",
        "/api/docs/",
        "/admin/login/",
    ]
    finding = Finding.objects.order_by("pk").first()
    if finding is not None:
        urls.append(f"/findings/{finding.code}/")
    run = Run.objects.order_by("pk").first()
    if run is not None:
        urls.append(f"/benchmarks/runs/{run.run_id}/")
    slugs = list(Comparison.objects.order_by("pk").values_list("slug", flat=True))
    urls += [f"/benchmarks/{slug}/" for slug in slugs[:tables]]
    if with_lab_job:
        urls.append(lab_job_url())
    return urls


STAFF_PAGE_URLS = ["/benchmarks/uploads/", "/admin/", "/admin/inference/apikey/add/"]
