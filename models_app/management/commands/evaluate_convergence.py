"""Quality and convergence by depth of a registered model, in this process: an EvaluationRun and result rows.

With --write-fixture the model's rows are also written to fixtures/local_results.json (what `seed` loads), so the
committed models' figures ship with the portal, and a bundled model's card facts (models/<id>/facts.json,
whose evaluation figures are read from those rows) are rewritten.
"""

from django.core.management.base import BaseCommand, CommandError

from eqlm.limits import DEFAULT_MODEL_ID


class Command(BaseCommand):
    help = (
        "Held-out bits/byte, residual quantiles, converged fraction by depth 1-128 (Picard, Anderson); adaptive "
        "halting; the AA score and greedy agreement of the noise and warm starts against zero."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "--model", default=DEFAULT_MODEL_ID, help="a registered model's slug (bundled ones: their id)"
        )
        parser.add_argument("--windows", type=int, default=None, help="held-out windows (default 64)")
        parser.add_argument("--text", default=None, choices=["heldout", "slice"])
        parser.add_argument("--solvers", default=None, help="picard,anderson")
        parser.add_argument("--max-depth", type=int, default=None, help="depths 1..N (default 128, past a serving cap)")
        parser.add_argument("--starts", default=None, help="starts measured against zero: noise,warm (default) or none")
        parser.add_argument("--tolerances", default=None, help="adaptive halting tolerances, e.g. 0.03,0.01,0.003")
        parser.add_argument("--write-fixture", action="store_true", help="also into fixtures/local_results.json")

    def handle(self, *args, **opts):
        from models_app.bundled import bundled_models, register_bundled_models
        from models_app.convergence import LADDER, new_convergence_run, run_convergence_evaluation
        from models_app.convergence_figures import stored_figures
        from models_app.local_results import write_fixture
        from models_app.models import RegisteredModel
        from models_app.services import RegistryError

        register_bundled_models()
        model = RegisteredModel.objects.filter(slug=opts["model"]).first()
        if model is None:
            raise CommandError(f"no registered model {opts['model']!r}")
        options = {
            "windows": opts["windows"],
            "text": opts["text"],
            "solvers": opts["solvers"],
            "max_depth": opts["max_depth"],
            "tolerances": opts["tolerances"],
            "starts": opts["starts"],
        }
        try:
            run = new_convergence_run(model, {k: v for k, v in options.items() if v is not None})
        except RegistryError as exc:
            raise CommandError(str(exc))
        try:
            run = run_convergence_evaluation(run.pk)
        except Exception as exc:
            run.mark_failed(f"{type(exc).__name__}: {exc}")
            raise
        self.stdout.write(f"{model.slug} on {run.device}: {run.results['text']}; rows written: {run.rows_written}")
        figures = stored_figures(model.slug)
        for solver, series in figures["solvers"].items():
            self.stdout.write(f"{solver}: depth, bits/byte, residual median, p95, converged < 0.01")
            converged = series["converged"].get("0.01") or [None] * len(series["depth"])
            for i, depth in enumerate(series["depth"]):
                if depth in LADDER:
                    self.stdout.write(
                        f"  {depth:>3} {series['heldout_bits_per_byte'][i]:8.4f} {series['residual_median'][i]:10.3g}"
                        f" {series['residual_p95'][i]:10.3g} {converged[i]:7.1%}"
                    )
        for point in figures["adaptive"]:
            self.stdout.write(
                f"adaptive {point['solver']} tol {point['tol']:g} cap {point['cap']}: "
                f"{point['mean_iterations']:.2f} iterations, {point['heldout_bits_per_byte']:.4f} bits/byte "
                f"(fixed depth at that mean: {point.get('fixed_bits_per_byte_at_mean_depth') or float('nan'):.4f})"
            )
        for start, found in figures["starts"].items():
            bpb = dict(zip(found["depth"], found["heldout_bits_per_byte"], strict=True))
            self.stdout.write(
                f"picard from {start} at depth {found['at_depth']}: AA cosine {found['aa_cosine']:.4f}, greedy "
                f"agreement {found['greedy_agreement']:.1%}, {bpb[found['at_depth']]:.4f} bits/byte"
            )
        if opts["write_fixture"]:
            path, count = write_fixture(model.slug)
            self.stdout.write(f"wrote {count} rows for {model.slug} to {path}")
            bundled = next((b for b in bundled_models() if b.id == model.slug and b.checkpoint.exists()), None)
            if bundled is not None:  # the card's evaluation figures follow the rows
                from models_app.card_facts import write_facts

                self.stdout.write(f"wrote {write_facts(bundled)}")
