"""What an offload plan folder needs before its runs start."""

from eqlm.offload import needs_debian_corpus


def plan_of(recipe: str, stage: str = "", overrides=()) -> dict:
    return {
        "version": 1,
        "runs": [{"folder": "a-seed1", "recipe": recipe, "stage": stage, "overrides": list(overrides)}],
    }


def test_a_plan_whose_runs_read_the_kjv_installs_it_once_before_they_start(tmp_path):
    assert needs_debian_corpus(plan_of("depth-settle", "deep", ["seed=43"]), tmp_path)
    assert needs_debian_corpus(plan_of("depth-settle"), tmp_path)  # the last stage, through its chain


def test_a_plan_folder_that_carries_the_dump_needs_no_package(tmp_path):
    (tmp_path / "kjv.txt").write_text("In the beginning\n")
    assert not needs_debian_corpus(plan_of("depth-settle"), tmp_path)


def test_a_run_that_reads_its_own_corpus_file_needs_no_package(tmp_path):
    recipe = tmp_path / "own.toml"
    (tmp_path / "text.txt").write_text("abc " * 200)
    recipe.write_text(
        f"""
[model]
class = "EqLM"
d_model = 16
n_heads = 2
d_mlp = 32
max_positions = 32

[corpus]
file = "{tmp_path / "text.txt"}"

[stages.only]
steps = 2
batch_size = 2
seq_len = 16

[stages.only.terms.final_ce]
weight = 1.0
"""
    )
    assert not needs_debian_corpus(plan_of(str(recipe)), tmp_path)
