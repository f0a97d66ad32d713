"""The trace payload (anatomy/payload.py, docs/payload.md): its fields on a tiny model, its size on the shipped
general de-en model, and the browser's viewer modules (anatomy/viewer/, run by node) against anatomy/views.py on
the same payload: the same weights, hidden cells and labels for every kind, layer, head, word and hide choice."""
from __future__ import annotations

import base64
import dataclasses
import json
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

import viz
from anatomy import attention_views, offline, payload
from anatomy.inputs import View
from anatomy.registry import ModelRegistry
from tests.app_fixtures import SENTENCE, tiny_entry
from transformer import Translator
from transformer.kinds import KINDS, by_name
from transformer.pieces import word_label

ROOT = Path(__file__).resolve().parents[1]
NODE = shutil.which("node")
needs_node = pytest.mark.skipif(NODE is None, reason="node is not installed (scripts/test.sh installs nodejs)")
STEPS = 9  # the tiny random model never ends early
# ~20 words, as tests/test_offline.py's talk sentence
TALK = ("Mein Bruder wohnt seit drei Jahren in Berlin und arbeitet dort als Lehrer an einer großen Schule nahe dem "
        "Bahnhof.")
MAX_BYTES = 150_000


@pytest.fixture(scope="module")
def entry(tmp_path_factory):
    return tiny_entry(tmp_path_factory.mktemp("payload-checkpoints"))


@pytest.fixture(scope="module")
def trace(entry):
    trace = entry.cpu.translate(SENTENCE, beam_size=3, max_new_tokens=STEPS, heads_off="cross:2.1")
    assert len(trace.output_tokens) == STEPS and len(trace.candidates) == 3
    return trace


def decoded(kind: dict) -> np.ndarray:
    a = kind["attention"]
    return np.frombuffer(base64.b64decode(a["weights"]), dtype=np.uint8).reshape(a["shape"]) / a["scale"]


def test_the_payload_names_its_schema_model_settings_and_pieces(trace, entry):
    data = json.loads(payload.to_json(payload.trace_payload(trace, entry, SENTENCE, ["a notice"])))
    assert data["schema"] == "anatomy.trace/1.1"
    assert data["model"] == {"key": "de-en", "label": entry.label, "checkpoint": trace.checkpoint, "source_lang": "de",
                             "target_lang": "en", "untrained": False,
                             "layers": {"encoder": 2, "decoder": 2, "cross": 2}, "heads": 2, "d_model": 32}
    assert data["settings"]["heads_off"] == "cross:2.1" and data["settings"]["precision"] == trace.settings.precision
    assert data["settings"]["beam_size"] == 3 and data["settings"]["stopped"] is False
    assert (data["text"], data["translation"], data["notices"]) == (SENTENCE, trace.text, ["a notice"])
    assert data["cut_by_limit"] is True
    pieces = data["pieces"]
    assert (pieces["source"], pieces["target"], pieces["output"]) == (trace.source_tokens, trace.target_tokens,
                                                                      trace.output_tokens)
    assert "".join(data["piece_texts"]["output"]) == trace.text
    assert len(data["piece_texts"]["source"]) == len(trace.source_tokens)
    assert [[c[0] for c in row] for row in data["top_k"]] == [[c.token for c in row] for row in trace.top_k]
    assert [c["pieces"] for c in data["candidates"]] == [c.tokens for c in trace.candidates]
    assert data["candidates"][0]["score"] == round(trace.candidates[0].score, 4)
    assert len(data["stats"]) == 3 * 2 * 2 and data["stats"][0]["kind"] == "encoder"
    assert data["stats"][0]["monotonic"] is None and data["stats"][-1]["monotonic"] is not None


def test_each_kind_travels_as_uint8_within_half_a_step_with_its_axes_and_words(trace, entry):
    data = payload.trace_payload(trace, entry)
    assert [k["name"] for k in data["kinds"]] == [k.name for k in KINDS]
    assert [k["off"] for k in data["kinds"]] == [[], [], [[2, 1]]]
    for kind in data["kinds"]:
        maps = trace.attention(kind["name"])
        assert kind["attention"]["shape"] == list(maps.weights.shape) and kind["attention"]["scale"] == 255
        assert np.abs(decoded(kind) - maps.weights).max() <= 0.5 / 255 + 1e-7
        every, shown = kind["axes"]["all"], kind["axes"]["hidden"]
        assert every["rows"] == list(range(len(maps.queries))) and every["cols"] == list(range(len(maps.keys)))
        assert not {maps.keys[j] for j in shown["cols"]} & {"<s>", "</s>", "<pad>"}
        for axes in (every, shown):
            keys = [maps.keys[j] for j in axes["cols"]]
            assert axes["keys"] == keys
            assert axes["key_words"] == [word_label([keys[j] for j in g]) for g in axes["key_groups"]]
            assert sorted(i for g in axes["query_groups"] for i in g) == list(range(len(axes["rows"])))
    source = data["kinds"][0]["axes"]["all"]
    assert len(source["key_groups"]) < len(trace.source_tokens)  # the tiny vocabulary splits words
    cross = data["kinds"][2]["axes"]["all"]
    assert cross["queries"][0] == ["<s>", trace.output_tokens[0]] and len(cross["query_words"][0]) == 2


@pytest.mark.slow
def test_the_payload_of_a_20_word_sentence_on_the_shipped_model_is_at_most_150_kb():
    folder = ROOT / "checkpoints" / "general-de-en"
    if not (folder / "model.safetensors").is_file():
        pytest.skip("checkpoints/general-de-en is not here")
    entry = ModelRegistry.discover([str(folder)]).get("de-en")
    trace = Translator.from_checkpoint(folder, device="cpu").translate(TALK, beam_size=5)
    size = len(payload.to_json(payload.trace_payload(trace, entry, TALK, [])).encode("utf-8"))
    assert len(TALK.split()) == 20 and len(trace.candidates) == 5
    assert size <= MAX_BYTES, f"{size} bytes"


def _views_in_node(data: dict, tmp_path: Path) -> list[dict]:
    path = tmp_path / "payload.json"
    path.write_text(payload.to_json(data), encoding="utf-8")
    done = subprocess.run([NODE, str(ROOT / "tests" / "js" / "shown.mjs"), str(path)], capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return [json.loads(line) for line in done.stdout.splitlines()]


def _stored(trace):
    """The trace with its weights as the payload carries them."""
    return dataclasses.replace(trace, **{k.trace_field: payload.quantised(trace.attention(k.name).weights) / 255
                                         for k in KINDS})


@pytest.mark.slow
@needs_node
def test_the_viewer_shows_what_the_python_views_show(trace, entry, tmp_path):
    """The same weights as the Python views on the payload's numbers (to float rounding), hidden cells and labels,
    for every kind, layer, head and mean, words or pieces, plain or not, special tokens hidden or not; a view of
    pieces as they are within 0.5/255 of the trace's (merging sums errors, renormalising scales them)."""
    records = _views_in_node(payload.trace_payload(trace, entry), tmp_path)
    shown = [r for r in records if "step" not in r]
    assert len(shown) == 3 * 2 * 2 * (1 + 2) * 3
    stored = _stored(trace)
    for got in shown:
        view = View.of(got["kind"], got["layer"], got["head"], got["merge"], plain=got["plain"], hide=got["hide"])
        want, exact = attention_views.matrix(stored, view), attention_views.matrix(trace, view)
        weights = np.array(got["weights"], dtype=np.float64).reshape(want.weights.shape)
        np.testing.assert_allclose(weights, want.weights, atol=1e-6, err_msg=str(view))
        if not (view.merge or view.hide):
            assert np.abs(weights - exact.weights).max() <= 0.5 / 255 + 1e-6, view
        hidden = None if want.hidden is None else want.hidden.tolist()
        assert got["hidden"] == hidden, view
        assert got["queries"] == viz.query_labels(want.queries) and got["keys"] == viz.labels(want.keys), view


@pytest.mark.slow
@needs_node
def test_node_refuses_a_payload_of_another_major_version(trace, entry, tmp_path):
    data = {**payload.trace_payload(trace, entry), "schema": "anatomy.trace/2"}
    path = tmp_path / "payload.json"
    path.write_text(payload.to_json(data), encoding="utf-8")
    done = subprocess.run([NODE, str(ROOT / "tests" / "js" / "shown.mjs"), str(path)], capture_output=True,
                          text=True, timeout=60)
    assert done.returncode != 0
    assert "this viewer reads anatomy.trace/1 payloads, not anatomy.trace/2: update the viewer" in done.stderr


@pytest.mark.slow
@needs_node
def test_the_viewer_s_step_rows_are_the_python_step_panels(trace, entry, tmp_path):
    """Each decoding step's cross-attention and masked self-attention row (figures.js `stepRow`) as
    attention_views.step_row makes it, for every layer, head and mean, words (a word cut at the step included),
    plain pieces and special tokens hidden."""
    steps = [r for r in _views_in_node(payload.trace_payload(trace, entry), tmp_path) if "step" in r]
    assert len(steps) == 2 * len(trace.output_tokens) * 2 * 3 * 2 * 3
    stored = _stored(trace)
    for got in steps:
        view = View.of("cross", got["layer"], got["head"], got["merge"], plain=got["plain"], hide=got["hide"])
        want = attention_views.step_row(stored, view, by_name(got["kind"]), got["step"] - 1)
        np.testing.assert_allclose(got["row"], want.weights, atol=1e-6, err_msg=str(got))
        assert got["keys"] == list(want.keys) and tuple(got["query"]) == want.query, got


def test_a_branch_s_payload_names_its_forced_pieces_parting_step_and_each_piece_s_log_p(entry):
    own = entry.cpu.translate(SENTENCE, max_new_tokens=STEPS)
    branch = entry.cpu.translate(SENTENCE, max_new_tokens=STEPS, prefix=[own.output_tokens[0], "nde"])
    data = json.loads(payload.to_json(payload.trace_payload(branch, entry, SENTENCE)))
    s = data["settings"]
    assert (s["mode"], s["prefix"], s["beam_size"]) == ("branch", [own.output_tokens[0], "nde"], 1)
    assert s["parts_at"] == (1 if own.output_tokens[1] != "nde" else 2)
    assert data["pieces"]["output"][:2] == s["prefix"]
    assert data["log_probs"] == [round(p, 4) for p in branch.log_probs] and len(data["log_probs"]) == STEPS
    assert data["log_prob"] == round(sum(branch.log_probs), 4)
    parted = 1 if own.output_tokens[1] != "nde" else None
    assert f"branch: 2 forced pieces ({own.output_tokens[0]} nde), " + (
        "parting from the model's own choice at step 2" if parted else "each the model's own choice") in \
        offline.about(branch, entry)  # what the offline page and the exports say it was made with
    plain = json.loads(payload.to_json(payload.trace_payload(own, entry, SENTENCE)))["settings"]
    assert (plain["mode"], plain["prefix"], plain["parts_at"]) == ("greedy", [], None)
