"""The app: model discovery, keys and labels, the handlers behind each control, and the /translate API.

Most tests run on tiny random-weight checkpoints built here (fast, independent of training);
the gradio_client test of translation quality uses the shipped checkpoints.
"""
from __future__ import annotations

import ast
import base64
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")

import gradio as gr  # noqa: E402
from gradio.components.plot import PlotData  # noqa: E402

import ui  # noqa: E402
from anatomy import architecture_views, attention_views, payload, training_views, views  # noqa: E402
from anatomy.inputs import View  # noqa: E402
from anatomy.registry import ModelRegistry, cuda_available, default_sources, device_choices  # noqa: E402
from anatomy.run import StopSignal  # noqa: E402
from tests import viewer  # noqa: E402
from tests.app_fixtures import SENTENCE, make_checkpoint, make_tokenizer, replayed, run_of, show, translate  # noqa: E402
from tests.viewer import needs_node  # noqa: E402
from transformer import Trace  # noqa: E402
from transformer.checkpoint import DEFAULT_BEAM, DEFAULT_LENGTH_PENALTY  # noqa: E402
from ui.values import Inputs, PageSettings, Session, Tab  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


def assert_complete(trace, L=2, H=2):
    S, T = len(trace.source_tokens), len(trace.output_tokens)
    assert trace.encoder_self_attn.shape == (L, H, S, S)
    assert trace.decoder_self_attn.shape == (L, H, T, T)
    assert trace.cross_attn.shape == (L, H, T, S)
    np.testing.assert_allclose(trace.cross_attn.sum(-1), 1.0, rtol=1e-4)


# ---- layering --------------------------------------------------------------------------------

@pytest.mark.slow  # a subprocess
def test_the_model_side_never_imports_gradio():
    """anatomy/ and viz/ are Gradio-free: checked on their source, and on what importing them loads."""
    for folder in ("anatomy", "viz"):
        for path in (ROOT / folder).glob("*.py"):
            tree = ast.parse(path.read_text())
            names = [a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names]
            names += [n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)]
            assert not [n for n in names if n.split(".")[0] in ("gradio", "ui", "app")], path
    code = ("import importlib, pkgutil, sys, anatomy\n"
            "for module in pkgutil.iter_modules(anatomy.__path__): importlib.import_module(f'anatomy.{module.name}')\n"
            "print('gradio' in sys.modules)")
    assert subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                          check=True).stdout.strip() == "False"


@pytest.mark.slow  # a subprocess
def test_importing_app_loads_no_model_starts_no_thread_and_sets_no_environment():
    code = ("import os, sys, threading; env = dict(os.environ); import app; "
            "print(threading.active_count(), dict(os.environ) == env, 'torch' in sys.modules, "
            "'anatomy.registry' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True,
                         env={**os.environ, "GRADIO_ANALYTICS_ENABLED": "False"}).stdout.split()
    assert out == ["1", "True", "False", "False"]


# ---- discovery, keys and labels ---------------------------------------------------------------

def test_discovery_names_directions_and_skips_broken_folders(tiny):
    reg = tiny.registry
    assert list(reg.entries) == ["de-en", "en-de"]
    assert reg.choices() == [("German → English", "de-en"), ("English → German", "en-de")]
    assert len(reg.notices) == 1 and "broken" in reg.notices[0] and "model.safetensors" in reg.notices[0]
    assert not any(e.untrained for e in reg.entries.values())
    assert reg.get("de-en").metrics[-1]["val_bleu"] == 4.25


def test_keys_and_labels_follow_discovery_order_and_domains(tmp_path):
    tok = make_tokenizer()
    make_checkpoint(tmp_path / "b-everyday-de-en", "de", "en", tokenizer=tok, domain="everyday")
    make_checkpoint(tmp_path / "a-captions-de-en", "de", "en", tokenizer=tok, domain="image captions")
    make_checkpoint(tmp_path / "c-de-en", "de", "en", tokenizer=tok)
    make_checkpoint(tmp_path / "d-en-de", "en", "de", tokenizer=tok)
    make_checkpoint(tmp_path / "e-en-de", "en", "de", tokenizer=tok)
    os.environ["ANATOMY_CHECKPOINT_DIR"] = str(tmp_path)
    try:
        sources = default_sources()
    finally:
        del os.environ["ANATOMY_CHECKPOINT_DIR"]
    reg = ModelRegistry.discover(sources)
    assert reg.choices() == [("German → English · image captions", "de-en"),
                             ("German → English · everyday", "b-everyday-de-en"),
                             ("German → English", "c-de-en"),
                             ("English → German (d-en-de)", "en-de"),
                             ("English → German (e-en-de)", "e-en-de")]
    assert reg.default_key == "de-en" and reg.get("de-en").source.endswith("a-captions-de-en")


def test_duplicate_folders_and_bad_hub_ids(folders):
    reg = ModelRegistry.discover([str(folders / "tiny-de-en"), str(folders / "tiny-de-en"), "hf://not-a-repo"])
    assert list(reg.entries) == ["de-en", "tiny-de-en"]
    assert reg.entries["tiny-de-en"].label == "German → English (tiny-de-en)"
    assert any("hf://not-a-repo" in n for n in reg.notices)


def test_checkpoint_dir_and_hub_env(folders, monkeypatch):
    monkeypatch.setenv("ANATOMY_CHECKPOINT_DIR", str(folders))
    monkeypatch.setenv("ANATOMY_HUB_MODELS", " hf://a/b , hf://c/d ")
    assert default_sources() == [str(folders / n) for n in ("broken", "tiny-de-en", "tiny-en-de")] + [
        "hf://a/b", "hf://c/d"]


def test_untrained_fallback_is_labelled_and_usable(folders):
    reg = ModelRegistry.discover([str(folders / "broken")])
    assert list(reg.entries) == ["de-en", "en-de"]
    assert all(e.untrained and "untrained" in e.label for e in reg.entries.values())
    assert any("untrained" in n for n in reg.notices) and any("broken" in n for n in reg.notices)
    entry = reg.get("de-en")
    assert entry.config.d_model == 256 and entry.config.vocab_size == make_tokenizer().vocab_size  # tokenizer reused
    trace = entry.cpu.translate("Zwei Hunde.", max_new_tokens=3)
    assert len(trace.output_tokens) <= 3
    assert "untrained" in architecture_views.architecture_markdown(entry).lower()
    assert "untrained" in training_views.training_markdown(entry)
    bare = ModelRegistry.discover([])  # no folder at all: a tokenizer trained on the example sentences
    assert all(e.untrained for e in bare.entries.values()) and "example sentences" in bare.notices[0]


def test_model_card_figures_are_inlined_or_named(tmp_path):
    """The Training tab shows a card's figures: the page serves no checkpoint file, so a relative one is inlined."""
    png = b"\x89PNG\r\n\x1a\n" + bytes(20)
    (tmp_path / "heads.png").write_bytes(png)
    card = ("![Val BLEU as heads go](heads.png)\n![gone](missing.png)\n![remote](https://example.org/a.png)\n"
            "[a link](notes.md)")
    out = training_views.card_figures(card, tmp_path)
    assert f"![Val BLEU as heads go](data:image/png;base64,{base64.b64encode(png).decode()})" in out
    assert "![gone]" not in out and "`missing.png`" in out
    assert "![remote](https://example.org/a.png)" in out and "[a link](notes.md)" in out
    assert "heads.png)" not in training_views.card_figures(card, None)  # a Hub card: named, never broken


def test_device_choice_falls_back_to_cpu_with_a_notice(tiny):
    translator, notice = tiny.registry.translator("de-en", "cuda")
    if cuda_available():
        assert translator.device.type == "cuda" and notice == ""
    else:
        assert translator.device.type == "cpu" and "CUDA is not available" in notice
        assert "cuda" not in device_choices()
    assert tiny.registry.translator("de-en", "cpu")[1] == ""
    assert tiny.registry.translator("de-en", "cpu")[0] is tiny.registry.translator("de-en", "cpu")[0]


def test_translators_are_made_once_under_concurrent_first_use(folders):
    from concurrent.futures import ThreadPoolExecutor

    entry = ModelRegistry.discover([str(folders / "tiny-de-en")]).get("de-en")
    with ThreadPoolExecutor(8) as pool:
        twins = list(pool.map(lambda _: entry.twin(), range(16)))
    assert all(t is twins[0] for t in twins)


# ---- translating in the UI --------------------------------------------------------------------

def test_translate_streams_then_show_draws_the_run(tiny, monkeypatch):
    from ui.handlers import model as handlers

    monkeypatch.setattr(handlers, "TEXT_INTERVAL", 0.0)
    p = tiny.page
    outs = translate(tiny, max_new=6)
    assert outs[0][p.src_chips] and outs[0][p.translation] == ""
    streamed = [o for o in outs[1:-1]]
    assert [len(o[p.out_chips]) for o in streamed] == list(range(1, 7))  # one yield per generated piece
    assert not any(isinstance(v, PlotData) for o in outs for v in o.values())  # figures are the page's own
    assert p.trace_data not in outs[-2] and p.trace_data in outs[-1]  # the Run's payload comes with the Run
    run = outs[-1][p.run]
    expected = tiny.registry.get("de-en").cpu.translate(SENTENCE, max_new_tokens=6)
    assert run.trace.output_tokens == expected.output_tokens and run.trace.settings.direction == "de-en"
    np.testing.assert_allclose(run.trace.cross_attn, np.asarray(expected.cross_attn), atol=1e-4)
    assert_complete(run.trace)
    last = show(tiny, run)[-1]
    assert last[p.translation] == expected.text
    # the viewer draws from the trace payload (anatomy/payload.py), the same one the offline page and notebooks get
    sent = dict(last[p.trace_data])
    assert sent.pop("opens_at") == {"layer": 2, "head": "mean", "step": 6, "query": 1}  # as the controls are set
    assert sent == payload.trace_payload(run.trace, tiny.registry.get("de-en"), SENTENCE, list(run.notices))
    assert "length limit" in last[p.run_info]
    assert "link to this view" in last[p.run_info]
    # the trace's file is written when Download trace asks for it, a file of its own each time
    written = [tiny.trace_json(Inputs(run=run))[p.trace.file]["value"] for _ in range(2)]
    assert written[0] != written[1] and Path(written[0]).read_text() == Path(written[1]).read_text()
    downloaded = Trace.from_json(Path(written[0]).read_text())
    assert (downloaded.top_k, downloaded.settings) == (run.trace.top_k, run.trace.settings)


def test_beam_candidates_use_the_runs_direction_not_the_controls(tiny):
    """After a de→en beam run, Direction switched to en→de: a candidate is still forced through de→en, and the
    page's link says de-en."""
    p = tiny.page
    run = run_of(tiny, beam=3, max_new=8)
    assert len(run.trace.candidates) >= 2
    # a click on its row: the viewer asks for it with its row in the view (page.js pick); reads no control, so the
    # Direction dropdown cannot mislead it
    asked = {p.session: Session(run=run), p.view: json.dumps({"ask": "candidate", "candidate": 1})}
    picked = tiny.ask_model(Inputs.of(p, asked), None)[p.run]
    de_en = tiny.registry.get("de-en").cpu
    expected = de_en.force_output(list(run.trace.source_ids), run.trace.candidates[1].ids)
    np.testing.assert_allclose(picked.trace.cross_attn, expected.cross_attn, atol=1e-5)
    assert picked.request.key == "de-en" and picked.trace.candidates == run.trace.candidates
    info = show(tiny, picked)[-1][p.run_info]
    assert "Beam candidate #2" in info and "direction=de-en" in info
    assert tiny.share(Inputs(run=picked, view=View.of("cross", 1, "mean", False))).startswith("?direction=de-en&")


def test_an_empty_beam_candidate_is_shown_as_empty(tiny):
    run = run_of(tiny, beam=2, max_new=3)
    cands = [dataclass_replace(c, text="", tokens=[]) for c in run.trace.candidates]
    rows = views.candidate_rows(dataclass_replace(run.trace, candidates=cands))
    assert rows[0][1] == views.EMPTY and rows[0][4] == 1


def dataclass_replace(obj, **changes):
    import dataclasses

    return dataclasses.replace(obj, **changes)


@pytest.mark.slow  # node draws the frames
@needs_node
def test_slow_motion_shows_rows_only_up_to_the_current_step(tiny):
    p = tiny.page
    run = run_of(tiny, slow=0.1, max_new=4)
    assert run.replay
    frames = show(tiny, run)
    T = len(run.trace.output_tokens)
    assert len(frames) == T + 1
    for t, frame in enumerate(frames[:-1], start=1):
        page = viewer.drawn(frame[p.trace_data], [View.of("cross", 1, "mean", False, t)])[0]
        assert len(page["heatmap"]["layout"]["yaxis"]["ticktext"]) == t  # no row before it is generated
        assert frame[p.trace_data]["opens_at"]["step"] == t and len(frame[p.out_chips]) == t
        assert f"Step {t} " in viewer.title(page["step-cross"])
    assert frames[-1][p.run].replay is False and "source pieces" in frames[-1][p.run_info]


def test_stop_during_slow_motion_keeps_the_steps_so_far(tiny):
    p = tiny.page
    signal = StopSignal()
    run = run_of(tiny, slow=0.1, max_new=5, signal=signal)
    last = replayed(tiny, Inputs(run=run, view=View.of("cross", 1, "mean", False), signal=signal), stop_after=2)[-1]
    kept = last[p.run]
    assert len(kept.trace.output_tokens) == 2 and not kept.replay
    assert "stopped at step 2 of 5" in last[p.run_info] and "Error" not in last[p.run_info]
    assert last[p.trace_data]["pieces"]["output"] == kept.trace.output_tokens  # what the viewer draws from now
    assert last[p.translation] == kept.trace.text and last[p.trace_data]["opens_at"]["step"] == 2


def _stopped_at_once(tiny) -> dict:
    """The page's last frame when Stop is clicked before a slow-motion replay draws its first frame."""
    signal = StopSignal()
    run = run_of(tiny, slow=0.1, max_new=5, signal=signal)
    tiny.stop(Inputs(signal=signal))
    frames = replayed(tiny, Inputs(run=run, view=View.of("cross", 1, "mean", False), signal=signal))
    assert len(frames) == 1  # no frame: the run as stopped, at once
    return frames[0]


def test_stop_before_the_first_frame_leaves_no_step_and_every_tab_still_opens(tiny):
    """Stop clicked before a slow-motion replay draws its first frame: the page says nothing was kept, and every tab
    opens on that run without an error (Figure 1 drawn as if at step 1, as the offline file draws it; Why this word
    makes nothing: there is no piece to explain)."""
    p = tiny.page
    last = _stopped_at_once(tiny)
    kept = last[p.run]
    assert kept.trace.output_tokens == [] and not kept.replay and kept.trace.settings.stopped
    assert "stopped at step 0 of 5" in last[p.run_info] and last[p.translation] == ""
    # the whole run was cut by its limit of 5 pieces; what was kept was stopped, and says only that
    assert run_of(tiny, max_new=5).trace.cut_by_limit
    assert not any("length limit" in n for n in kept.notices) and "length limit" not in last[p.run_info]
    for tab in Tab:
        opened = Inputs(run=kept, tab=tab, view=View.of("cross", 1, "mean", False))
        made = tiny.make_tab(opened)
        if tab == Tab.WHY:
            assert made == gr.skip()
        tiny.tab_view(opened)
    arch = tiny.tab_view(Inputs(run=kept, tab=Tab.ARCHITECTURE))[p.tab_data]["figures"]["architecture"]
    shapes = " ".join(a["text"] for a in arch["layout"]["annotations"])
    assert f"(B, S) = (1, {len(kept.trace.source_tokens)})" in shapes and "(B, T) = (1, 1)" in shapes
    assert arch["layout"]["title"]["text"].startswith("Shapes for this translation")


@pytest.mark.slow  # node draws the page
@needs_node
def test_stop_before_the_first_frame_draws_a_page_that_says_nothing_was_decoded(tiny):
    page = viewer.drawn(_stopped_at_once(tiny)[tiny.page.trace_data], [View.of("cross", 1, "mean", False)])[0]
    assert "No decoding step" in json.dumps(page["step-cross"])
    for box in ("why-step", "why-all", "lens-step"):
        assert [a["text"] for a in page[box]["layout"]["annotations"]] == ["Nothing was decoded: no piece to explain."]


def test_stop_during_streaming_keeps_the_pieces_so_far(tiny):
    p = tiny.page
    signal = StopSignal()
    settings = PageSettings(key="de-en", text=SENTENCE, beam=1, max_new=8, device="cpu", top_k=5, length_penalty=1.0)
    stream = tiny.translate_page(Inputs(settings, signal=signal))
    next(stream), next(stream)  # the source pieces, then the first piece
    tiny.stop(Inputs(signal=signal))
    run = list(stream)[-1][p.run]
    assert 1 <= len(run.trace.output_tokens) < 8 and "stopped" in run.showing
    assert_complete(run.trace)
    assert "stopped after" in show(tiny, run)[-1][p.run_info]


def test_teacher_forcing_a_typed_translation_uses_the_shown_source(tiny):
    p = tiny.page
    run = run_of(tiny, max_new=3)
    forced = tiny.force(Inputs(run=run, forced="Two dogs <b>play</b>"))[p.run]
    tok = tiny.registry.get("de-en").cpu.tokenizer
    assert forced.trace.output_tokens == tok.pieces(tok.encode("Two dogs <b>play</b>")) + ["</s>"]
    assert forced.trace.source_tokens == run.trace.source_tokens
    assert_complete(forced.trace)
    with pytest.raises(gr.Error):
        tiny.force(Inputs(run=run, forced="  "))
    with pytest.raises(gr.Error, match="Translate a sentence first"):
        tiny.force(Inputs(forced="Two dogs"))


def test_bad_ui_input_raises_a_visible_error(tiny):
    # (an empty text is no error: tests/test_links.py)
    with pytest.raises(gr.Error, match="Unknown direction"):
        translate(tiny, key="xx-yy")


@pytest.mark.slow  # node draws the views
@needs_node
def test_view_controls(tiny):
    """What the page's viewer draws for each kind, and for the step."""
    run = run_of(tiny, max_new=5)
    data = show(tiny, run)[-1][tiny.page.trace_data]
    kinds = [kind for _, kind in views.kind_choices()]
    pages = viewer.drawn(data, [View.of(kind, 2, "1", False, 2) for kind in kinds])
    for kind, page in zip(kinds, pages):
        fig = page["heatmap"]
        assert fig["layout"]["yaxis"]["title"]["text"].startswith("query")
        assert fig["layout"]["xaxis"]["title"]["text"].startswith("key")
        assert f"{views.name(kind)} · layer 2, head 1" == viewer.title(fig)
        assert sum(t["type"] == "heatmap" for t in page["grid"]["data"]) >= 4
        assert fig["layout"]["meta"]["export"] == attention_views.export_name("de-en", page_view(page))
    words, step = viewer.drawn(data, [View.of("decoder", 1, "mean", True, 1), View.of("cross", 1, "mean", False, 2)])
    assert "words" in viewer.title(words["heatmap"])
    assert step["partial"] == run.trace.output_tokens[:2] and "Step 2" in viewer.title(step["step-topk"])


def page_view(page: dict) -> View:
    v = page["view"]
    return View.of(v["kind"], v["layer"], v["head"], v["merge"], v["step"], v["plain"], v["hide"], v["display"],
                   v["query"])


def test_tabs_are_drawn_when_opened(tiny):
    p = tiny.page
    run = run_of(tiny, max_new=5)
    de_en, en_de, cross = PageSettings(key="de-en"), PageSettings(key="en-de"), View.of("cross", 1, "mean", False)
    # the grid, its picker, the statistics' figure and the predictions are the page viewer's: the server sends
    # their tables
    heads = tiny.tab_view(Inputs(run=run, settings=de_en, view=View.of("encoder", 1, "mean", False)))
    assert heads == gr.skip()
    stats = tiny.tab_view(Inputs(run=run, tab=Tab.STATS, settings=de_en, view=cross))
    assert set(stats) == {p.tab_data} and set(stats[p.tab_data]) == {"stats"}
    # why each piece, once the tab's model event made it
    assert tiny.tab_view(Inputs(run=run, tab=Tab.WHY, settings=de_en, view=cross)) == {p.explain_data: None}
    positional = tiny.tab_view(Inputs(run=run, tab=Tab.POSITIONAL, settings=de_en, view=cross))[p.pe_data]
    c = tiny.registry.get("de-en").config
    assert positional == {"d_model": c.d_model, "max_len": c.max_len, "layout": "interleaved",
                          "dims": [4, 5, 8, 12, 16], "source": run.trace.source_tokens}
    other = tiny.tab_view(Inputs(run=run, tab=Tab.POSITIONAL, settings=en_de, view=cross))
    assert other[p.pe_data]["source"] is None  # the shown trace is of another model
    changed = tiny.direction_changed(Inputs(run=run, tab=Tab.ARCHITECTURE, settings=en_de, view=cross))
    assert "English → German" in changed[p.tab_data]["card"] and "English" in changed[p.text]["placeholder"]
    assert p.tab_data not in tiny.direction_changed(Inputs(run=run, settings=en_de, view=cross))



def test_the_source_hint_reads_as_english(tiny):
    """"Type an English sentence", not "Type a English sentence": the article follows the language's sound."""
    p = tiny.page
    hints = {key: tiny.direction_changed(Inputs(settings=PageSettings(key=key)))[p.text]["placeholder"]
             for key in ("de-en", "en-de")}
    assert hints["en-de"].startswith("Type an English sentence, e.g.") and \
        hints["de-en"].startswith("Type a German sentence, e.g."), hints
    assert [views.a_language(code) for code in ("it", "ur", "uk", "fr", "xx")] == [
        "an Italian", "an Urdu", "a Ukrainian", "a French", "a xx"]

def test_examples_reset_the_settings_to_their_models_own_decoding(tiny):
    p = tiny.page
    out = tiny.example_settings("de-en")
    opened = out[p.view_set]  # the default view, which the viewer fits to the model (its last layer)
    assert (opened["kind"], opened["layer"], opened["head"], opened["merge"], opened["display"]) == (
        "cross", View().layer, "mean", False, "heatmap") and "step" not in opened
    assert (out[p.beam], out[p.max_new], out[p.top_k], out[p.lp], out[p.slow]) == (
        DEFAULT_BEAM, 0, 5, DEFAULT_LENGTH_PENALTY, 0.0)  # tiny-de-en's card chose nothing
    out = tiny.example_settings("en-de")
    assert (out[p.beam], out[p.lp]) == (3, 0.6)


def test_an_example_clicked_is_put_in_the_form_with_its_models_own_settings(tiny):
    """A click on an example (app.js: its index in the view, ask "example"): its text, direction and second sentence
    in the form, with example_settings; an index the page does not have changes nothing."""
    p = tiny.page
    en = [i for i, (_, key, _) in enumerate(p.example_items) if key == "en-de"]
    assert en and len(p.example_items) > en[0]
    out = tiny.example(Inputs.of(p, {p.view: json.dumps({"ask": "example", "example": en[0]})}))
    text, key, compare = p.example_items[en[0]]
    assert (out[p.text], out[p.direction], out[p.compare]) == (text, "en-de", compare)
    assert (out[p.beam], out[p.lp]) == (3, 0.6) and p.view_set in out
    for wrong in (len(p.example_items), -1, "0", None):
        assert tiny.example(Inputs.of(p, {p.view: json.dumps({"ask": "example", "example": wrong})})) == gr.skip()


def test_the_default_output_limit_bounds_degenerate_input(tiny):
    from transformer.search import output_limit

    run = run_of(tiny, text="Hund " * 100)
    S = len(run.trace.source_tokens)
    model = tiny.registry.get("de-en").cpu.model
    assert len(run.trace.output_tokens) <= output_limit(model, S, None) < 2 * S + 10


# ---- the API --------------------------------------------------------------------------------

def test_api_never_raises(tiny):
    assert tiny.api_translate("", "de-en") == ("", "Nothing to translate: text is empty.", None)
    text, notice, trace = tiny.api_translate(SENTENCE, "fr-xx")
    assert text == "" and "Unknown direction" in notice and "de-en" in notice and trace is None
    assert "beam_size" in tiny.api_translate(SENTENCE, "de-en", 0)[1]
    assert "max_new_tokens" in tiny.api_translate(SENTENCE, "de-en", 1, 10_000)[1]
    text, notice, trace = tiny.api_translate("Hund " * 400, "de-en", 1, 3)
    assert "characters" in notice and trace is not None
    text, notice, trace = tiny.api_translate(SENTENCE, "en-de", 2, 4)
    assert len(trace["candidates"]) == 2 and np.asarray(trace["cross_attn"]).ndim == 4
    assert Trace.from_dict(trace).text == text and Trace.from_dict(trace).settings.beam_size == 2


@pytest.mark.slow
def test_gradio_client_translate_endpoint(tiny):
    from gradio_client import Client

    demo = tiny.demo
    _, url, _ = demo.launch(server_name="127.0.0.1", prevent_thread_lock=True, quiet=True, **ui.launch_options())
    try:
        client = Client(url, verbose=False)
        api = client.view_api(return_format="dict", print_info=False)["named_endpoints"]
        # the UI's own events are private: out of the API
        assert list(api) == ["/translate", "/explain", "/animate", "/export_html"]
        params = [p["parameter_name"] for p in api["/translate"]["parameters"]]
        assert params == ["text", "direction", "beam_size", "max_new_tokens", "heads_off", "prefix"]
        text, notice, trace = client.predict(text=SENTENCE, direction="de-en", max_new_tokens=5, api_name="/translate")
        assert isinstance(text, str) and "length limit" in notice and len(trace["output_tokens"]) == 5
        assert client.predict(text="", direction="en-de", api_name="/translate") == (
            "", "Nothing to translate: text is empty.", None)
        for bad in ("abc", [5], {}, True, 1e300, -1, 0):
            text, notice, trace = client.predict(text=SENTENCE, direction="de-en", beam_size=bad,
                                                 api_name="/translate")
            assert text == "" and "beam_size" in notice and trace is None, bad
        text, notice, trace = client.predict(text=SENTENCE, direction="de-en", beam_size="2", api_name="/translate")
        assert trace is None and "beam_size must be an integer" in notice  # JSON numbers only
        trace = client.predict(text=SENTENCE, direction="de-en", beam_size=2, max_new_tokens=3, heads_off="cross:1.2",
                               api_name="/translate")[2]
        assert trace["settings"]["beam_size"] == 2 and trace["settings"]["heads_off"] == "cross:1.2"
        # the forced prefix, last and optional: a positional caller of the five before it is answered as before
        positional = client.predict(SENTENCE, "de-en", 2, 3, "cross:1.2", api_name="/translate")[2]
        assert positional["output_ids"] == trace["output_ids"] and positional["settings"]["mode"] == "beam"
        branch = client.predict(SENTENCE, "de-en", 2, 3, "cross:1.2", ["nde", "hne"], api_name="/translate")[2]
        assert branch["output_tokens"][:2] == ["nde", "hne"] and branch["settings"]["prefix"] == ["nde", "hne"]
        assert client.predict(text=SENTENCE, direction="de-en", prefix=["▁Xylophon"], api_name="/translate")[1] == \
            "prefix: the piece '▁Xylophon' is not in this model's vocabulary."
    finally:
        demo.close()


@pytest.mark.slow
def test_concurrent_clients_get_exactly_their_own_results(tiny):
    """8 visitors at once on loopback: each gets what it would get alone, with no cross-talk."""
    from concurrent.futures import ThreadPoolExecutor

    from gradio_client import Client

    jobs = [(f"Hund {'Schnee ' * i}spielen.", "de-en" if i % 2 else "en-de", 1 + i % 3) for i in range(8)]
    alone = [tiny.api_translate(text, direction, beam, 6) for text, direction, beam in jobs]
    demo = tiny.demo
    _, url, _ = demo.launch(server_name="127.0.0.1", prevent_thread_lock=True, quiet=True, **ui.launch_options())
    try:
        def ask(job):
            text, direction, beam = job
            return Client(url, verbose=False).predict(text=text, direction=direction, beam_size=beam,
                                                      max_new_tokens=6, api_name="/translate")

        with ThreadPoolExecutor(8) as pool:
            together = list(pool.map(ask, jobs))
    finally:
        demo.close()
    for (text, notice, trace), (text_alone, notice_alone, trace_alone) in zip(together, alone):
        assert (text, notice) == (text_alone, notice_alone)
        assert trace["source_tokens"] == trace_alone["source_tokens"]
        np.testing.assert_allclose(trace["cross_attn"], trace_alone["cross_attn"], atol=1e-6)


SHIPPED = {"de-en": ("Zwei Hunde spielen im Schnee.", ("dogs", "snow")),
           "en-de": ("Two dogs are playing in the snow.", ("Hunde", "Schnee"))}


@pytest.mark.slow
def test_shipped_checkpoints_translate_correctly_through_the_client(shipped):
    """The real models, through gradio_client, as docs/api.md documents it."""
    from gradio_client import Client

    registry = shipped.anatomy.registry
    missing = [d for d in SHIPPED if d not in registry.entries or registry.entries[d].untrained]
    if missing:
        pytest.skip(f"no trained checkpoint for {missing} under checkpoints/")
    _, url, _ = shipped.launch(server_name="127.0.0.1", prevent_thread_lock=True, quiet=True, **ui.launch_options())
    try:
        client = Client(url, verbose=False)
        for direction, (source, words) in SHIPPED.items():
            text, notice, trace = client.predict(text=source, direction=direction, api_name="/translate")
            assert notice == ""
            assert all(w.lower() in text.lower() for w in words), (direction, text)
            assert trace["text"] == text and Trace.from_dict(trace).output_tokens[-1] == "</s>"
            beam_text, _, beam_trace = client.predict(text=source, direction=direction, beam_size=4,
                                                      api_name="/translate")
            assert all(w.lower() in beam_text.lower() for w in words) and len(beam_trace["candidates"]) >= 2
    finally:
        shipped.close()


def test_a_background_load_that_fails_ends_in_a_notice_and_no_wait_hangs(folders, tmp_path, monkeypatch):
    """Hub models that fail in a way _load does not expect (an error raised after the checkpoint loaded), that the
    checkpoint loader refuses (a language that is not a code) or that _load reads around (metrics.jsonl that is not
    UTF-8): each leaves `pending` with a notice on the page, and the model after them still loads."""
    import shutil
    import threading

    import huggingface_hub

    from anatomy import registry

    odd = shutil.copytree(folders / "tiny-en-de", tmp_path / "odd")
    meta = json.loads((odd / "config.json").read_text())
    (odd / "config.json").write_text(json.dumps({**meta, "source_lang": 7}))
    boom = shutil.copytree(folders / "tiny-en-de", tmp_path / "boom")
    garbled = shutil.copytree(folders / "tiny-en-de", tmp_path / "garbled")
    (garbled / "metrics.jsonl").write_bytes(b'{"epoch": 1, "val_bleu": 3.5}\n\xff\xfe not utf-8\n')
    release = threading.Event()
    folder_of = {"someone/odd": odd, "someone/boom": boom, "someone/garbled": garbled}

    def download(repo_id, **kwargs):
        release.wait(30)
        return str(folder_of.get(repo_id, folders / "tiny-en-de"))

    read_card = registry._read_card

    def card_that_breaks(folder):
        if folder == boom:
            raise RuntimeError("the card's disk went away")
        return read_card(folder)

    monkeypatch.setattr(huggingface_hub, "snapshot_download", download)
    monkeypatch.setattr(registry, "_read_card", card_that_breaks)
    h = ui.create_app([str(folders / "tiny-de-en"), "hf://someone/odd", "hf://someone/boom", "hf://someone/garbled",
                       "hf://someone/tiny"]).anatomy
    reg = h.registry
    assert len(reg.pending) == 4
    release.set()
    start = time.monotonic()
    assert reg.wait(20), f"still loading: {reg.pending}"
    assert time.monotonic() - start < 20 and reg.pending == []
    status = reg.status()
    assert "Loading" not in status and "Skipped `hf://someone/boom`: RuntimeError: the card's disk" in status
    assert "Skipped `hf://someone/odd`" in status and "must be language codes" in status
    assert [s.name for s in reg.skipped] == ["odd", "boom"]
    assert [e.source for e in reg.entries.values()] == [str(folders / "tiny-de-en"), "hf://someone/garbled",
                                                        "hf://someone/tiny"]
    assert reg.entries["en-de"].metrics == [{"epoch": 1, "val_bleu": 3.5}]  # the unreadable line left out
    page = h.load_link(None)[h.page.model_notices]
    assert page["visible"] and "Skipped <code>hf://someone/odd</code>" in page["value"]  # as HTML


def test_the_page_is_the_app_s_own_html_with_every_component_and_event_of_the_blocks(tiny):
    """The page served at the root (ui/document.py): every visible component of the Blocks drawn by its elem_id and
    block id, a form control labelled as Gradio's page labels it, the viewer's CSS and the app's, the page's script,
    and the events' table with every event the page triggers (the API's endpoints left out); Gradio's own page,
    theme and scripts are never asked for."""
    from ui import document

    text = ui.page_html(tiny.demo)
    config = tiny.demo.config
    for component in config["components"]:
        props = component["props"]
        if component["type"] != "state" and props.get("elem_id"):
            assert f'data-block="{component["id"]}" id="{props["elem_id"]}"' in text, props["elem_id"]
    assert 'aria-label="number input for Beam size (1 = greedy)"' in text and ">Source text</label>" in text
    assert "anatomy-presenter" in text and "#view-controls" in text and "exportFigure" in text
    table = document.events(config)
    assert {d["id"] for d in table["dependencies"]} == {d["id"] for d in config["dependencies"] if d["targets"]}
    assert not {"translate", "explain", "animate", "export_html"} & {d.get("api_name") for d in table["dependencies"]}
    assert json.loads(text.split('<script type="application/json" id="anatomy-events">')[1].split("</script>")[0]) \
        == json.loads(json.dumps(table))
    options = ui.launch_options()
    assert not {"js", "css_paths", "head", "theme"} & set(options)


def test_hub_models_load_in_the_background_and_join_the_page_when_ready(folders, monkeypatch):
    import threading

    import huggingface_hub

    release = threading.Event()

    def download(repo_id, **kwargs):
        release.wait(30)
        if repo_id == "someone/absent":
            raise OSError("no such repository")
        return str(folders / "tiny-en-de")

    monkeypatch.setattr(huggingface_hub, "snapshot_download", download)
    h = ui.create_app([str(folders / "tiny-de-en"), "hf://someone/tiny", "hf://someone/absent"]).anatomy
    reg = h.registry
    assert list(reg.entries) == ["de-en"] and reg.pending == ["hf://someone/tiny", "hf://someone/absent"]
    assert "Loading `hf://someone/tiny`" in reg.status()
    before = h.load_link(None)
    assert [key for _, key in before[h.page.direction]["choices"]] == ["de-en"]
    release.set()
    assert reg.wait(30)
    assert list(reg.entries) == ["de-en", "en-de"] and reg.entries["en-de"].source == "hf://someone/tiny"
    assert "Loading" not in reg.status() and "could not fetch someone/absent" in reg.status()
    after = h.load_link(None)
    assert [key for _, key in after[h.page.direction]["choices"]] == ["de-en", "en-de"]
    assert after[h.page.model_notices]["visible"]
    assert reg.translator("en-de", "cpu")[0].translate("a dog", max_new_tokens=3).output_tokens
