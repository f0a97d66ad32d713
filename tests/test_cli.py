"""The translation and evaluation command lines, as a person runs them."""
from __future__ import annotations

import gzip
import io
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from transformer import evaluate, translate

ROOT = Path(__file__).resolve().parents[1]


def test_translate_reads_stdin_and_keeps_one_line_per_line(copy_checkpoint, monkeypatch, capsys):
    monkeypatch.setattr(sys, "stdin", io.StringIO("red cat runs\n\nold man sits big house\n   \n"))
    translate.main(["--checkpoint", str(copy_checkpoint), "--device", "cpu"])
    assert capsys.readouterr().out == "red cat runs\n\nold man sits big house\n\n"


def test_translate_arguments_with_beam(copy_checkpoint, capsys):
    translate.main(["--checkpoint", str(copy_checkpoint), "--beam", "4", "green tree house", "dog jumps big"])
    assert capsys.readouterr().out == "green tree house\ndog jumps big\n"


def test_cuda_without_cuda_falls_back_to_cpu_with_a_notice(copy_checkpoint, capsys):
    pytest.importorskip("torch")
    import torch
    if torch.cuda.is_available():
        pytest.skip("CUDA is present")
    with pytest.warns(UserWarning, match="CUDA was requested but is not available"):
        translate.main(["--checkpoint", str(copy_checkpoint), "--device", "cuda", "red cat runs"])
    assert capsys.readouterr().out == "red cat runs\n"


@pytest.mark.slow  # a subprocess
def test_missing_checkpoint_is_a_clear_error(tmp_path):
    result = subprocess.run([sys.executable, "-m", "transformer.translate", "--checkpoint", str(tmp_path / "x"),
                             "hallo"], cwd=ROOT, capture_output=True, text=True,
                            env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert result.returncode != 0
    assert "does not exist" in result.stderr and "Traceback" not in result.stderr


def test_evaluate_prints_sacrebleu_signatures_and_a_last_summary_line(copy_checkpoint, copy_data, capsys):
    bleu, chrf = evaluate.main(["--checkpoint", str(copy_checkpoint), "--data-dir", str(copy_data),
                                "--split", "val"])
    lines = capsys.readouterr().out.strip().splitlines()
    assert re.fullmatch(r"bleu=\d+\.\d chrf=\d+\.\d", lines[-1])
    assert any("nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp|version:" in line for line in lines)
    assert any("chrF2" in line for line in lines)
    assert lines[-1] == f"bleu={bleu:.1f} chrf={chrf:.1f}" and bleu > 80


def test_evaluate_scores_each_named_corpus_and_their_mean(copy_checkpoint, copy_data, tmp_path, capsys):
    import shutil
    shutil.copytree(copy_data, tmp_path / "copy")
    noisy = tmp_path / "noisy"  # references that share nothing with the output: BLEU 0
    noisy.mkdir()
    shutil.copy(copy_data / "val.de.gz", noisy / "val.de.gz")
    (noisy / "val.en.gz").write_bytes(gzip.compress(b"zzz qqq\n" * 100))
    bleu, _ = evaluate.main(["--checkpoint", str(copy_checkpoint), "--data-root", str(tmp_path),
                             "--corpus", "copy", "--corpus", str(noisy), "--beam", "1"])
    out = capsys.readouterr().out.strip().splitlines()
    copy_bleu = float(next(x for x in out if x.startswith("copy: bleu=")).split("=")[1].split()[0])
    assert copy_bleu > 80 and "noisy: bleu=0.0 chrf=0.0" in out
    assert out[-1].startswith(f"bleu={bleu:.1f}") and bleu == pytest.approx(copy_bleu / 2, abs=0.1)
    with pytest.raises(SystemExit, match="copy, noisy"):
        evaluate.main(["--checkpoint", str(copy_checkpoint), "--data-root", str(tmp_path), "--corpus", "nope"])


def test_model_card_has_hub_front_matter_scores_and_epochs(copy_checkpoint, copy_data, tmp_path, capsys):
    import shutil

    from transformer import card
    folder = tmp_path / "copy-de-en"
    shutil.copytree(copy_checkpoint, folder)
    card.main([str(folder), "--data-dir", str(copy_data), "--beam", "2"])
    text = (folder / "README.md").read_text()
    front = text.split("---")[1]
    for key in ("license: apache-2.0", "language:\n- de\n- en", "tags:", "metrics:\n- bleu\n- chrf"):
        assert key in front
    assert "| greedy |" in text and "| beam 2, length penalty 1.4 |" in text
    assert text.count("\n| 8 |") == 1  # the per-epoch table reaches the last epoch
    assert "Good at, bad at" in text and "not a production translator" in text
    meta = json.loads((folder / "config.json").read_text())
    assert meta["decoding"] == {"beam_size": 2, "length_penalty": 1.4}
    # The card's beam scores are kept beside the training-time greedy ones, as the card's table shows them.
    beam_row = next(line for line in text.splitlines() if line.startswith("| beam 2"))
    shown = [float(x) for x in beam_row.split("|")[2].split("/")]
    assert shown == pytest.approx([meta["card"]["val_bleu_copy-data0"], meta["card"]["val_chrf_copy-data0"]], abs=0.051)
    assert meta["card"]["val_bleu_mean"] == meta["card"]["val_bleu_copy-data0"] > 80
    assert f"{meta['training']['target_tokens_seen'] / 1e6:.1f}M target tokens" in text
