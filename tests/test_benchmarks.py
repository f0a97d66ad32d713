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
SCRIPTS = ("decode", "train_speed", "load", "page", "peers")


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


def test_peers_quick_prints_the_ratios():
    """benchmarks/peers.py --quick: a tiny random model; every side's ids were asserted equal on the way."""
    pytest.importorskip("transformers")
    done = subprocess.run([sys.executable, "benchmarks/peers.py", "--quick"], cwd=ROOT, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    last = done.stdout.strip().splitlines()[-1]
    keys = [part.split("=")[0] for part in last.split()]
    assert keys == ["ours_vs_hf_capture", "ours_vs_hf_plain", "ours_vs_ct2"]
    assert all(float(part.split("=")[1]) > 0 for part in last.split()[:2])
