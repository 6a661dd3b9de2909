"""The row store's models move here from benchmarks_app, which created their tables: state only, no table is
dropped, created or copied (each keeps its benchmarks_app_* name through db_table), and the content types (so
permissions given on them) follow the models to this app."""

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models

MOVED = ("sourcefile", "run", "arm", "resultrow")


def _relabel(apps, old: str, new: str) -> None:
    content_type = apps.get_model("contenttypes", "ContentType")
    taken = set(content_type.objects.filter(app_label=new, model__in=MOVED).values_list("model", flat=True))
    content_type.objects.filter(app_label=old, model__in=set(MOVED) - taken).update(app_label=new)


def content_types_follow(apps, schema_editor):
    _relabel(apps, "benchmarks_app", "results")


def content_types_return(apps, schema_editor):
    _relabel(apps, "results", "benchmarks_app")


class Migration(migrations.Migration):

    initial = True

    dependencies = [
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
        ("benchmarks_app", "0008_f45_interval_is_a_normal_interval"),
        ("contenttypes", "0002_remove_content_type_name"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.CreateModel(
                    name='Run',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('run_id', models.CharField(max_length=200, unique=True)),
                        ('experiment', models.CharField(db_index=True, max_length=100)),
                        ('seed', models.IntegerField(blank=True, db_index=True, null=True)),
                        ('seed_inferred', models.BooleanField(default=False, help_text='seed taken from the path, not the file')),
                        ('config_hash', models.CharField(blank=True, max_length=128)),
                        ('git_commit', models.CharField(blank=True, max_length=64)),
                        ('hardware', models.CharField(blank=True, max_length=100)),
                        ('config', models.JSONField(blank=True, default=dict)),
                        ('notes', models.TextField(blank=True)),
                        ('created_at', models.DateTimeField(auto_now_add=True)),
                    ],
                    options={
                        'db_table': 'benchmarks_app_run',
                        'ordering': ['experiment', 'seed', 'run_id'],
                    },
                ),
                migrations.CreateModel(
                    name='Arm',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('label', models.CharField(max_length=100)),
                        ('model_family', models.CharField(blank=True, max_length=50)),
                        ('model_name', models.CharField(blank=True, max_length=200)),
                        ('num_params', models.BigIntegerField(blank=True, null=True)),
                        ('recipe', models.JSONField(blank=True, default=dict)),
                        ('run', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='arms', to='results.run')),
                    ],
                    options={
                        'db_table': 'benchmarks_app_arm',
                        'ordering': ['run', 'label'],
                    },
                ),
                migrations.CreateModel(
                    name='SourceFile',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('status', models.CharField(choices=[('queued', 'Queued'), ('running', 'Running'), ('done', 'Done'), ('failed', 'Failed')], db_index=True, default='queued', max_length=16)),
                        ('progress', models.FloatField(default=0.0)),
                        ('progress_message', models.CharField(blank=True, max_length=200)),
                        ('error', models.TextField(blank=True)),
                        ('created_at', models.DateTimeField(auto_now_add=True)),
                        ('started_at', models.DateTimeField(blank=True, null=True)),
                        ('finished_at', models.DateTimeField(blank=True, null=True)),
                        ('requeue_count', models.PositiveSmallIntegerField(default=0, editable=False)),
                        ('requeued_at', models.DateTimeField(blank=True, editable=False, null=True)),
                        ('task_id', models.CharField(blank=True, editable=False, max_length=64)),
                        ('file', models.FileField(blank=True, upload_to='benchmarks/uploads/%Y/%m/')),
                        ('companion', models.FileField(blank=True, help_text='sibling config.yaml', upload_to='benchmarks/uploads/%Y/%m/')),
                        ('sha256', models.CharField(db_index=True, max_length=64)),
                        ('original_name', models.CharField(blank=True, max_length=255)),
                        ('path_hint', models.CharField(blank=True, max_length=255)),
                        ('requested_format', models.CharField(blank=True, max_length=32)),
                        ('detected_format', models.CharField(blank=True, max_length=32)),
                        ('size_bytes', models.BigIntegerField(default=0)),
                        ('rows_created', models.IntegerField(default=0)),
                        ('rows_seen', models.IntegerField(default=0)),
                        ('errors', models.JSONField(blank=True, default=list, help_text='[{pointer|line, message}]')),
                        ('summary', models.CharField(blank=True, max_length=300)),
                        ('duplicate_of', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to='results.sourcefile')),
                        ('uploader', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, to=settings.AUTH_USER_MODEL)),
                    ],
                    options={
                        'db_table': 'benchmarks_app_sourcefile',
                        'ordering': ['-created_at'],
                    },
                ),
                migrations.AddField(
                    model_name='run',
                    name='source_file',
                    field=models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='runs', to='results.sourcefile'),
                ),
                migrations.CreateModel(
                    name='ResultRow',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('experiment', models.CharField(max_length=100)),
                        ('arm_label', models.CharField(max_length=100)),
                        ('seed', models.IntegerField(blank=True, null=True)),
                        ('metric', models.CharField(max_length=100)),
                        ('value', models.FloatField()),
                        ('unit', models.CharField(blank=True, max_length=30)),
                        ('n', models.IntegerField(blank=True, help_text='items evaluated (e.g. BLiMP pairs)', null=True)),
                        ('step', models.IntegerField(blank=True, help_text='training step; empty = end of run', null=True)),
                        ('condition', models.JSONField(blank=True, default=dict)),
                        ('condition_key', models.CharField(blank=True, help_text='canonical JSON of the condition', max_length=255)),
                        ('source_pointer', models.CharField(blank=True, help_text='JSON pointer or line in the source', max_length=255)),
                        ('arm', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='rows', to='results.arm')),
                        ('source_file', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='rows', to='results.sourcefile')),
                    ],
                    options={
                        'db_table': 'benchmarks_app_resultrow',
                        'ordering': ['experiment', 'arm_label', 'metric', 'seed', 'step'],
                    },
                ),
                migrations.AddConstraint(
                    model_name='arm',
                    constraint=models.UniqueConstraint(fields=('run', 'label'), name='bench_arm_unique_label'),
                ),
                migrations.AddIndex(
                    model_name='resultrow',
                    index=models.Index(fields=['experiment', 'arm_label', 'metric', 'condition_key', 'step', 'seed', 'value'], name='bench_row_lookup'),
                ),
                migrations.AddIndex(
                    model_name='resultrow',
                    index=models.Index(fields=['metric', 'experiment'], name='bench_row_metric'),
                ),
                migrations.AddConstraint(
                    model_name='resultrow',
                    constraint=models.UniqueConstraint(condition=models.Q(('step__isnull', False)), fields=('arm', 'metric', 'condition_key', 'step'), name='bench_row_unique_step'),
                ),
                migrations.AddConstraint(
                    model_name='resultrow',
                    constraint=models.UniqueConstraint(condition=models.Q(('step__isnull', True)), fields=('arm', 'metric', 'condition_key'), name='bench_row_unique_final'),
                ),
            ],
        ),
        migrations.RunPython(content_types_follow, content_types_return),
    ]
