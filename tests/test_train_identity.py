"""A fixed seed trains bit-identically: the same losses, weights, metrics and log lines as the training loop
before it was split into pipeline, step, evaluation and state (issue 26); validation translates as the Translator
does."""
from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from pathlib import Path

import pytest
import sacrebleu
import torch

from transformer import Transformer, Translator, data, train
from transformer.checkpoint import Checkpoint
from transformer.train_data import ValSet
from transformer.train_eval import VAL_BATCH_SIZE, validate
from transformer.train_state import Position

from .conftest import write_corpus

# conftest's TINY_MODEL_ARGS as they were when the golden values below were taken, with dropout on (its random
# numbers are part of what must not change) and one thread.
MODEL_ARGS = ["--d-model", "64", "--n-heads", "4", "--d-ff", "128", "--layers", "2", "--dropout", "0.1",
              "--max-len", "64", "--vocab-size", "60", "--max-tokens", "400", "--lr", "3e-3", "--warmup", "100",
              "--ema-decay", "0.99", "--threads", "1", "--no-progress"]


@dataclass(frozen=True)
class Fingerprint:
    losses: list[tuple[float, float, float, float]]  # per epoch: train_loss, val_loss, val_bleu, val_chrf
    position: dict  # state.pt's, without the wall-clock elapsed_s
    weights: str  # sha256 of the saved model.safetensors
    state: str  # sha256 of state.pt's model, EMA and optimizer tensors
    log: str  # sha256 of stdout, with timings and paths masked
    metric_keys: list[str]
    training_keys: list[str]  # config.json "training"


def _tensor_hash(state: dict) -> str:
    h = hashlib.sha256()

    def feed(value) -> None:
        if isinstance(value, torch.Tensor):
            h.update(value.reshape(-1).contiguous().view(torch.uint8).numpy().tobytes())
        elif isinstance(value, dict):
            for key in sorted(value, key=str):
                h.update(str(key).encode())
                feed(value[key])
        elif isinstance(value, (list, tuple)):
            for item in value:
                feed(item)
        else:
            h.update(repr(value).encode())

    feed({key: state[key] for key in ("model", "ema", "optimizer")})
    return h.hexdigest()


def _masked(log: str, root: Path) -> str:
    """The log without what the clock decides (throughput, elapsed time) or the temp folder."""
    log = log.replace(str(root), "<tmp>")
    log = re.sub(r'"(tokens_per_s|elapsed_s)": [0-9.e+-]+', r'"\1": _', log)
    return re.sub(r"tok/s \d+", "tok/s _", log)


def fingerprint(root: Path, capsys, *extra: str) -> Fingerprint:
    corpus = write_corpus(root / "corpus", n_train=1200, n_val=20, seed=7)
    args = ["--src", "de", "--tgt", "en", "--data-dir", str(corpus), "--out", str(root / "ckpt"),
            "--run-dir", str(root / "run"), "--epochs", "2", *MODEL_ARGS, *extra]
    if "--tokens-per-batch" in extra:  # instead of --max-tokens
        del args[args.index("--max-tokens"):args.index("--max-tokens") + 2]
    threads = torch.get_num_threads()
    capsys.readouterr()
    train.main(args)
    torch.set_num_threads(threads)
    log = capsys.readouterr().out
    metrics = [json.loads(line) for line in (root / "run" / "metrics.jsonl").read_text().splitlines()]
    state = torch.load(root / "run" / "state.pt", weights_only=True)
    training = json.loads((root / "ckpt" / "config.json").read_text())["training"]
    return Fingerprint(
        losses=[(m["train_loss"], m["val_loss"], m["val_bleu"], m["val_chrf"]) for m in metrics],
        position={k: v for k, v in state["position"].items() if k != "elapsed_s"},
        weights=hashlib.sha256((root / "ckpt" / "model.safetensors").read_bytes()).hexdigest(),
        state=_tensor_hash(state),
        log=hashlib.sha256(_masked(log, root).encode()).hexdigest(),
        metric_keys=sorted({k for m in metrics for k in m}),
        training_keys=sorted(training))


# The golden values: `fingerprint` run on commit 26f096d (the loop before the split: one `_train` function), torch
# 2.13.0+cpu, one thread. Float results depend on the CPU's kernels, so there is a set per kernel family (torch's
# get_cpu_capability()): "AVX512" on an Intel machine of this project's (AVX512-BF16/AMX: bf16 in hardware), "AVX2"
# on an AMD EPYC one (bf16 emulated). The losses, BLEU and log agree across both in fp32; the weights' last bits do
# not. On another kind of CPU, regenerate them from that commit the same way.
FP32 = ("--precision", "fp32", "--max-tokens", "200", "--warmup", "10")
# Autocast, two micro-batches per step, batches by target tokens, no EMA.
BF16 = ("--precision", "bf16", "--accumulate", "2", "--tokens-per-batch", "400", "--ema-decay", "0", "--warmup", "10")
METRIC_KEYS = ["elapsed_s", "epoch", "lr", "step", "tokens_per_s", "train_loss", "val_bleu", "val_chrf", "val_loss"]
TRAINING_KEYS = ["autocast", "compiled", "corpora", "device", "epochs", "processes", "recipe", "selected_on", "steps",
                 "target_tokens", "target_tokens_seen", "threads", "train_hours_total", "train_time_s"]
# FP32 runs 72 steps: a progress line at step 50. Its losses, position and log are the same on every CPU so far.
FP32_LOSSES = [(3.1592, 2.4752, 2.87, 17.7), (2.6374, 2.1842, 5.22, 23.76)]
FP32_POSITION = {"epoch": 2, "batch": 0, "step": 72, "best_bleu": 5.22, "target_tokens": 14168}
FP32_LOG = "d6ba4ef229e494d75c2f22e9e28d77be79cfb0490334604ae4a7eb78b1cb2802"
# FP32 with --epochs 1, then resumed from its state.pt with --epochs 2 (a shorter schedule than FP32's).
RESUMED_LOSSES = [(3.1846, 2.5835, 2.22, 16.71), (2.6878, 2.2243, 3.61, 21.03)]
RESUMED_POSITION = {"epoch": 2, "batch": 0, "step": 72, "best_bleu": 3.61, "target_tokens": 14168}
RESUMED_LOG = "3b8443379e91ea7c4d9c74d735f286f149e72dfb17d09eacf4ff76a5de4439da"


def _golden(losses, position, weights, state, log) -> Fingerprint:
    return Fingerprint(losses, position, weights, state, log, METRIC_KEYS, TRAINING_KEYS)


@dataclass(frozen=True)
class Goldens:
    fp32: Fingerprint
    bf16: Fingerprint
    resumed: Fingerprint

    @classmethod
    def of(cls, fp32: tuple[str, str], bf16: Fingerprint, resumed: tuple[str, str]) -> Goldens:
        """A CPU's goldens: its fp32 and resumed runs differ from another's only in the (weights, state) hashes."""
        return cls(_golden(FP32_LOSSES, FP32_POSITION, *fp32, FP32_LOG), bf16,
                   _golden(RESUMED_LOSSES, RESUMED_POSITION, *resumed, RESUMED_LOG))


GOLDENS = {
    "AVX512": Goldens.of(
        fp32=("8d59893cc41142c2ddd7e9c71465193fa1e4f6021be1c27fbcec4d0f161f56ea",
              "046abfece700e8795e1d0f9183db717c78bbe4911400a8c6f201f6b5e24186d9"),
        bf16=_golden([(3.4189, 2.7963, 0.0, 0.0), (2.9045, 2.4727, 2.27, 16.4)],
                     {"epoch": 2, "batch": 0, "step": 36, "best_bleu": 2.27, "target_tokens": 14168},
                     "dcaf16b71815b5b015864d12ee2fa890876366ed1aeafd17257f7b1ff9b1afb3",
                     "02ac792b982e3400963ed70a2c143c304b9178ff19c74b6f8213a0418288a309",
                     "265289b7013b8c3369c3303b2181f1c6fb7861b7cc9936f66129716929d1db9b"),
        resumed=("61c3cb3b2631eed05eade78cc6ac776020c010ea724024cc2175d98dc39cb6bd",
                 "83879ce267780a4d0aa4e602f6ec5c95820f0e077be30fe8af7969e15a4a7099")),
    "AVX2": Goldens.of(
        fp32=("04751c073200a5ab53202f9b338b529e0864e473424db7141dc63e5a126b0636",
              "dd8aa69ada6b3d04c1e0d411526b66b5a206d9b9d7fe29accc75704146d6a652"),
        bf16=_golden([(3.4188, 2.7972, 0.0, 0.0), (2.9038, 2.4722, 1.43, 15.76)],
                     {"epoch": 2, "batch": 0, "step": 36, "best_bleu": 1.43, "target_tokens": 14168},
                     "96e9e85db9a4ef7eb9404ee5f8a34e28b32386e64fb84aaa1dd5cef08c01d744",
                     "7dc25cd5fa14669a89152022f3193deee77482edbd6bb43e372755031b656b4c",
                     "7c91aba0376c05a49bf79d3a48e77289225640ea09cdfb609ff1667abde9f962"),
        resumed=("b1913e7295c91cafbd53f72b546c1615da7f20a509f8413345ae1a6d36a58fb4",
                 "a1a047e7cf355c3d1b7822179c2d0bd65da7b31a171f43c2e5bd61c7312b46f7")),
}


def goldens() -> Goldens:
    """This CPU's golden values; the test is skipped on a kind of CPU they were never taken on."""
    kernels = torch.backends.cpu.get_cpu_capability()
    if kernels not in GOLDENS:
        pytest.skip(f"no golden values for {kernels} kernels: regenerate them from commit 26f096d on this CPU")
    return GOLDENS[kernels]


@pytest.mark.slow  # training runs
@pytest.mark.parametrize("extra, run", [(FP32, "fp32"), (BF16, "bf16")], ids=["fp32", "bf16-accumulate-no-ema"])
def test_a_fixed_seed_trains_as_before_the_split(extra, run, tmp_path, capsys):
    assert fingerprint(tmp_path, capsys, *extra) == getattr(goldens(), run)


@pytest.mark.slow
def test_a_resumed_run_trains_as_before_the_split(tmp_path, capsys):
    resumed = goldens().resumed
    fingerprint(tmp_path, capsys, *FP32, "--epochs", "1")
    assert fingerprint(tmp_path, capsys, *FP32) == resumed


@pytest.mark.slow
def test_a_state_saved_before_tokens_were_counted_resumes(tmp_path, capsys):
    resumed = goldens().resumed
    fingerprint(tmp_path, capsys, *FP32, "--epochs", "1")
    state = torch.load(tmp_path / "run" / "state.pt", weights_only=True)
    del state["position"]["target_tokens"]
    torch.save(state, tmp_path / "run" / "state.pt")
    assert fingerprint(tmp_path, capsys, *FP32) == Fingerprint(
        **{**resumed.__dict__, "position": {**resumed.position, "target_tokens": None}})
    training = json.loads((tmp_path / "ckpt" / "config.json").read_text())["training"]
    assert training["target_tokens"] is None and training["target_tokens_seen"] is None


def test_the_position_is_saved_as_the_dict_it_always_was():
    saved = {"epoch": 1, "batch": 7, "step": 40, "elapsed_s": 12.5, "best_bleu": 3.1}  # before target_tokens
    position = Position.from_dict(saved)
    assert position.target_tokens is None and position.step == 40
    assert position.to_dict() == {**saved, "target_tokens": None}
    assert Position().to_dict() == {"epoch": 0, "batch": 0, "step": 0, "elapsed_s": 0.0, "best_bleu": -1.0,
                                    "target_tokens": 0}


@pytest.mark.parametrize("trained", [True, False], ids=["trained", "untrained"])
@pytest.mark.parametrize("batch_size", [VAL_BATCH_SIZE, 7])
def test_validation_translates_as_translate_batch_does(copy_checkpoint, copy_data, batch_size, trained):
    """Untrained, the model seldom ends a sentence: its translations run to the length limit, which the batch's
    longest source sets, so they differ unless the batches are the same."""
    translator = Translator.from_checkpoint(copy_checkpoint, device="cpu")
    if not trained:
        torch.manual_seed(0)
        untrained = Checkpoint(Transformer(translator.config), translator.tokenizer, "de", "en", "untrained")
        translator = Translator(untrained, torch.device("cpu"))
    sources, references = data.read_pairs(copy_data, "val", "de", "en")
    val = ValSet("copy", sources, references).encoded(translator.tokenizer, translator.config.max_len - 1)
    scores = validate(translator, val, batch_size)
    expected = translator.translate_batch(sources, batch_size=batch_size)
    assert scores.hypotheses == expected
    assert scores.bleu == sacrebleu.corpus_bleu(expected, [references]).score
    assert scores.chrf == sacrebleu.corpus_chrf(expected, [references]).score
    assert (scores.bleu > 80) == trained
