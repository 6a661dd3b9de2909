"""Train a model from its recipe file (models/NAME/recipe.toml, eqlm/recipes/NAME.toml): resumable, stage or chain."""

from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError


class Command(BaseCommand):
    requires_system_checks: list = []  # training does not depend on the web app's checks

    help = (
        "Train a recipe's stage (default: the last) and every stage it starts from, each into OUT/<stage>. Started "
        "again with the same recipe, overrides, threads and --out, it resumes from each stage's last state and gives "
        "the same model as an uninterrupted run. Recipes: models/*/recipe.toml (the bundled models' own) and "
        "eqlm/recipes/*.toml."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "--recipe",
            required=True,
            help="a recipe name (models/NAME/recipe.toml, eqlm/recipes/NAME.toml) or a .toml path",
        )
        parser.add_argument("--stage", default=None, help="the stage to train (default: the recipe's last)")
        parser.add_argument(
            "--set",
            action="append",
            default=[],
            metavar="KEY=VALUE",
            help="override a stage key, e.g. seed=43 or schedule.lr=1e-3 (TOML values); repeatable",
        )
        parser.add_argument("--out", default=None, help="default: var/train/<recipe>")
        parser.add_argument("--threads", type=int, default=1)
        parser.add_argument("--max-minutes", type=float, default=None, help="stop after this long; resume to finish")

    def handle(self, *args, **opts):
        from eqlm.recipe import RecipeError, load_recipe
        from eqlm.trainer import train_chain

        try:
            recipe = load_recipe(opts["recipe"])
            recipe.resolve(opts["stage"], opts["set"])  # refuse a bad override before anything trains
        except RecipeError as exc:
            raise CommandError(str(exc)) from exc
        out = Path(opts["out"] or Path(settings.BASE_DIR) / "var" / "train" / recipe.name)

        def log(line: str) -> None:
            self.stdout.write(line)
            self.stdout.flush()

        try:
            outcome = train_chain(
                recipe,
                out,
                opts["stage"],
                opts["set"],
                log=log,
                threads=opts["threads"],
                max_minutes=opts["max_minutes"],
            )
        except ValueError as exc:  # a resume of another run, or one on other threads
            raise CommandError(str(exc)) from exc
        if outcome.finished:
            self.stdout.write(self.style.SUCCESS(f"checkpoint: {outcome.checkpoint}"))
        else:
            self.stdout.write(f"stopped at step {outcome.step}/{outcome.planned_steps}: run the same command to resume")
