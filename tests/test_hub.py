"""Hub publishing, by dry run (the Hub is not reachable from the test machines)."""
from __future__ import annotations

import shutil

import pytest
import yaml

from transformer import hub

# What the app reads of an opus-mt repo: config, weights (one format), tokenizer, generation config, model card.
READ = {"config.json", "pytorch_model.bin", "source.spm", "target.spm", "vocab.json", "tokenizer_config.json",
        "generation_config.json", "README.md"}


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
    for expected in ("app.py", "pre-requirements.txt", "requirements.txt", "README.md", "docs/architecture.md",
                     "transformer/model.py"):
        assert f"  {expected}" in out
    for absent in ("tests/", "runs/", ".git", "__pycache__", "benchmarks/"):
        assert absent not in out
    readme = hub.ROOT / "README.md"
    assert f"{readme.stat().st_size / 1e6:10.2f} MB  README.md" in out  # sent as it is
    assert "preload_from_hub" not in out and "preload_from_hub" not in hub.front_matter(readme.read_text("utf-8"))


def _front_matter(out: str) -> dict:
    """The front matter a push-space output shows (after its file list)."""
    shown = out[out.index("front matter"):]
    return hub.front_matter(shown[shown.index("---\n"):] + "\n")


def test_push_space_with_opus_mt_dry_run_shows_the_preloads_and_leaves_the_readme():
    readme = hub.ROOT / "README.md"
    before = readme.read_bytes()
    out = hub.main(["push-space", "--repo-id", "someone/anatomy", "--with-opus-mt", "--dry-run"])
    assert readme.read_bytes() == before
    meta = _front_matter(out)
    entries = [hub.Preload.parse(e) for e in meta.pop("preload_from_hub")]
    assert [e.repo for e in entries] == ["Helsinki-NLP/opus-mt-de-en", "Helsinki-NLP/opus-mt-en-de"]
    for e in entries:
        assert set(e.files) == READ and e.revision is None  # no tf_model.h5, rust_model.ot, flax weights
    assert meta == hub.front_matter(before.decode("utf-8"))  # the rest of the configuration as it was
    uploaded = hub.with_preloads(before.decode("utf-8"), entries).encode("utf-8")
    assert f"{len(uploaded) / 1e6:10.2f} MB  README.md" in out
    assert uploaded.endswith(before[before.index(b"\n---\n", 4) + 5:])  # the text after it byte for byte


class FakeApi:
    """HfApi as push-space uses it, recording the uploads; the opus-mt repos hold what they hold on the Hub, less
    en-de's generation_config.json (`lacking`)."""

    calls: list = []
    lacking = {"Helsinki-NLP/opus-mt-en-de": {"generation_config.json"}}

    def list_repo_files(self, repo_id):
        return sorted((READ | {".gitattributes", "tf_model.h5", "rust_model.ot", "flax_model.msgpack"})
                      - self.lacking.get(repo_id, set()))

    def create_repo(self, repo_id, **kwargs):
        self.calls.append(("create_repo", repo_id))

    def upload_folder(self, **kwargs):
        self.calls.append(("upload_folder", kwargs["allow_patterns"]))

    def upload_file(self, **kwargs):
        self.calls.append(("upload_file", kwargs["path_in_repo"], kwargs["path_or_fileobj"]))


def test_push_space_with_opus_mt_uploads_a_rewritten_readme_copy_last(monkeypatch):
    import huggingface_hub

    monkeypatch.setattr(huggingface_hub, "HfApi", FakeApi)
    monkeypatch.setattr(FakeApi, "calls", [])
    readme = hub.ROOT / "README.md"
    before = readme.read_bytes()
    out = hub.main(["push-space", "--repo-id", "someone/anatomy", "--with-opus-mt"])
    assert readme.read_bytes() == before
    (_, repo), (_, allowed), (_, path, content) = FakeApi.calls
    assert repo == "someone/anatomy" and "app.py" in allowed and "README.md" not in allowed and path == "README.md"
    entries = [hub.Preload.parse(e) for e in hub.front_matter(content.decode("utf-8"))["preload_from_hub"]]
    assert {e.repo: set(e.files) for e in entries} == {"Helsinki-NLP/opus-mt-de-en": READ,
                                                        "Helsinki-NLP/opus-mt-en-de": READ - {"generation_config.json"}}
    assert _front_matter(out)["preload_from_hub"] == [e.entry for e in entries]


def test_push_space_with_opus_mt_refuses_a_repo_without_weights_before_uploading(monkeypatch):
    import huggingface_hub

    monkeypatch.setattr(huggingface_hub, "HfApi", FakeApi)
    monkeypatch.setattr(FakeApi, "calls", [])
    monkeypatch.setattr(FakeApi, "lacking", {"Helsinki-NLP/opus-mt-de-en": {"pytorch_model.bin"}})
    with pytest.raises(SystemExit, match="opus-mt-de-en has no pytorch_model.bin"):
        hub.main(["push-space", "--repo-id", "someone/anatomy", "--with-opus-mt"])
    assert FakeApi.calls == []


def test_preload_entries_read_as_spaces_writes_them():
    entry = hub.Preload.parse("owner/name config.json,pytorch_model.bin " + "a" * 40)
    assert entry == hub.Preload("owner/name", ("config.json", "pytorch_model.bin"), "a" * 40)
    assert entry.source == "hf://owner/name@" + "a" * 40 and hub.Preload.parse(entry.entry) == entry
    assert hub.Preload.parse("owner/name").source == "hf://owner/name"
    readme = hub.with_preloads("---\ntitle: x\n---\nbody\n", [entry])
    assert hub.preloads(readme) == [entry] and yaml.safe_load(readme.split("---\n")[1])["title"] == "x"
    with pytest.raises(ValueError, match="already has preload_from_hub"):
        hub.with_preloads(readme, [entry])


@pytest.mark.parametrize("argv", [["push-model", "nowhere", "--repo-id", "a/b", "--dry-run"],
                                  ["push-space", "--repo-id", "no-owner", "--dry-run"]])
def test_bad_arguments_are_refused_clearly(argv):
    with pytest.raises(SystemExit, match="checkpoint folder|OWNER/NAME"):
        hub.main(argv)
