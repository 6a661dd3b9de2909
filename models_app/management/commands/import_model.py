"""Import a checkpoint file (the portal's format or the programme's) into the registry, in this process."""

import json
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError


class Command(BaseCommand):
    help = (
        "Register a checkpoint (the portal's own format, or the programme's config_dict/model_class file), export it "
        "to ONNX and write its folder's facts; prints one JSON line: slug, model_class, parameters, tokenizer, sha256."
    )

    def add_arguments(self, parser):
        parser.add_argument("file", help="a .pt checkpoint, loaded with weights_only=True")
        parser.add_argument("--slug", default="", help="the model's id (default: made from its class and hash)")
        parser.add_argument("--name", default="", help="a display name (default: the slug)")
        parser.add_argument("--card", default="", help="a Markdown model card to show on /models/<slug>/")
        parser.add_argument("--declares", default="", help="the published run it is, EXPERIMENT:ARM:SEED (exp13:B1:42)")
        parser.add_argument("--no-export", action="store_true", help="register only; export later")

    def handle(self, *args, **opts):
        from models_app.imports import RegistryError, register_checkpoint, run_import
        from models_app.models import ModelImport

        path = Path(opts["file"])
        if not path.is_file():
            raise CommandError(f"no checkpoint file at {path}")
        card = Path(opts["card"]) if opts["card"] else None
        if card is not None and not card.is_file():
            raise CommandError(f"no card file at {card}")
        try:
            row, probe = register_checkpoint(
                path, name=opts["name"], slug=opts["slug"], card=card, declares=opts["declares"]
            )
        except RegistryError as exc:
            raise CommandError(f"refused: {exc}") from None
        if not opts["no_export"]:
            job = ModelImport.objects.create(model=row)
            try:
                job = run_import(job.pk)
            except Exception as exc:  # noqa: BLE001 - the row records any failure, then the command exits 1
                job.mark_failed(f"{type(exc).__name__}: {exc}")
                raise CommandError(f"registered {row.slug}, but its export failed: {exc}") from None
        line = {
            "slug": row.slug,
            "model_class": row.model_class,
            "parameters": row.num_params,
            "tokenizer": probe.get("tokenizer", "bytes"),
            "sha256": row.sha256,
        }
        self.stdout.write(json.dumps(line))
