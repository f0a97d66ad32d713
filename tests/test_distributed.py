"""Data-parallel training through torchrun (gloo, CPU): the same weights as one process, resumable, multi-node."""
from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from transformer import train
from transformer.config import ModelConfig
from transformer.model import Transformer

from .conftest import write_corpus

# several torchrun launches, each of two processes: scripts/test.sh runs them alone
pytestmark = [pytest.mark.slow, pytest.mark.solo]

ROOT = Path(__file__).resolve().parents[1]
MODEL = ["--d-model", "64", "--n-heads", "4", "--d-ff", "128", "--layers", "2", "--dropout", "0", "--max-len", "64",
         "--vocab-size", "60", "--lr", "3e-3", "--warmup", "2", "--ema-decay", "0", "--threads", "1", "--no-progress",
         "--precision", "fp32"]  # bf16 rounds differently per batch split: equivalence is an fp32 property
ENV = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"}


def torchrun(*args: str, nproc: int = 2, script: str = "-m transformer.train",
             rdzv: tuple[str, ...] = ("--standalone",), **popen) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "torch.distributed.run", *rdzv, f"--nproc_per_node={nproc}",
                             *script.split(), *args], cwd=ROOT, env=ENV, text=True, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, **popen)


def finish(proc: subprocess.Popen) -> str:
    out = proc.communicate(timeout=240)[0]
    assert proc.returncode == 0, out[-3000:]
    return out


def weights(run: Path) -> dict[str, torch.Tensor]:
    return torch.load(run / "state.pt", weights_only=True)["model"]


def assert_same(a: dict, b: dict, atol: float = 1e-5) -> None:
    """Equal within float tolerance, except the attention key biases: their true gradient is 0 (softmax ignores a
    shift shared by every key), so Adam turns the rounding noise of that 0 into steps of the learning rate."""
    for name, value in a.items():
        other = b[name]
        if name.endswith("W_qkv.bias"):
            d = value.numel() // 3
            value, other = torch.cat([value[:d], value[2 * d:]]), torch.cat([other[:d], other[2 * d:]])
        assert torch.allclose(value, other, atol=atol, rtol=0), (name, float((value - other).abs().max()))


def moved(a: dict, config: dict) -> float:
    torch.manual_seed(1)  # train.py's model seed
    start = Transformer(ModelConfig.from_dict(config)).state_dict()
    return max(float((a[k] - start[k]).abs().max()) for k in a)


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> Path:
    return write_corpus(tmp_path_factory.mktemp("ddp") / "corpus", n_train=2000, n_val=10, seed=3)


def args_for(corpus: Path, root: Path, *extra: str) -> list[str]:
    """On the CPU wherever the tests run: the runs compared must share a device, and two nodes on one machine
    would otherwise put two NCCL ranks on its one GPU."""
    return ["--src", "de", "--tgt", "en", "--data-dir", str(corpus), "--out", str(root / "ckpt"),
            "--run-dir", str(root / "run"), "--device", "cpu", *MODEL, *extra]


FEW_STEPS = ("--epochs", "1", "--max-train-pairs", "240", "--tokens-per-batch", "400")


@pytest.fixture(scope="module")
def two_processes(corpus, tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("two")
    finish(torchrun(*args_for(corpus, root, *FEW_STEPS)))
    return root


def test_two_processes_or_two_micro_batches_train_the_weights_of_one_and_a_wrong_split_does_not(corpus, two_processes,
                                                                                                 tmp_path):
    wrong = tmp_path / "wrong"
    # started first, as its launch's imports overlap the in-process runs
    wrong_split = torchrun(*args_for(corpus, wrong, *FEW_STEPS), script="tests/distributed_wrong_split.py")
    threads = torch.get_num_threads()
    train.main(args_for(corpus, tmp_path / "one", *FEW_STEPS))
    torch.set_num_threads(threads)
    one, two = weights(tmp_path / "one" / "run"), weights(two_processes / "run")
    state = torch.load(tmp_path / "one" / "run" / "state.pt", weights_only=True)
    assert state["position"]["step"] >= 3
    assert moved(one, state["config"]) > 100 * 1e-5  # far beyond the tolerance
    assert_same(one, two)
    metrics = json.loads((two_processes / "run" / "metrics.jsonl").read_text().splitlines()[-1])
    train.main(args_for(corpus, tmp_path / "accumulated", *FEW_STEPS, "--accumulate", "2"))
    torch.set_num_threads(threads)
    assert_same(one, weights(tmp_path / "accumulated" / "run"))  # two micro-batches per step: the same steps
    a, b = metrics["tokens_by_rank"]
    assert a != b and abs(a - b) < 0.1 * (a + b)  # the ranks held different, similar token counts

    finish(wrong_split)
    with pytest.raises(AssertionError):
        assert_same(one, weights(wrong / "run"))


def test_sigterm_to_torchrun_saves_and_the_run_resumes_to_the_uninterrupted_weights(corpus, tmp_path):
    many = ("--epochs", "1", "--tokens-per-batch", "120", "--save-every", "0")
    uninterrupted = torchrun(*args_for(corpus, tmp_path / "straight", *many))  # alongside: launches are mostly imports
    proc = torchrun(*args_for(corpus, tmp_path / "stopped", *many))
    for line in proc.stdout:
        if re.match(r"epoch 1 batch 50/", line):  # progress lines come every 50 steps
            proc.send_signal(signal.SIGTERM)
            break
    rest = proc.communicate(timeout=120)[0]
    assert proc.returncode != 0 and "state saved" in rest, rest[-3000:]
    state = torch.load(tmp_path / "stopped" / "run" / "state.pt", weights_only=True)
    assert state["position"]["epoch"] == 0 and state["position"]["batch"] >= 50 and state["world"] == 2
    resume = torchrun(*args_for(corpus, tmp_path / "stopped", *many))
    finish(uninterrupted)
    finish(resume)
    straight = torch.load(tmp_path / "straight" / "run" / "state.pt", weights_only=True)
    resumed = torch.load(tmp_path / "stopped" / "run" / "state.pt", weights_only=True)
    assert resumed["position"]["step"] == straight["position"]["step"]
    for name, value in straight["model"].items():
        assert torch.equal(value, resumed["model"][name]), name


def test_a_run_saved_by_two_processes_resumes_on_one(corpus, two_processes, tmp_path):
    import shutil

    shutil.copytree(two_processes, tmp_path / "more")
    out = subprocess.run([sys.executable, "-m", "transformer.train",
                          *args_for(corpus, tmp_path / "more", "--epochs", "2", "--max-train-pairs", "240",
                                    "--tokens-per-batch", "400")],
                         cwd=ROOT, env=ENV, text=True, capture_output=True, timeout=240)
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-2000:]
    assert "saved by 2 processes, now 1" in out.stdout
    epochs = [json.loads(x)["epoch"] for x in (tmp_path / "more" / "run" / "metrics.jsonl").read_text().splitlines()]
    assert epochs == [1, 2]


def test_two_nodes_train_together_and_only_rank_0_writes(corpus, two_processes, tmp_path):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    nodes = [torchrun(*args_for(corpus, tmp_path / f"node{n}", *FEW_STEPS), nproc=1,
                      rdzv=("--nnodes", "2", "--node_rank", str(n), "--master_addr", "127.0.0.1",
                            "--master_port", str(port)))
             for n in (0, 1)]
    for node in nodes:
        finish(node)
    assert not (tmp_path / "node1").exists()  # rank 1 was told other folders: it wrote none of them
    assert_same(weights(two_processes / "run"), weights(tmp_path / "node0" / "run"), atol=1e-6)


def test_more_processes_than_gpus_train_on_the_cpu_with_a_warning(monkeypatch):
    """NCCL needs a GPU per process: on a machine with fewer, torch.cuda.set_device failed with "invalid device
    ordinal" in every process past the GPUs (seen with 2 processes on one lent H200)."""
    from transformer.train_ranks import rank_device

    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    cuda = torch.device("cuda")
    assert rank_device(cuda, 0, 1) == torch.device("cuda", 0)
    with pytest.warns(UserWarning, match="2 processes on this machine but 1 GPU"):
        assert rank_device(cuda, 0, 2) == torch.device("cpu")
    assert rank_device(cuda, 1, 2) == torch.device("cpu")  # the same choice, said once
    assert rank_device(torch.device("cpu"), 1, 2) == torch.device("cpu")


def test_the_batch_options_are_checked(corpus, tmp_path):
    with pytest.raises(SystemExit, match="either --max-tokens or --tokens-per-batch"):
        train.main(args_for(corpus, tmp_path, "--max-tokens", "400", "--tokens-per-batch", "400"))
    with pytest.raises(SystemExit, match="at least 1"):
        train.main(args_for(corpus, tmp_path, "--accumulate", "0"))
