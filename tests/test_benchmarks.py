"""The benchmark scripts: each runs once on a tiny configuration, started the way a newcomer types it (as a file or
as a module, from the repository root or from elsewhere), and its last line has every documented figure, each a
sane number. No timing is asserted. (benchmarks/load.py runs in test_hardening.py.) Their decoding helpers follow
the model they time, opus-mt included."""
from __future__ import annotations

import argparse
import importlib.util
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from tests.browser import needs_chromium
from transformer.train_step import native_bf16

ROOT = Path(__file__).resolve().parents[1]


def run(script: str, args: list[str], how: str, where: str, tmp_path: Path, timeout: int,
        env: dict | None = None) -> dict[str, str]:
    """`python benchmarks/SCRIPT.py ARGS` (how="file") or `python -m benchmarks.SCRIPT ARGS` (how="module"), from
    the repository root or from tmp_path; its last line's figures. -m from elsewhere needs the root on PYTHONPATH,
    as docs/benchmarks.md says."""
    env = {k: v for k, v in {**os.environ, **(env or {})}.items() if k != "PYTHONPATH"}
    cwd = ROOT if where == "root" else tmp_path
    if how == "file":
        path = ROOT / "benchmarks" / f"{script}.py"
        command = [sys.executable, str(path.relative_to(ROOT) if where == "root" else path), *args]
    else:
        command = [sys.executable, "-m", f"benchmarks.{script}", *args]
        if where != "root":
            env["PYTHONPATH"] = str(ROOT)
    done = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-4000:]
    last = done.stdout.strip().splitlines()[-1]
    return dict(part.split("=") for part in last.split())


def sane(figures: dict[str, str], keys: list[str]) -> dict[str, float]:
    """The figures as numbers, once they are exactly `keys`, each finite and positive."""
    assert list(figures) == keys
    numbers = {key: float(value) for key, value in figures.items()}
    assert all(math.isfinite(v) and v > 0 for v in numbers.values()), figures
    return numbers


@pytest.fixture
def tiny_folder(tmp_path: Path) -> Path:
    """A folder that holds one tiny random de→en checkpoint whose vocabulary has the benchmark sentence's words,
    one piece a word (25 pieces in, at most 48 out)."""
    from benchmarks.common import SENTENCES
    from tests.app_fixtures import make_checkpoint
    from transformer.tokenizer import Tokenizer

    tokenizer = Tokenizer.train(list(SENTENCES.values()) * 20, vocab_size=60, model_type="word")
    make_checkpoint(tmp_path / "checkpoints" / "tiny-de-en", "de", "en", tokenizer=tokenizer)
    return tmp_path / "checkpoints"


@pytest.mark.slow
def test_decode_quick_on_a_tiny_model(tiny_folder, copy_data, tmp_path):
    figures = run("decode", ["--checkpoint", str(tiny_folder / "tiny-de-en"), "--quick", "--repeats", "1"],
                  "file", "root", tmp_path, 120, {"ANATOMY_DATA_DIR": str(copy_data)})
    figures = sane(figures, ["naive_ms", "cached_ms", "capture_ms", "beam5_ms", "tok_per_s", "speedup",
                             "capture_overhead", "natural_capture_ms", "natural_beam_ms", "fp32_capture_ms",
                             "fp32_beam_ms", "capture_speedup", "beam_speedup"])
    assert figures["speedup"] == pytest.approx(figures["naive_ms"] / figures["cached_ms"], rel=0.1)  # rounded


@pytest.mark.slow
def test_profile_decode_on_a_tiny_model(tiny_folder, tmp_path):
    figures = run("profile_decode", ["--checkpoint", str(tiny_folder / "tiny-de-en"), "--runs", "1", "--rows", "3"],
                  "module", "elsewhere", tmp_path, 120)
    assert figures.pop("beam_top_op").startswith("aten::")
    figures = sane(figures, ["beam_ms", "greedy_ms", "beam_linear_share", "greedy_linear_share"])
    assert figures["beam_linear_share"] < 1 and figures["greedy_linear_share"] < 1


@pytest.mark.slow
def test_explain_on_a_tiny_model(tiny_folder, tmp_path):
    figures = run("explain", ["--checkpoint", str(tiny_folder / "tiny-de-en"), "--repeats", "1", "--threads", "1"],
                  "module", "elsewhere", tmp_path, 120)
    figures = sane(figures, ["grad_ms", "ig_step_ms", "occlusion_ms", "step_ms", "ig_all_s", "explain_s", "lens_ms",
                             "pieces", "threads"])
    assert figures["threads"] == 1 and figures["explain_s"] >= figures["ig_all_s"] * 0.5


@pytest.mark.slow
def test_animate_on_a_tiny_model(tiny_folder, tmp_path):
    figures = run("animate", ["--checkpoint", str(tiny_folder / "tiny-de-en"), "--repeats", "1"], "module",
                  "elsewhere", tmp_path, 120)
    mp4 = figures.pop("mp4_s"), figures.pop("mp4_mb")
    figures = sane(figures, ["pieces", "translate_s", "gif_s", "gif_mb"])
    assert figures["pieces"] >= 1
    assert mp4 == ("na", "na") if importlib.util.find_spec("av") is None else all(float(v) > 0 for v in mp4)


@pytest.mark.slow
def test_train_speed_quick(copy_data, tmp_path):
    figures = run("train_speed", ["--threads", "1", "--quick"], "module", "elsewhere", tmp_path, 240,
                  {"ANATOMY_DATA_DIR": str(copy_data)})
    assert figures.pop("precision_auto") == ("bf16" if native_bf16(torch.device("cpu")) else "fp32")
    figures = sane(figures, ["threads", "ours_tok_s", "torch_tok_s", "ratio", "procs1_tok_s", "procs2_tok_s",
                             "procs2_vs_1", "fp32_tok_s", "bf16_tok_s", "bf16_vs_fp32"])
    assert figures["threads"] == 1
    assert figures["procs2_vs_1"] == pytest.approx(figures["procs2_tok_s"] / figures["procs1_tok_s"], abs=0.01)


@pytest.mark.slow
@needs_chromium
def test_page_on_a_tiny_model(tiny_folder, tmp_path):
    pytest.importorskip("playwright")
    figures = run("page", ["--checkpoints", str(tiny_folder), "--runs", "1", "--crowd", "2", "--settle", "0.5"],
                  "file", "elsewhere", tmp_path, 240)
    assert figures.pop("server_requests_per_view") == "0.00"  # the viewer draws a view change in the page
    assert int(figures.pop("components")) > 0
    over_model = float(figures.pop("link_over_model_s"))  # any sign: the server may decode faster than 1 thread
    branch_over = float(figures.pop("branch_over_model_s"))
    figures = sane(figures, ["first_piece_s", "heatmap_s", "all_s", "view_s", "view_all_s", "ablate_s",
                             "ablate_all_s", "branch_s", "branch_all_s", "server_ms", "importance_ms", "capture_ms",
                             "crowd2_last_s", "first_click_all_s", "payload_kb", "ready_s", "link_s",
                             "presenter_link_s", "tour_link_s"])
    assert over_model == pytest.approx(figures["link_s"] - figures["capture_ms"] / 1000, abs=0.011)  # rounded
    assert figures["all_s"] >= figures["heatmap_s"]  # every figure in view includes the heatmap
    assert figures["view_all_s"] >= figures["view_s"]  # every affected figure includes those in the window
    assert figures["ablate_all_s"] >= figures["ablate_s"]
    assert figures["branch_all_s"] >= figures["branch_s"]
    assert branch_over == pytest.approx(figures["branch_s"] - figures["capture_ms"] / 1000, abs=0.011)


@pytest.mark.slow
def test_peers_quick_on_a_tiny_opus_mt_model(tmp_path):
    """Every side's ids were asserted equal on the way; no CTranslate2 here unless it is installed."""
    pytest.importorskip("transformers")
    figures = run("peers", ["--quick"], "module", "root", tmp_path, 300)
    ct2 = figures.pop("ours_vs_ct2", None)
    sane(figures, ["ours_vs_hf_capture", "ours_vs_hf_plain"])
    assert ct2 == "na" if importlib.util.find_spec("ctranslate2") is None else float(ct2) > 0


def test_a_failed_page_measurement_ends_the_run_with_its_reason(monkeypatch):
    """page.py never prints a figure it could not measure: here every crowd visitor fails (nothing listens on the
    port), and the run stops with exit status 1 and why."""
    from benchmarks import page
    from benchmarks.common import free_port

    join = f"http://127.0.0.1:{free_port()}/gradio_api/queue/join"

    def measure(args: argparse.Namespace) -> str:
        return f"crowd2_last_s={page.crowd(join, [{'fn_index': 0}], 2, 5)}"

    monkeypatch.setattr(page, "measure", measure)
    monkeypatch.setattr(sys, "argv", ["page.py"])
    with pytest.raises(SystemExit) as exited:
        page.main()
    assert str(exited.value.code).startswith("page.py: crowd: 2 of 2 visitors failed, e.g. ConnectError")


def test_decode_benchmark_decodes_an_opus_mt_model_from_its_own_start_without_its_own_eos(opus_mt):
    """opus-mt has no <s>: it starts from its pad and ends with 0. With an EOS bias that makes 0 the first choice,
    the no-EOS model still writes every token, and naive and cached greedy agree from that start."""
    from benchmarks.decode import NoEOS, naive_greedy
    from tests.marian_fixtures import SENTENCES
    from transformer import Translator
    from transformer.search import greedy

    translator = Translator.from_checkpoint(opus_mt, device="cpu")
    with torch.no_grad():
        translator.model.final_logits_bias[translator.config.eos_id] += 30.0
    src = torch.tensor([translator.encode_source(SENTENCES[0])[0]])
    assert greedy(translator.model, src, 6)[0] == []  # EOS at once
    no_eos = NoEOS.of(translator.model)
    ids = naive_greedy(no_eos, src, 6)
    assert len(ids) == 6 and translator.config.eos_id not in ids
    assert ids == greedy(no_eos, src, 6)[0]


@pytest.mark.slow
def test_soak_on_a_tiny_model(tiny_folder, tmp_path):
    """Visitors one after another, some through the page's Translate event: every answer the same, RSS read."""
    figures = run("soak", ["--checkpoints", str(tiny_folder), "--directions", "de-en", "--requests", "40",
                           "--warmup", "10", "--sample-every", "10", "--per-visitor", "5", "--page-every", "2"],
                  "file", "elsewhere", tmp_path, 300)
    assert list(figures) == ["requests", "page_translations", "mismatches", "seconds", "rss_after_warmup_mb",
                             "rss_end_mb", "rss_growth_mb_per_1000"]
    assert [figures[k] for k in ("requests", "page_translations", "mismatches")] == ["40", "4", "0"]
    assert float(figures["rss_end_mb"]) >= float(figures["rss_after_warmup_mb"]) * 0.5 > 50  # an app's RSS, in MB
    assert math.isfinite(float(figures["rss_growth_mb_per_1000"]))


def test_page_puts_a_baseline_s_figures_beside_its_own():
    """--baseline REV: the revision's figures as baseline_…, and what a change must not make worse as this run's
    figure over the baseline's (a figure the old page.py did not measure is left out of the ratios)."""
    from benchmarks.page import compared, figures_of

    line = "all_s=1.20 view_s=0.10 crowd2_last_s=3.00 ready_s=1.40 components=58"
    old = figures_of("first_piece_s=0.60 all_s=1.00 view_s=0.20 crowd2_last_s=2.50")
    out = figures_of(compared(line, old, 2))
    assert out == {"baseline_first_piece_s": "0.60", "baseline_all_s": "1.00", "baseline_view_s": "0.20",
                   "baseline_crowd2_last_s": "2.50", "all_s_vs_baseline": "1.20", "view_s_vs_baseline": "0.50",
                   "crowd2_last_s_vs_baseline": "1.20"}
