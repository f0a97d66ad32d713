"""Publish to the Hugging Face Hub.

    python -m transformer.hub push-model checkpoints/NAME --repo-id OWNER/NAME [--dry-run]
    python -m transformer.hub push-space --repo-id OWNER/SPACE [--dry-run]
    python -m transformer.hub export-hf checkpoints/NAME OUT_DIR


Both go through `huggingface_hub.upload_folder`, which stores large files with LFS/Xet
itself. `--dry-run` lists what would be sent and flags files over the Hub's plain-git limit.
`export-hf` writes a checkpoint as a MarianMT folder that `transformers` loads with no code of ours.
"""
from __future__ import annotations

import argparse
import fnmatch
from pathlib import Path

from .checkpoint import FILES

ROOT = Path(__file__).resolve().parents[1]
PLAIN_GIT_LIMIT = 10 * 1024 * 1024  # bytes; larger files need LFS in a plain `git push`
# heads.json and heads.png: the corpus head importance and the card's figure of it (transformer.heads).
MODEL_PATTERNS = [*FILES, "metrics.jsonl", "README.md", "heads.json", "heads.png"]
SPACE_PATTERNS = ["app.py", "pre-requirements.txt", "requirements.txt", "README.md", "LICENSE", "transformer/*.py",
                  "anatomy/*.py", "ui/*.py", "ui/static/*", "viz/*.py", "assets/*", "checkpoints/*/*"]


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


def push(folder: Path, patterns: list[str], repo_id: str, repo_type: str, dry_run: bool, message: str) -> str:
    files = plan(folder, patterns)
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
                      allow_patterns=[rel for rel, _ in files], commit_message=message)
    return f"uploaded to https://huggingface.co/{'spaces/' if repo_type == 'space' else ''}{repo_id}:\n{summary}"


def main(argv: list[str] | None = None) -> str:
    p = argparse.ArgumentParser(prog="python -m transformer.hub", description="Publish to the Hugging Face Hub")
    sub = p.add_subparsers(dest="command", required=True)
    model = sub.add_parser("push-model", help="a checkpoint folder (weights, config, tokenizer, card)")
    model.add_argument("checkpoint", type=Path)
    space = sub.add_parser("push-space", help="the app, with its shipped checkpoints")
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
    else:
        out = push(ROOT, SPACE_PATTERNS, args.repo_id, "space", args.dry_run, "Upload Transformer Anatomy")
    print(out)
    return out


if __name__ == "__main__":
    main()
