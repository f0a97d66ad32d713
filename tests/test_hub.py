"""Hub publishing, by dry run (the Hub is not reachable from the test machines)."""
from __future__ import annotations

import shutil

import pytest

from transformer import hub


def test_push_model_dry_run_lists_the_checkpoint_and_flags_big_files(copy_checkpoint, tmp_path):
    folder = tmp_path / "m"
    shutil.copytree(copy_checkpoint, folder)
    (folder / "README.md").write_text("card")
    with open(folder / "model.safetensors", "r+b") as f:
        f.truncate(11 * 1024 * 1024)  # size is all a dry run looks at
    (folder / "notes.txt").write_text("not part of a checkpoint")
    out = hub.main(["push-model", str(folder), "--repo-id", "someone/copy", "--dry-run"])
    assert "dry run: would upload to model someone/copy" in out
    listed = [line.split()[-1] for line in out.splitlines()[1:-1] if "MB  " in line and "[" not in line]
    assert sorted(listed) == ["README.md", "config.json", "metrics.jsonl", "tokenizer.model"]
    assert "model.safetensors  [over 10 MB" in out and "notes.txt" not in out


def test_push_space_dry_run_sends_the_app_not_tests_or_run_state():
    out = hub.main(["push-space", "--repo-id", "someone/anatomy", "--dry-run"])
    for expected in ("app.py", "pre-requirements.txt", "requirements.txt", "README.md", "transformer/model.py"):
        assert f"  {expected}" in out
    for absent in ("tests/", "runs/", ".git", "__pycache__", "benchmarks/"):
        assert absent not in out


@pytest.mark.parametrize("argv", [["push-model", "nowhere", "--repo-id", "a/b", "--dry-run"],
                                  ["push-space", "--repo-id", "no-owner", "--dry-run"]])
def test_bad_arguments_are_refused_clearly(argv):
    with pytest.raises(SystemExit, match="checkpoint folder|OWNER/NAME"):
        hub.main(argv)
