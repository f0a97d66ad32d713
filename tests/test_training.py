"""The training loop learns, logs per-epoch metrics, and resumes after a kill with nothing lost."""
from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import sacrebleu
import torch
from safetensors.torch import load_file

from transformer import Translator, checkpoint, data, tokens_seen, train

from .conftest import TINY_MODEL_ARGS, write_corpus

ROOT = Path(__file__).resolve().parents[1]
METRIC_KEYS = {"epoch", "step", "train_loss", "val_loss", "val_bleu", "lr", "tokens_per_s", "elapsed_s"}


def test_copy_task_is_learned(copy_checkpoint, copy_data):
    sources, targets = data.read_pairs(copy_data, "val", "de", "en")
    outputs = Translator.from_checkpoint(copy_checkpoint, device="cpu").translate_batch(sources)
    exact = sum(o == t for o, t in zip(outputs, targets)) / len(targets)
    assert exact >= 0.9, f"exact match {exact:.0%}"


def test_metrics_log_has_one_line_per_epoch_and_loss_falls(copy_checkpoint):
    lines = [json.loads(x) for x in (copy_checkpoint / "metrics.jsonl").read_text().splitlines()]
    assert [m["epoch"] for m in lines] == list(range(1, 9))
    assert all(METRIC_KEYS <= set(m) for m in lines)
    assert lines[-1]["train_loss"] < lines[0]["train_loss"] - 1.0
    assert lines[-1]["val_bleu"] > 80
    meta = json.loads((copy_checkpoint / "config.json").read_text())
    assert meta["metrics"]["val_bleu"] == max(m["val_bleu"] for m in lines)  # the best epoch is kept


@pytest.mark.parametrize("text, seconds", [("85m", 5100), ("2h", 7200), ("1h30m", 5400), ("90s", 90), ("12", 12)])
def test_time_budget_parsing(text, seconds):
    assert train.parse_duration(text) == seconds


def test_bad_time_budget_is_refused():
    with pytest.raises(Exception, match="bad duration"):
        train.parse_duration("soon")


def test_learning_rate_warms_up_then_decays_to_zero():
    args = train.build_parser().parse_args(["--src", "de", "--tgt", "en", "--out", "x", "--lr", "1e-3",
                                            "--warmup", "10"])
    assert train.learning_rate(args, 0, 0.0) == pytest.approx(1e-4)
    assert train.learning_rate(args, 9, 0.0) == pytest.approx(1e-3)
    assert train.learning_rate(args, 100, 0.5) == pytest.approx(5e-4)
    assert train.learning_rate(args, 200, 1.0) == 0.0


def test_the_papers_schedule_peaks_at_the_end_of_warmup():
    args = train.build_parser().parse_args(["--src", "de", "--tgt", "en", "--out", "x", "--schedule", "paper",
                                            "--warmup", "4000"])
    rates = [train.learning_rate(args, step, 0.0, d_model=512) for step in range(0, 20000, 10)]
    peak = max(range(len(rates)), key=rates.__getitem__)
    assert abs(peak * 10 + 1 - 4000) <= 10
    assert rates[peak] == pytest.approx(512 ** -0.5 * 4000 ** -0.5, rel=1e-3)  # ~7.0e-4
    assert train.learning_rate(args, 15999, 0.0, d_model=512) == pytest.approx(512 ** -0.5 * 16000 ** -0.5)


def _args(corpus: Path, root: Path, name: str) -> list[str]:
    args = ["--src", "de", "--tgt", "en", "--data-dir", str(corpus), "--out", str(root / name / "ckpt"),
            "--run-dir", str(root / name / "run"), "--epochs", "3", *TINY_MODEL_ARGS]
    args[args.index("--dropout") + 1] = "0.1"  # dropout draws random numbers: RNG state must survive too
    args[args.index("--threads") + 1] = "1"
    return args


@pytest.mark.slow
def test_killed_run_resumes_to_the_same_weights(tmp_path):
    corpus = write_corpus(tmp_path / "corpus", n_train=1500, n_val=20, seed=5)
    threads = torch.get_num_threads()
    train.main(_args(corpus, tmp_path, "straight"))

    killed_args = _args(corpus, tmp_path, "killed") + ["--save-every", "0"]
    proc = subprocess.Popen([sys.executable, "-m", "transformer.train", *killed_args], cwd=ROOT,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            env={**os.environ, "PYTHONPATH": str(ROOT)})
    metrics = tmp_path / "killed" / "run" / "metrics.jsonl"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and proc.poll() is None:
        if metrics.exists() and metrics.read_text().count("\n") >= 1:
            time.sleep(0.3)  # well into epoch 2
            break
        time.sleep(0.02)
    proc.send_signal(signal.SIGKILL)
    assert proc.wait() == -signal.SIGKILL, "the run finished before it could be killed"

    train.main(_args(corpus, tmp_path, "killed"))  # resume
    torch.set_num_threads(threads)
    straight = torch.load(tmp_path / "straight" / "run" / "state.pt", weights_only=True)
    resumed = torch.load(tmp_path / "killed" / "run" / "state.pt", weights_only=True)
    assert resumed["position"]["step"] == straight["position"]["step"]
    for key in ("model", "ema"):
        for name, value in straight[key].items():
            assert torch.equal(value, resumed[key][name]), (key, name)
    a = load_file(tmp_path / "straight" / "ckpt" / "model.safetensors")
    b = load_file(tmp_path / "killed" / "ckpt" / "model.safetensors")
    assert all(torch.equal(a[k], b[k]) for k in a)
    epochs = [json.loads(x)["epoch"] for x in metrics.read_text().splitlines()]
    assert epochs == [1, 2, 3]


@pytest.mark.slow
def test_sigterm_saves_the_position_before_leaving(tmp_path):
    corpus = write_corpus(tmp_path / "corpus", n_train=3000, n_val=20, seed=6)
    args = _args(corpus, tmp_path, "term")
    proc = subprocess.Popen([sys.executable, "-m", "transformer.train", *args], cwd=ROOT, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            env={**os.environ, "PYTHONPATH": str(ROOT)})
    for line in proc.stdout:
        if re.match(r"epoch \d+ batch", line):  # progress lines come every 50 steps
            proc.send_signal(signal.SIGTERM)
            break
    rest = proc.stdout.read()
    assert proc.wait() == 128 + signal.SIGTERM
    assert "state saved" in rest
    state = torch.load(tmp_path / "term" / "run" / "state.pt", weights_only=True)
    assert state["position"]["step"] >= 50 and state["position"]["epoch"] < 3


def test_init_from_starts_with_the_checkpoints_weights_and_tokenizer(copy_checkpoint, copy_data, tmp_path):
    def run(name: str, *extra: str) -> Path:
        args = ["--src", "de", "--tgt", "en", "--data-dir", str(copy_data), "--out", str(tmp_path / name),
                "--run-dir", str(tmp_path / f"{name}-run"), "--epochs", "1", "--max-train-pairs", "200",
                "--init-from", str(copy_checkpoint), *TINY_MODEL_ARGS, *extra]
        threads = torch.get_num_threads()
        train.main(args)
        torch.set_num_threads(threads)
        return tmp_path / name

    # With a learning rate of 0 the optimizer leaves the weights as they came: exactly the checkpoint's.
    frozen = run("frozen", "--lr", "0")
    start, end = load_file(copy_checkpoint / "model.safetensors"), load_file(frozen / "model.safetensors")
    assert all(torch.equal(start[k], end[k]) for k in start)
    assert (frozen / "tokenizer.model").read_bytes() == (copy_checkpoint / "tokenizer.model").read_bytes()
    meta = json.loads((frozen / "config.json").read_text())
    assert meta["metrics"]["val_bleu"] > 90  # trained, not random
    assert meta["training"]["recipe"]["init_from"] == str(copy_checkpoint)
    # The run it started from is kept in brief; a run from this one would list both.
    before = json.loads((copy_checkpoint / "config.json").read_text())
    assert meta["training"]["earlier"] == checkpoint.lineage(before)
    assert checkpoint.lineage(meta)[0]["steps"] == before["training"]["steps"]
    assert checkpoint.lineage(meta)[1]["init_from"] == str(copy_checkpoint) and len(checkpoint.lineage(meta)) == 2

    with pytest.raises(SystemExit, match="--init-from .* holds ModelConfig"):
        run("wider", "--d-model", "128")
    with pytest.raises(SystemExit, match="translates de->en, not en->de"):
        train.main(["--src", "en", "--tgt", "de", "--data-dir", str(copy_data), "--out", str(tmp_path / "x"),
                    "--run-dir", str(tmp_path / "x-run"), "--init-from", str(copy_checkpoint), *TINY_MODEL_ARGS])
    with pytest.raises(SystemExit, match="--init-from: checkpoint folder .* does not exist"):
        run("missing", "--init-from", str(tmp_path / "nowhere"))


@pytest.mark.slow  # two training runs
def test_bf16_autocast_trains_like_fp32(copy_data, tmp_path):
    results = {}
    for precision in ("fp32", "bf16"):
        threads = torch.get_num_threads()
        results[precision] = train.main(["--src", "de", "--tgt", "en", "--data-dir", str(copy_data),
                                         "--out", str(tmp_path / precision), "--run-dir",
                                         str(tmp_path / f"{precision}-run"), "--epochs", "3",
                                         "--precision", precision, *TINY_MODEL_ARGS, "--warmup", "20"])
        torch.set_num_threads(threads)
    fp32, bf16 = results["fp32"], results["bf16"]
    assert fp32["step"] == bf16["step"] >= 50
    assert bf16["train_loss"] != fp32["train_loss"]  # autocast did run in bf16
    assert bf16["train_loss"] == pytest.approx(fp32["train_loss"], rel=0.03)
    meta = json.loads((tmp_path / "bf16" / "config.json").read_text())
    assert meta["training"]["autocast"] == "bfloat16"
    assert json.loads((tmp_path / "fp32" / "config.json").read_text())["training"]["autocast"] == "float32"
    # Loaded like any checkpoint, it translates as the fp32-trained one does.
    sources, targets = data.read_pairs(copy_data, "val", "de", "en")
    outputs = {p: Translator.from_checkpoint(tmp_path / p, device="cpu").translate_batch(sources) for p in results}
    bleu = {p: sacrebleu.corpus_bleu(outputs[p], [targets]).score for p in results}
    assert bleu["bf16"] > 10 and bleu["bf16"] == pytest.approx(bleu["fp32"], rel=0.1)


def test_auto_precision_is_bf16_where_the_cpu_runs_it():
    cpu = torch.device("cpu")
    native = train.native_bf16(cpu)
    assert native == bool(torch.cpu._is_avx512_bf16_supported() and torch.ops.mkldnn._is_mkldnn_bf16_supported())
    assert train.autocast_dtype("auto", cpu) == (torch.bfloat16 if native else None)
    assert train.autocast_dtype("fp32", cpu) is None


def test_target_tokens_are_counted_and_replayed_exactly(copy_checkpoint, copy_data, tmp_path):
    """The count a run keeps equals the replay from its seed and steps; a warm-started run adds its own."""
    meta = json.loads((copy_checkpoint / "config.json").read_text())
    counted = meta["training"]["target_tokens"]
    replayed = copy_checkpoint.parent / "replayed"
    shutil.copytree(copy_checkpoint, replayed)
    config = json.loads((replayed / "config.json").read_text())
    del config["training"]["target_tokens"], config["training"]["target_tokens_seen"]
    (replayed / "config.json").write_text(json.dumps(config))
    assert tokens_seen.main([str(replayed), "--data-dir", str(copy_data), "--write"])["target_tokens"] == counted > 0
    assert json.loads((replayed / "config.json").read_text())["training"]["target_tokens_seen"] == counted

    threads = torch.get_num_threads()
    train.main(["--src", "de", "--tgt", "en", "--data-dir", str(copy_data), "--out", str(tmp_path / "more"),
                "--run-dir", str(tmp_path / "more-run"), "--epochs", "1", "--max-train-pairs", "300",
                "--init-from", str(copy_checkpoint), *TINY_MODEL_ARGS])
    torch.set_num_threads(threads)
    more = json.loads((tmp_path / "more" / "config.json").read_text())["training"]
    assert more["target_tokens_seen"] == counted + more["target_tokens"]
    assert more["train_hours_total"] == pytest.approx(
        (meta["training"]["train_time_s"] + more["train_time_s"]) / 3600, abs=0.01)


@pytest.mark.parametrize("text, count", [("29M", 29_000_000), ("500k", 500_000), ("1.5G", 1_500_000_000),
                                         ("1200", 1200)])
def test_token_budget_parsing(text, count):
    assert train.parse_count(text) == count


@pytest.mark.slow  # a training run
def test_a_token_budget_ends_the_run_and_the_schedule(copy_data, tmp_path):
    threads = torch.get_num_threads()
    result = train.main(["--src", "de", "--tgt", "en", "--data-dir", str(copy_data), "--out", str(tmp_path / "out"),
                         "--run-dir", str(tmp_path / "run"), "--token-budget", "6k", *TINY_MODEL_ARGS,
                         "--warmup", "5"])
    torch.set_num_threads(threads)
    position = torch.load(tmp_path / "run" / "state.pt", weights_only=True)["position"]
    per_step = position["target_tokens"] / position["step"]
    assert 6000 <= position["target_tokens"] < 6000 + 3 * per_step  # stopped at the first step past the budget
    assert result["lr"] < 0.1 * 3e-3 and 0 < result.get("partial_epoch", 1.0) <= 1.0  # decayed to ~0
    with pytest.raises(SystemExit, match="either --time-budget or --token-budget"):
        train.main(["--src", "de", "--tgt", "en", "--out", "x", "--time-budget", "1m", "--token-budget", "1M"])
