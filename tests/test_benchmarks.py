"""The benchmark scripts start the way a newcomer types them: as a file or as a module, from the repository
root or from elsewhere (`--help` only: no timed test)."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # real checkpoints or subprocesses

ROOT = Path(__file__).resolve().parents[1]
SCRIPTS = ("decode", "train_speed", "load", "page")


@pytest.mark.parametrize("script", SCRIPTS)
@pytest.mark.parametrize("where", ("root", "elsewhere"))
@pytest.mark.parametrize("how", ("file", "module"))
def test_help_runs(script, where, how, tmp_path):
    cwd = ROOT if where == "root" else tmp_path
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    if how == "file":
        path = ROOT / "benchmarks" / f"{script}.py"
        command = [sys.executable, str(path.relative_to(ROOT) if where == "root" else path), "--help"]
    else:
        command = [sys.executable, "-m", f"benchmarks.{script}", "--help"]
        if where == "elsewhere":  # -m finds a package on sys.path only: name the repository, as one must
            env["PYTHONPATH"] = str(ROOT)
    done = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "usage:" in done.stdout and "--help" in done.stdout
