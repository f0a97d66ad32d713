"""Corpus head importance and pruning curves (`python -m transformer.heads`): heads.json, its loader, the figures
and the model card's section, on a tiny random checkpoint."""
from __future__ import annotations

import hashlib
import importlib.util
import io
import json
import shutil
from pathlib import Path

import numpy as np
import pytest
import torch

from tests.app_fixtures import TINY, make_checkpoint
from tests.conftest import write_corpus
from transformer import HeadMask, HeadRef, ModelConfig, Translator, card, data, heads, hub
from transformer.kinds import KINDS

ROOT = Path(__file__).resolve().parents[1]
SENTENCES = 5
N_HEADS = 12  # TINY: 2 heads × (2 encoder + 2 decoder self + 2 cross) layers


@pytest.fixture(scope="module")
def computed(tmp_path_factory) -> Path:
    """A tiny random de-en checkpoint with heads.json for two corpora, alpha and then beta, by the command line."""
    root = tmp_path_factory.mktemp("heads")
    # Random weights write on to the length limit: a short one keeps the many greedy passes quick.
    folder = make_checkpoint(root / "tiny-de-en", "de", "en", max_len=24)
    for seed, name in enumerate(("alpha", "beta"), 1):
        write_corpus(root / "data" / name, n_train=1, n_val=8, seed=seed)
    threads = torch.get_num_threads()
    for name in ("alpha", "beta"):
        heads.main(["--checkpoint", str(folder), "--corpus", name, "--data-root", str(root / "data"),
                    "--sentences", str(SENTENCES)])
    torch.set_num_threads(threads)
    return folder


def _json(folder: Path) -> dict:
    return json.loads((folder / heads.HEADS_FILE).read_text())


def _every_head() -> list[HeadRef]:
    return [HeadRef(kind.name, layer, head) for kind in KINDS for layer in (1, 2) for head in (1, 2)]


def test_the_command_writes_every_head_of_both_corpora_and_the_weights_it_scored(computed):
    written = _json(computed)
    assert list(written["corpora"]) == ["alpha", "beta"]  # the second corpus was added, not written over the first
    assert written["checkpoint"] == str(computed)
    assert written["weights_sha256"] == hashlib.sha256((computed / "model.safetensors").read_bytes()).hexdigest()
    for name, result in written["corpora"].items():
        assert result["corpus"] == name and result["split"] == "val" and result["sentences"] == SENTENCES
        for scores in result["importance"].values():
            assert {kind: np.shape(scores[kind]) for kind in scores} == {"encoder": (2, 2), "decoder": (2, 2),
                                                                         "cross": (2, 2)}
        for curve in result["orders"].values():
            assert len(curve["order"]) == N_HEADS
            # Random weights score ~0 BLEU, never 1 below the full model's: no early end, every head removed.
            assert len(curve["bleu"]) == N_HEADS + 1
            assert curve["removable"] == heads.PruningCurve.from_dict(curve).removable
        assert result["full_bleu"] == result["orders"]["importance"]["bleu"][0] == result["orders"]["random"]["bleu"][0]


def test_corpus_importance_is_the_sum_of_each_sentences_gradient(computed):
    translator = Translator.from_checkpoint(computed, device="cpu")
    sources, references = data.read_pairs(computed.parent / "data" / "alpha", "val", "de", "en")
    pairs = heads.reference_pairs(translator, sources[:SENTENCES], references[:SENTENCES])
    assert len({len(s) for s, _ in pairs}) > 1 and len({len(o) for _, o in pairs}) > 1  # the batches pad
    by_hand = [heads.gradient_importance(translator, s, o) for s, o in pairs]
    batched = heads.corpus_gradient_importance(translator, pairs, batch_size=2)
    written = heads.HeadScores.from_dict(_json(computed)["corpora"]["alpha"]["importance"]["raw"])
    for kind in ("encoder", "decoder", "cross"):
        expected = sum(g[kind] for g in by_hand)
        assert expected.min() > 0
        np.testing.assert_allclose(batched[kind], expected, rtol=1e-4)
        np.testing.assert_allclose(written[kind], expected, rtol=1e-4, atol=1e-6)


def test_importance_is_normalised_per_layer_and_heads_go_in_ascending_order(computed):
    result = heads.corpus_importance(computed, "alpha")
    for kind in ("encoder", "decoder", "cross"):
        np.testing.assert_allclose(np.linalg.norm(result.normalized[kind], axis=1), 1, atol=1e-5)
        np.testing.assert_allclose(result.normalized[kind],
                                   result.raw[kind] / np.linalg.norm(result.raw[kind], axis=1, keepdims=True),
                                   atol=1e-5)
    assert result.ranked_by == "raw"  # the default
    values = [result.raw[h.kind][h.layer - 1, h.head - 1] for h in result.by_importance.order]
    assert values == sorted(values) and len(set(values)) > 1
    assert sorted(result.by_importance.order, key=str) == sorted(_every_head(), key=str)
    by_layer = heads.importance_order(result.normalized)
    values = [result.normalized[h.kind][h.layer - 1, h.head - 1] for h in by_layer]
    assert values == sorted(values) and by_layer != result.by_importance.order


def test_the_random_order_is_a_seeded_permutation_of_every_head(computed):
    result = heads.corpus_importance(computed, "alpha")
    order = result.random.order
    assert len(order) == len(set(order)) == N_HEADS and set(order) == set(_every_head())
    assert order == heads.random_order(result.raw, result.seed)
    assert heads.random_order(result.raw, result.seed + 1) != order


def test_each_step_switches_off_one_more_head_of_the_order():
    config = ModelConfig(vocab_size=100, **TINY)
    order = _every_head()[::-1]
    seen: list[HeadMask] = []

    def bleu_of(mask: HeadMask) -> float:
        seen.append(mask)
        return 20.0 - len(seen)

    curve = heads.pruned_bleu(order, bleu_of, config, log=lambda line: None)
    assert [set(mask.heads_off()) for mask in seen] == [set(order[:k]) for k in range(N_HEADS + 1)]
    assert curve.bleu == [20.0 - k for k in range(1, N_HEADS + 2)]


def test_a_curve_ends_after_three_near_zero_steps_and_counts_the_heads_removable():
    config = ModelConfig(vocab_size=100, **TINY)
    bleu = iter([20.0, 19.5, 19.2, 18.9, 5.0, 0.4, 0.1, 0.2, 0.0])
    curve = heads.pruned_bleu(_every_head(), lambda mask: next(bleu), config, log=lambda line: None)
    assert curve.bleu == [20.0, 19.5, 19.2, 18.9, 5.0, 0.4, 0.1, 0.2]
    assert curve.removable == 2  # 18.9 with 3 heads off is the first drop of ≥ 1
    assert heads.PruningCurve([], [3.0, 2.5, 2.2]).removable == 2  # never 1 below: every head computed
    assert heads.PruningCurve([], [3.0, 2.0]).removable == 0


def test_running_a_corpus_again_replaces_it_and_keeps_the_others(computed, tmp_path):
    folder = tmp_path / "again"
    shutil.copytree(computed, folder)
    before = _json(folder)["corpora"]
    heads.main(["--checkpoint", str(folder), "--corpus", "alpha", "--data-root", str(computed.parent / "data"),
                "--sentences", "3", "--seed", "7", "--rank-by", "normalized"])
    after = _json(folder)["corpora"]
    assert list(after) == ["alpha", "beta"] and after["beta"] == before["beta"]
    assert after["alpha"]["sentences"] == 3 and after["alpha"]["seed"] == 7
    assert after["alpha"]["ranked_by"] == "normalized"
    result = heads.corpus_importance(folder, "alpha")
    assert result.by_importance.order == heads.importance_order(result.normalized)


def test_the_loader_reads_each_corpus_and_ignores_results_of_other_weights(computed, tmp_path):
    written = _json(computed)["corpora"]
    assert heads.corpus_importance(computed).to_dict() == written["alpha"]
    beta = heads.corpus_importance(computed, "beta")
    assert beta.to_dict() == written["beta"] and beta.full_bleu == written["beta"]["full_bleu"]
    assert heads.corpus_importance(computed, "gamma") is None
    assert heads.corpus_importance(make_checkpoint(tmp_path / "none")) is None
    retrained = tmp_path / "retrained"
    shutil.copytree(computed, retrained)
    make_checkpoint(tmp_path / "other", seed=5)
    shutil.copy(tmp_path / "other" / "model.safetensors", retrained / "model.safetensors")
    assert heads.corpus_importance(retrained) is None


def test_a_missing_checkpoint_or_corpus_is_a_clear_error(computed, tmp_path):
    with pytest.raises(SystemExit, match="does not exist"):
        heads.main(["--checkpoint", str(tmp_path / "nowhere"), "--corpus", "alpha"])
    with pytest.raises(SystemExit, match="corpus folder .* does not exist"):
        heads.main(["--checkpoint", str(computed), "--corpus", "gamma", "--data-root", str(computed.parent / "data")])


def test_the_card_renders_its_pruning_section_from_heads_json(computed, tmp_path):
    folder = tmp_path / "carded"
    shutil.copytree(computed, folder)
    section = card.heads_section(folder)
    alpha, beta = heads.corpus_importance(folder, "alpha"), heads.corpus_importance(folder, "beta")
    for result in (alpha, beta):
        assert (f"| {result.corpus} val | {SENTENCES} | {result.full_bleu:.1f} | {result.removable} | "
                f"{result.random.removable} |") in section
    assert f"`{alpha.by_importance.order[0]}`" in section and "heads.png" not in section
    rest = "# card\n\n## Use\n\nuse it\n\n## Good at, bad at\n\nshort sentences\n"
    (folder / "README.md").write_text(rest)
    (folder / card.HEADS_FIGURE).write_bytes(b"png")
    for _ in range(2):  # a second run replaces the section it wrote
        card.main([str(folder), "--heads-only"])
        text = (folder / "README.md").read_text()
        assert text.count(card.HEADS_HEADING) == 1 and "](heads.png)" in text
        assert text.index("## Use") < text.index(card.HEADS_HEADING) < text.index("## Good at, bad at")
        assert card.with_heads_section(text, "") == rest
    assert card.heads_section(make_checkpoint(tmp_path / "none")) == ""


def test_pruning_figures(computed, tmp_path):
    from PIL import Image

    import viz

    result = heads.corpus_importance(computed, "alpha")
    fig = viz.pruning_curve(result.by_importance.bleu, result.random.bleu, N_HEADS, result.removable, title="t")
    assert [t.name for t in fig.data] == ["least important first", "random order"]
    assert list(fig.data[0].y) == result.by_importance.bleu and list(fig.data[1].x) == list(range(N_HEADS + 1))
    spec = importlib.util.spec_from_file_location("pruning_script", ROOT / "assets" / "pruning.py")
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    folder = tmp_path / "drawn"
    shutil.copytree(computed, folder)
    other = make_checkpoint(tmp_path / "no-heads")
    readme = tmp_path / "pruning.png"
    assert script.main([str(folder), str(other), "--readme", str(readme)]) == [folder / "heads.png", readme]
    for path, size in ((folder / "heads.png", (2 * 440, 34 + 260)), (readme, (2 * 440, 34 + 260))):
        assert path.stat().st_size < 60_000
        assert Image.open(io.BytesIO(path.read_bytes())).size == size


def test_the_hub_uploads_heads_json_and_its_figure(computed, tmp_path):
    folder = tmp_path / "up"
    shutil.copytree(computed, folder)
    (folder / "heads.png").write_bytes(b"png")
    assert {"heads.json", "heads.png"} <= {rel for rel, _ in hub.plan(folder, hub.MODEL_PATTERNS)}


def test_the_pruning_curve_labels_its_line_on_the_side_with_room():
    import viz

    bleu = [20.0 - i for i in range(13)]
    for removable, anchor in ((2, "left"), (10, "right")):  # left of a line at 2 the label would be cut off
        fig = viz.pruning_curve(bleu, bleu, 12, removable)
        [label] = [a for a in fig.layout.annotations if "BLEU lost" in a.text]
        assert label.xanchor == anchor
