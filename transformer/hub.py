"""Publish to the Hugging Face Hub.

    python -m transformer.hub push-model checkpoints/NAME --repo-id OWNER/NAME [--dry-run]
    python -m transformer.hub push-space --repo-id OWNER/SPACE [--with-opus-mt] [--dry-run]
    python -m transformer.hub export-hf checkpoints/NAME OUT_DIR


Both go through `huggingface_hub.upload_folder`, which stores large files with LFS/Xet
itself. `--dry-run` lists what would be sent and flags files over the Hub's plain-git limit.
`export-hf` writes a checkpoint as a MarianMT folder that `transformers` loads with no code of ours.
`--with-opus-mt` uploads after the rest a copy of README.md whose front matter has Spaces preload the opus-mt models
at build time (`preload_from_hub`); the app lists what its README preloads (anatomy.registry.preloaded_sources).
"""
from __future__ import annotations

import argparse
import fnmatch
import re
from dataclasses import dataclass
from pathlib import Path

import yaml  # PyYAML: a dependency of gradio and huggingface_hub

from . import marian
from .checkpoint import FILES

ROOT = Path(__file__).resolve().parents[1]
PLAIN_GIT_LIMIT = 10 * 1024 * 1024  # bytes; larger files need LFS in a plain `git push`
# heads.json and heads.png: the corpus head importance and the card's figure of it (transformer.heads).
MODEL_PATTERNS = [*FILES, "metrics.jsonl", "README.md", "heads.json", "heads.png"]
# docs/ goes too: the README links to it, and a Space's page should follow those links.
SPACE_PATTERNS = ["app.py", "pre-requirements.txt", "requirements.txt", "README.md", "LICENSE", "docs/*",
                  "transformer/*.py", "anatomy/*.py", "anatomy/viewer/*", "anatomy/viewer/plotly/*", "ui/*.py",
                  "ui/static/*", "viz/*.py", "assets/*", "checkpoints/*/*"]
OPUS_MT = ("Helsinki-NLP/opus-mt-de-en", "Helsinki-NLP/opus-mt-en-de")
# What the app reads of a MarianMT repo (transformer.marian, and README.md for its model card), not the repos'
# TensorFlow and Rust copies of the weights (tf_model.h5, rust_model.ot). Spaces fetches named files, so the weights
# are pytorch_model.bin, which every opus-mt repo has (not all have model.safetensors; the loader reads either).
OPUS_MT_FILES = ("config.json", "pytorch_model.bin", *marian.TOKENIZER_FILES, "tokenizer_config.json",
                 "generation_config.json", "README.md")
OPTIONAL_FILES = ("tokenizer_config.json", "generation_config.json", "README.md")  # the loader does without them
FRONT_MATTER = re.compile(r"---\n(.*?\n)---\n", flags=re.S)


@dataclass(frozen=True)
class Preload:
    """One `preload_from_hub` entry of a Space's README: a Hub repo, the files Spaces downloads into the Hugging Face
    cache at build time (all of them when none are named), and a commit (else the main branch)."""

    repo: str
    files: tuple[str, ...] = ()
    revision: str | None = None

    @classmethod
    def parse(cls, entry: str) -> "Preload":
        """From the Spaces syntax `owner/name [file1,file2 [commit]]`."""
        repo, files, revision = (str(entry).split() + ["", ""])[:3]
        return cls(repo, tuple(f for f in files.split(",") if f), revision or None)

    @property
    def entry(self) -> str:
        return " ".join(x for x in (self.repo, ",".join(self.files), self.revision or "") if x)

    @property
    def source(self) -> str:
        """The app's name for it: hf://owner/name[@commit]."""
        return f"hf://{self.repo}" + (f"@{self.revision}" if self.revision else "")


def front_matter(readme: str) -> dict:
    """A README's YAML front matter (between its first two `---` lines); {} when it has none."""
    match = FRONT_MATTER.match(readme)
    try:
        meta = yaml.safe_load(match.group(1)) if match else {}
    except yaml.YAMLError:
        return {}
    return meta if isinstance(meta, dict) else {}


def preloads(readme: str) -> list[Preload]:
    """The `preload_from_hub` entries of a Space's README."""
    entries = front_matter(readme).get("preload_from_hub") or []
    return [Preload.parse(e) for e in entries if isinstance(e, str) and e.strip()] \
        if isinstance(entries, list) else []


def with_preloads(readme: str, entries: list[Preload]) -> str:
    """`readme` with `entries` as its front matter's `preload_from_hub`, the rest of it byte for byte."""
    match = FRONT_MATTER.match(readme)
    if match is None:
        raise ValueError("README.md has no front matter (YAML between --- lines) to add preload_from_hub to")
    if "preload_from_hub" in front_matter(readme):
        raise ValueError("README.md's front matter already has preload_from_hub: remove it, or leave out "
                         "--with-opus-mt")
    block = "preload_from_hub:\n" + "".join(f"  - {e.entry}\n" for e in entries)
    return readme[:match.end(1)] + block + readme[match.end(1):]


def opus_mt_preloads(check: bool) -> list[Preload]:
    """The opus-mt models' entries. With check (a real push), each file is looked up on the Hub first: a missing
    optional one is left out, a missing required one refused, so that the Space's build never asks for a file
    its repo lacks."""
    if not check:
        return [Preload(repo, OPUS_MT_FILES) for repo in OPUS_MT]
    from huggingface_hub import HfApi

    api, entries = HfApi(), []
    for repo in OPUS_MT:
        present = set(api.list_repo_files(repo))
        missing = [f for f in OPUS_MT_FILES if f not in present and f not in OPTIONAL_FILES]
        if missing:
            raise SystemExit(f"{repo} has no {', '.join(missing)} on the Hub: cannot preload it")
        entries.append(Preload(repo, tuple(f for f in OPUS_MT_FILES if f in present)))
    return entries


def plan(folder: Path, patterns: list[str]) -> list[tuple[str, int]]:
    """(relative path, size) of the files under `folder` that match `patterns`, hidden ones excluded."""
    files = []
    for path in sorted(folder.rglob("*")):
        rel = path.relative_to(folder).as_posix()
        if path.is_file() and not any(part.startswith(".") for part in Path(rel).parts) \
                and any(fnmatch.fnmatchcase(rel, p) for p in patterns):
            files.append((rel, path.stat().st_size))
    return files


def report(files: list[tuple[str, int]]) -> str:
    lines = []
    for rel, size in files:
        flag = "  [over 10 MB: needs LFS in a plain git push; upload_folder handles it]" \
            if size > PLAIN_GIT_LIMIT else ""
        lines.append(f"{size / 1e6:10.2f} MB  {rel}{flag}")
    lines.append(f"{len(files)} files, {sum(s for _, s in files) / 1e6:.2f} MB in all")
    return "\n".join(lines)


def push(folder: Path, patterns: list[str], repo_id: str, repo_type: str, dry_run: bool, message: str,
         rewritten: dict[str, bytes] | None = None) -> str:
    """Upload the files of `folder` that match `patterns`; those in `rewritten` (by relative path) with that
    content instead of their own, which stays untouched."""
    rewritten = rewritten or {}
    files = [(rel, len(rewritten[rel]) if rel in rewritten else size) for rel, size in plan(folder, patterns)]
    if not files:
        raise SystemExit(f"nothing to upload from {folder}")
    summary = report(files)
    if dry_run:
        return f"dry run: would upload to {repo_type} {repo_id}:\n{summary}"
    from huggingface_hub import HfApi

    api = HfApi()
    api.create_repo(repo_id, repo_type=repo_type, exist_ok=True,
                    **({"space_sdk": "gradio"} if repo_type == "space" else {}))
    api.upload_folder(folder_path=folder, repo_id=repo_id, repo_type=repo_type,
                      allow_patterns=[rel for rel, _ in files if rel not in rewritten], commit_message=message)
    for rel in [rel for rel, _ in files if rel in rewritten]:  # last: a Space builds each commit; the last wins
        api.upload_file(path_or_fileobj=rewritten[rel], path_in_repo=rel, repo_id=repo_id, repo_type=repo_type,
                        commit_message=message)
    return f"uploaded to https://huggingface.co/{'spaces/' if repo_type == 'space' else ''}{repo_id}:\n{summary}"


def main(argv: list[str] | None = None) -> str:
    p = argparse.ArgumentParser(prog="python -m transformer.hub", description="Publish to the Hugging Face Hub")
    sub = p.add_subparsers(dest="command", required=True)
    model = sub.add_parser("push-model", help="a checkpoint folder (weights, config, tokenizer, card)")
    model.add_argument("checkpoint", type=Path)
    space = sub.add_parser("push-space", help="the app, with its shipped checkpoints")
    space.add_argument("--with-opus-mt", action="store_true",
                       help=f"have the Space preload {' and '.join(OPUS_MT)} at build time and list them")
    for s in (model, space):
        s.add_argument("--repo-id", required=True, help="OWNER/NAME")
        s.add_argument("--dry-run", action="store_true", help="list what would be sent; send nothing")
    export = sub.add_parser("export-hf", help="a checkpoint as a transformers MarianMT folder")
    export.add_argument("checkpoint", help="a checkpoint folder or hf://owner/name")
    export.add_argument("out_dir", type=Path)
    args = p.parse_args(argv)
    if args.command == "export-hf":
        from . import checkpoint, marian

        try:
            folder = marian.export(checkpoint.load(args.checkpoint), args.out_dir)
        except (checkpoint.CheckpointError, marian.MarianError) as err:
            raise SystemExit(f"export-hf: {err}") from err
        out = f"wrote {folder} (loads with transformers' MarianMTModel and MarianTokenizer)"
        print(out)
        return out
    if args.repo_id.count("/") != 1:
        raise SystemExit(f"--repo-id must be OWNER/NAME, got {args.repo_id!r}")
    if args.command == "push-model":
        if not all((args.checkpoint / f).is_file() for f in FILES):
            raise SystemExit(f"{args.checkpoint} is not a checkpoint folder (needs {', '.join(FILES)})")
        out = push(args.checkpoint, MODEL_PATTERNS, args.repo_id, "model", args.dry_run,
                   f"Upload {args.checkpoint.name}")
    elif args.with_opus_mt:
        readme = (ROOT / "README.md").read_bytes().decode("utf-8")  # not read_text: its line ends stay as they are
        try:
            uploaded = with_preloads(readme, opus_mt_preloads(check=not args.dry_run))
        except ValueError as err:
            raise SystemExit(f"push-space: {err}") from err
        out = push(ROOT, SPACE_PATTERNS, args.repo_id, "space", args.dry_run, "Upload Transformer Anatomy",
                   {"README.md": uploaded.encode("utf-8")})
        shown = FRONT_MATTER.match(uploaded).group(0).rstrip("\n")
        out += f"\nREADME.md goes up with this front matter (the local file is left as it is):\n{shown}"
    else:
        out = push(ROOT, SPACE_PATTERNS, args.repo_id, "space", args.dry_run, "Upload Transformer Anatomy")
    print(out)
    return out


if __name__ == "__main__":
    main()
