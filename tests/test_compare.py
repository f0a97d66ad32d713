"""Two sentences side by side (anatomy/compare.py, anatomy/viewer/compare.js): the words they share matched in order
by Python and the browser alike, the difference of every view equal to the two payloads' arrays subtracted over the
matched words (Node and Python on the same payloads), the second sentence's step at the first's output word, a pair
with no shared word said so, and the pair in the payload."""
from __future__ import annotations

import dataclasses
import json
import random
import subprocess
import types
import urllib.parse
from pathlib import Path

import numpy as np
import pytest

from anatomy import compare, payload
from anatomy.inputs import View
from tests.app_fixtures import SENTENCE
from tests.test_payload import NODE, ROOT, _stored, entry, needs_node  # noqa: F401  (entry: the tiny model)
from tests.viewer import drawn

OTHER = "Zwei Katzen spielen im Garten."
APART = "Ich lese gern."  # no word of SENTENCE
STEPS = 9


@pytest.fixture(scope="module")
def traces(entry):
    return [entry.cpu.translate(text, max_new_tokens=STEPS) for text in (SENTENCE, OTHER, APART)]


def _node(data: dict, tmp_path) -> dict:
    path = tmp_path / "pair.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    done = subprocess.run([NODE, str(ROOT / "tests" / "js" / "compare.mjs"), str(path)], capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_the_matching_is_a_longest_common_subsequence_in_order():
    a, b = list("abcbdab"), list("bdcaba")
    pairs = compare.matched(a, b)
    assert len(pairs) == 4 and all(a[i] == b[j] for i, j in pairs)  # "bcba", "bdab": the longest is 4 long
    assert all(i < k and j < m for (i, j), (k, m) in zip(pairs, pairs[1:]))
    assert compare.matched(["it", "was", "tired."], ["it", "was", "wide."]) == [(0, 0), (1, 1)]
    assert compare.matched(["x"], []) == [] and compare.matched([], []) == []
    # a decoder position's word is the one it writes, whatever it read
    assert compare.matched([["a", "b"], ["b", "c"]], [["z", "b"], ["q", "c"]]) == [(0, 0), (1, 1)]
    # an unmatched word's counterpart is as far past the last shared one, before the next shared one
    pairs = [(0, 0), (1, 1), (3, 4)]
    assert [compare.counterpart(i, pairs, 6) for i in range(5)] == [0, 1, 2, 4, 5]
    assert compare.counterpart(2, [(0, 0), (3, 1)], 3) == 0


@pytest.mark.slow
@needs_node
def test_python_and_the_viewer_match_the_same_words_and_subtract_the_same_weights(entry, traces, tmp_path):
    """On the same payloads: compare.js's matching is the payload's `pair.matching`; every kind's difference (words
    or pieces, special tokens hidden or not, a head or the mean) is the Python views' arrays of the two payloads,
    subtracted over the matched labels, within float rounding; random label lists match alike."""
    first, second = traces[0], traces[1]
    p1, p2 = payload.trace_payload(first, entry, SENTENCE), payload.trace_payload(second, entry, OTHER)
    views = [View(kind, 2, head, merge, hide=hide) for kind in ("encoder", "decoder", "cross")
             for head in ("mean", "1") for merge in (False, True) for hide in (False, True)]
    rng = random.Random(5)
    lists = [[[rng.choice("abcde") for _ in range(rng.randint(0, 12))] for _ in range(2)] for _ in range(50)]
    got = _node({"first": p1, "second": p2, "lists": lists,
                 "views": [{**dataclasses.asdict(v), "step": 0, "weights": "attention"} for v in views]}, tmp_path)
    assert got["matching"] == compare.pair_field(p1, p2, OTHER)["matching"]
    assert got["matching"]["source"], "the two sentences share words"
    assert got["lists"] == [[list(p) for p in compare.matched(a, b)] for a, b in lists]
    stored = [_stored(first), _stored(second)]
    for view, d in zip(views, got["differences"]):
        want = compare.difference(*stored, view)
        assert d["rows"] == [list(r) for r in want.rows] and d["cols"] == [list(c) for c in want.cols], view
        w = np.array([[np.nan if x is None else x for x in row] for row in d["w"]], dtype=np.float64)
        np.testing.assert_allclose(w.reshape(want.weights.shape), want.weights, atol=1e-6, err_msg=str(view))
        assert d["differ"] == {k: [list(x) for x in v] for k, v in want.differ.items()}, view
        assert view.kind != "encoder" or (want.rows and want.cols), view  # the sources share words


@pytest.mark.slow
@needs_node
def test_the_second_sentence_moves_to_the_first_s_output_word(entry, traces, tmp_path):
    """A step moves the second sentence to the same output word where the outputs share it, else to its own step
    as far past the last shared word (compare.counterpart on the payload's word matching); on the same sentence
    every step is the same step."""
    first = traces[0]
    p1 = payload.trace_payload(first, entry, SENTENCE)
    same = _node({"first": p1, "second": p1, "lists": [],
                  "views": [{"kind": "cross", "layer": 1, "head": "mean", "step": t} for t in range(1, STEPS + 1)]},
                 tmp_path)
    assert [v["step"] for v in same["paired"]] == list(range(1, STEPS + 1))
    p2 = payload.trace_payload(traces[1], entry, OTHER)
    got = _node({"first": p1, "second": p2, "lists": [],
                 "views": [{"kind": "cross", "layer": 1, "head": "mean", "step": t} for t in range(1, STEPS + 1)]},
                tmp_path)
    words = [k for k in p1["kinds"] if k["name"] == "cross"][0]["axes"]["all"]["query_groups"]
    theirs = [k for k in p2["kinds"] if k["name"] == "cross"][0]["axes"]["all"]["query_groups"]
    pairs = [tuple(p) for p in got["matching"]["output"]]
    for t, v in enumerate(got["paired"], 1):
        k = next(i for i, g in enumerate(words) if t - 1 in g)
        word = theirs[compare.counterpart(k, pairs, len(theirs))]
        assert v["step"] - 1 == word[min(words[k].index(t - 1), len(word) - 1)], t


@pytest.mark.slow
@needs_node
def test_a_pair_with_no_shared_word_says_so_instead_of_an_empty_difference(entry, traces):
    p1, p3 = payload.trace_payload(traces[0], entry, SENTENCE), payload.trace_payload(traces[2], entry, APART)
    with_pair = {**p1, "pair": compare.pair_field(p1, p3, APART)}
    apart, shared = drawn(with_pair, [View("encoder", 1, "mean", True, hide=True), View("encoder", 1, "mean", True)])
    assert apart["pair-difference"]["layout"]["meta"]["empty"] == \
        "The two sentences share no word on these axes: there is no difference to draw."
    # with the end piece shown, they share it: one cell, drawn
    z = shared["pair-difference"]["data"][0]["z"]
    assert np.array(z).shape == (1, 1)
    assert "only in sentence 1: Zwei, Hunde" in shared["pair-difference"]["layout"]["annotations"][0]["text"]
    # both sentences drawn, each its own, on the one 0-1 scale
    first, second = shared["heatmap"]["data"][0], shared["heatmap-second"]["data"][0]
    assert (first["zmin"], first["zmax"], second["zmin"], second["zmax"]) == (0, 1, 0, 1)
    assert first["colorscale"] == second["colorscale"]
    assert shared["heatmap"]["layout"]["title"]["text"].startswith("Sentence 1: Encoder self-attention")
    assert shared["heatmap-second"]["layout"]["title"]["text"].startswith("Sentence 2: Encoder self-attention")
    assert len(second["y"]) == len(compare.side_words(p3, "source"))  # the second's own words


@pytest.mark.slow  # seconds: the command
def test_the_notebook_and_the_command_carry_the_pair(entry, monkeypatch, tmp_path, capsys):
    """show(text, compare=...) and `python -m anatomy.export html ... --compare TEXT`: the page's payload holds the
    second sentence's payload and the words the two share; a second text that cannot be translated is refused."""
    from anatomy import export, notebook
    from anatomy.registry import ModelRegistry
    from tests.test_offline import data_of

    monkeypatch.setattr(notebook, "registry", lambda: ModelRegistry([entry], []))
    shown = notebook.show(SENTENCE, compare=OTHER)
    pair = data_of(shown.page())["payload"]["pair"]
    assert pair["text"] == OTHER and pair["second"]["translation"] == shown.pair.trace.text
    assert pair["matching"] == compare.matching(data_of(shown.page())["payload"], pair["second"])
    assert "pair" not in data_of(notebook.show(SENTENCE).page())["payload"]
    with pytest.raises(TypeError, match="compare takes a text"):
        notebook.show(SENTENCE, compare=3)
    monkeypatch.setenv("ANATOMY_CHECKPOINT_DIR", str(Path(entry.source).parent))
    monkeypatch.delenv("ANATOMY_HUB_MODELS", raising=False)
    out = tmp_path / "pair.html"
    assert export.main(["html", SENTENCE, "--direction", "de-en", "--out", str(out), "--compare", OTHER]) == 0
    assert ", beside " in capsys.readouterr().out
    carried = data_of(out.read_text(encoding="utf-8"))["payload"]
    assert carried["pair"]["text"] == OTHER and carried["pair"]["matching"]["source"]
    assert export.main(["html", SENTENCE, "--direction", "de-en", "--out", str(out), "--compare", " "]) == 2
    assert "--compare: Nothing to translate" in capsys.readouterr().err


def test_the_app_translates_both_in_one_model_event_and_a_link_carries_the_pair(tiny, monkeypatch):
    """Translate with Compare with… filled in: one event (in the model's group: tests/test_wiring.py) makes both
    translations, by the same model and settings, and sends one payload with the pair; the link to the view carries
    the second sentence, and opening it translates both again."""
    from anatomy import engine
    from anatomy.inputs import View, build_link, parse_link
    from tests.app_fixtures import configs
    from ui.values import Branching, Inputs, PageSettings, StopSignal

    p, calls = tiny.page, []
    monkeypatch.setattr(engine, "translate", lambda t, r, *a, _real=engine.translate, **k: calls.append(r.text) or
                        _real(t, r, *a, **k))
    settings = PageSettings("de-en", SENTENCE, 3, 6, "cpu", 5, 1.0, 0.0, compare=OTHER)
    out = list(tiny.translate_page(Inputs(settings, signal=StopSignal())))[-1]
    run, sent = out[p.run], out[p.trace_data]
    assert calls == [SENTENCE, OTHER] and run.pair.text == OTHER
    assert run.pair.trace.settings.beam_size == 3 and run.pair.trace.settings.max_new_tokens == 6
    assert sent["pair"]["second"]["translation"] == run.pair.trace.text
    assert sent["pair"]["matching"] == compare.matching(sent, sent["pair"]["second"])
    query = build_link(run.request, View())
    assert "compare=Zwei+Katzen+spielen+im+Garten." in query
    link = parse_link(dict(urllib.parse.parse_qsl(query[1:])), configs(tiny))
    assert link.compare == OTHER
    calls.clear()
    linked = tiny.translate_link(Inputs(link=link, signal=StopSignal()))[p.run]
    assert calls == [SENTENCE, OTHER] and linked.pair.trace.text == run.pair.trace.text
    # a branch of the first sentence keeps the second's translation: it was asked the same
    calls.clear()
    other = next(t.token for t in run.trace.top_k[1] if t.token != run.trace.output_tokens[1])
    branched = tiny.branch(Inputs(run=run, view=View(), branch=Branching(step=1, piece=other)))[p.run]
    assert calls == [SENTENCE] and branched.pair.trace is run.pair.trace
    # heads off change how both are decoded: both again
    calls.clear()
    off = tiny.ablate(Inputs(dataclasses.replace(settings, heads_off=("encoder:1.1",)), run=run, view=View()))[p.run]
    assert calls == [SENTENCE, OTHER] and off.pair.trace.settings.heads_off == "encoder:1.1"
    # a single sentence: no pair
    alone = list(tiny.translate_page(Inputs(dataclasses.replace(settings, compare=""), signal=StopSignal())))[-1]
    assert alone[p.run].pair is None and "pair" not in alone[p.trace_data]


@pytest.mark.parametrize("key", ["en-de", "de-en"])
def test_the_example_pair_translates_both_and_opens_at_its_pronoun_where_the_row_differs_most(shipped, key):
    """The well-known pair, in both directions, is an example of the page (text, direction, Compare with…); it
    translates both sentences and opens at the encoder self-attention row of its pronoun (it; es and sie), in
    words, at the layer and head where that row, over the words the two share, differs most."""
    from anatomy.attention_views import matrix
    from ui.values import Inputs, PageSettings, StopSignal

    h = shipped.anatomy
    entry = h.registry.get(key)
    if entry.untrained:
        pytest.skip(f"checkpoints/general-{key} is not here")
    first, second, word, other = entry.pairs[0]
    assert (first, key, second) in h.page.example_items
    settings = PageSettings(key, first, entry.decoding.beam_size, 0, "cpu", 5, entry.decoding.length_penalty, 0.0,
                            compare=second)
    out = list(h.translate_page(Inputs(settings, signal=StopSignal())))[-1]
    run, sent = out[h.page.run], out[h.page.trace_data]
    assert sent["pair"]["text"] == second and sent["pair"]["second"]["translation"] == run.pair.trace.text
    opens = sent["opens_at"]
    assert (opens["kind"], opens["merge"]) == ("encoder", True)
    assert run.trace.source_tokens[opens["query"] - 1] == "▁" + word
    change = {}
    for layer in range(1, entry.config.n_encoder_layers + 1):
        for head in range(1, entry.config.n_heads + 1):
            view = View("encoder", layer, str(head), True)
            a, b = matrix(run.trace, view), matrix(run.pair.trace, view)
            i, j = a.queries.index(word), b.queries.index(other)
            keys = [(x, y) for x, y in compare.matched(a.keys, b.keys)]
            change[layer, head] = sum(abs(b.weights[j, y] - a.weights[i, x]) for x, y in keys)
    assert (opens["layer"], int(opens["head"])) == max(change, key=change.get)
    assert change[opens["layer"], int(opens["head"])] > 0
    # a link to the pair that names no view opens there too (the payload's opens_at, no view of the link's over it);
    # one that names a view opens at that view
    query = {"text": first, "direction": key, "compare": second}
    for extra, named in (({}, False), ({"layer": "1"}, True)):
        link = h.open_link(Inputs(signal=StopSignal()), types.SimpleNamespace(query_params={**query, **extra}))
        assert link[h.page.trace_data]["opens_at"] == opens
        assert ("layer" in link[h.page.view_set]) is named and "asked" in link[h.page.view_set], link[h.page.view_set]
