"""What an offload plan folder needs before its runs start."""

from eqlm.offload import needs_debian_corpus


def plan_of(*corpora_per_run: list[str]) -> dict:
    """A plan as offload_experiment --plan writes it: each entry names the corpora of its stage chain."""
    runs = [
        {"folder": f"a-seed{i}", "recipe": "depth-settle", "stage": "", "overrides": [], "corpora": corpora}
        for i, corpora in enumerate(corpora_per_run)
    ]
    return {"version": 1, "runs": runs}


def test_a_plan_whose_runs_read_the_kjv_installs_it_once_before_they_start(tmp_path):
    assert needs_debian_corpus(plan_of(["kjv"]), tmp_path)
    assert needs_debian_corpus(plan_of(["file"], ["kjv", "file"]), tmp_path)  # one run of several is enough


def test_a_plan_folder_that_carries_the_dump_needs_no_package(tmp_path):
    (tmp_path / "kjv.txt").write_text("In the beginning\n")
    assert not needs_debian_corpus(plan_of(["kjv"]), tmp_path)


def test_a_plan_whose_runs_read_their_own_corpus_files_needs_no_package(tmp_path):
    assert not needs_debian_corpus(plan_of(["file"], ["file"]), tmp_path)
