"""The app's wiring: model discovery, the handlers behind each control, and the /translate API.

Most tests run on tiny random-weight checkpoints built here (fast, independent of training);
the gradio_client test of translation quality uses the shipped checkpoints.
"""
from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest

os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")

import gradio as gr  # noqa: E402
from gradio.components.plot import PlotData  # noqa: E402

import app  # noqa: E402
from tests.app_fixtures import SENTENCE, as_dict, final, make_tokenizer, translate  # noqa: E402
from transformer import Trace, Translator  # noqa: E402


def assert_complete(trace, L=2, H=2):
    S, T = len(trace.source_tokens), len(trace.output_tokens)
    assert trace.encoder_self_attn.shape == (L, H, S, S)
    assert trace.decoder_self_attn.shape == (L, H, T, T)
    assert trace.cross_attn.shape == (L, H, T, S)
    np.testing.assert_allclose(trace.cross_attn.sum(-1), 1.0, rtol=1e-4)


# ---- discovery --------------------------------------------------------------------------------

def test_discovery_names_directions_and_skips_broken_folders(tiny, folders):
    reg = tiny.registry
    assert list(reg.entries) == ["de-en", "en-de"]
    assert reg.choices() == [("German → English", "de-en"), ("English → German", "en-de")]
    assert len(reg.notices) == 1 and "broken" in reg.notices[0] and "model.safetensors" in reg.notices[0]
    assert not any(e.untrained for e in reg.entries.values())
    assert reg.get("de-en").metrics[-1]["val_bleu"] == 4.25


def test_duplicate_directions_and_bad_hub_ids(folders):
    reg = app.ModelRegistry.discover([str(folders / "tiny-de-en"), str(folders / "tiny-de-en"), "hf://not-a-repo"])
    assert list(reg.entries) == ["de-en", "de-en-2"]
    assert reg.entries["de-en-2"].label == "German → English (tiny-de-en)"
    assert any("hf://not-a-repo" in n for n in reg.notices)


def test_checkpoint_dir_and_hub_env(folders, monkeypatch):
    monkeypatch.setenv("ANATOMY_CHECKPOINT_DIR", str(folders))
    monkeypatch.setenv("ANATOMY_HUB_MODELS", " hf://a/b , hf://c/d ")
    assert app.default_sources() == [str(folders / n) for n in ("broken", "tiny-de-en", "tiny-en-de")] + [
        "hf://a/b", "hf://c/d"]


def test_untrained_fallback_is_labelled_and_usable(folders):
    reg = app.ModelRegistry.discover([str(folders / "broken")])
    assert list(reg.entries) == ["de-en", "en-de"]
    assert all(e.untrained and "untrained" in e.label for e in reg.entries.values())
    assert any("untrained" in n for n in reg.notices) and any("broken" in n for n in reg.notices)
    entry = reg.get("de-en")
    assert entry.config.d_model == 256 and entry.config.vocab_size == make_tokenizer().vocab_size  # tokenizer reused
    trace = entry.cpu.translate("Zwei Hunde.", max_new_tokens=3)
    assert len(trace.output_tokens) <= 3
    assert "untrained" in app.architecture_markdown(entry).lower() and "untrained" in app.training_markdown(entry)
    bare = app.ModelRegistry.discover([])  # no folder at all: a tokenizer trained on the example sentences
    assert all(e.untrained for e in bare.entries.values()) and "example sentences" in bare.notices[0]


def test_device_choice_falls_back_to_cpu_with_a_notice(tiny):
    translator, notice = tiny.registry.translator("de-en", "cuda")
    if app.cuda_available():
        assert translator.device.type == "cuda" and notice == ""
    else:
        assert translator.device.type == "cpu" and "CUDA is not available" in notice
        assert "cuda" not in app.device_choices()
    assert tiny.registry.translator("de-en", "cpu")[1] == ""


# ---- translating in the UI --------------------------------------------------------------------

def test_translate_streams_and_matches_plain_greedy(tiny):
    outs = list(translate(tiny))
    assert len(outs) >= 2  # at least the source pieces first, the complete views last
    first, last = as_dict(outs[0]), as_dict(outs[-1])
    assert first["src_chips"] and first["translation"] == ""
    trace = last["trace"]
    expected = tiny.registry.get("de-en").cpu.translate(SENTENCE)
    assert trace.output_tokens == expected.output_tokens and last["translation"] == expected.text
    assert_complete(trace)
    np.testing.assert_allclose(trace.cross_attn[:, :, :len(expected.output_tokens)],
                               np.asarray(expected.cross_attn), atol=1e-4)
    for name in ("heat", "step_cross", "step_self", "step_topk"):
        assert isinstance(last[name], PlotData) and len(last[name].plot) < 500_000
        assert json.loads(last[name].plot)["config"]["toImageButtonOptions"]["scale"] >= 2
    assert last["step"]["value"] == len(trace.output_tokens)
    assert [c for c, _ in last["src_chips"]] == trace.source_tokens
    assert "link to this view" in last["notice"]
    assert Path(last["download"]).is_file()


def test_intermediate_yields_grow_the_output(tiny, monkeypatch):
    monkeypatch.setattr(app, "TEXT_INTERVAL", 0.0)
    monkeypatch.setattr(app, "FIRST_FIGURES", 0.0)
    monkeypatch.setattr(app, "FIGURE_INTERVAL", 0.0)
    outs = [as_dict(o) for o in translate(tiny, max_new=6)]
    steps = [o for o in outs[1:-1]]
    assert len(steps) == 6  # one per generated piece
    assert [len(o["out_chips"]) for o in steps] == list(range(1, 7))
    assert all(isinstance(o["step_cross"], PlotData) for o in steps)
    assert "length limit" in outs[-1]["notice"]
    assert len(outs[-1]["trace"].output_tokens) == 6


def test_beam_search_lists_candidates_and_picking_one_shows_it(tiny):
    last = final(translate(tiny, beam=3, max_new=8))
    trace = last["trace"]
    assert len(trace.candidates) >= 2 and last["candidates"]["visible"]
    assert_complete(trace)
    cand = trace.candidates[1]
    evt = gr.SelectData(None, {"index": [1, 1], "value": cand.text})
    picked = as_dict(tiny.on_candidate(trace, "de-en", SENTENCE, "cpu", 5, "cross", 1, "mean", False, 3, 8, evt))
    assert picked["trace"].output_tokens[:-1] == cand.tokens
    assert picked["trace"].candidates == trace.candidates
    assert "candidate #2" in picked["notice"]
    assert_complete(picked["trace"])


def test_slow_motion_computes_in_the_slot_and_replays_outside(tiny):
    outs = [as_dict(o) for o in translate(tiny, slow=0.01, max_new=4)]
    assert len(outs) == 1 and outs[0]["pending"]["trace"] is not None
    replay = [as_dict(o) for o in tiny.on_replay(outs[0]["pending"], "cross", 1, "mean", False)]
    T = len(outs[0]["pending"]["trace"].output_tokens)
    assert len(replay) == T + 1
    assert replay[0]["step"]["value"] == 1 and replay[-1]["pending"] is None
    nothing = list(tiny.on_replay(None, "cross", 1, "mean", False))
    assert len(nothing) == 1 and all(v is not None for v in nothing[0])  # skips, not cleared outputs


def test_teacher_forcing_a_typed_translation(tiny):
    out = as_dict(tiny.on_force("de-en", SENTENCE, "Two dogs <b>play</b>", "cpu", 5, "decoder", 2, "2", True, 1, 0))
    trace = out["trace"]
    tok = tiny.registry.get("de-en").cpu.tokenizer
    assert trace.output_tokens == tok.pieces(tok.encode("Two dogs <b>play</b>")) + ["</s>"]
    assert_complete(trace)
    with pytest.raises(gr.Error):
        tiny.on_force("de-en", SENTENCE, "  ", "cpu", 5, "cross", 1, "mean", False, 1, 0)


def test_bad_ui_input_raises_a_visible_error(tiny):
    with pytest.raises(gr.Error, match="Source text"):
        list(translate(tiny, text="   "))
    with pytest.raises(gr.Error, match="Unknown direction"):
        list(translate(tiny, key="xx-yy"))


def test_view_controls(tiny):
    trace = final(translate(tiny, max_new=5))["trace"]
    for kind in app.KINDS:
        heat, step_cross, step_self, _, _, grid, summary = tiny.on_kind(trace, None, kind, 2, "1", False, 2)
        fig = json.loads(heat.plot)
        assert fig["layout"]["yaxis"]["title"]["text"].startswith("query")
        assert fig["layout"]["xaxis"]["title"]["text"].startswith("key")
        assert "layer 2, head 1" in fig["layout"]["title"]["text"]
        assert sum(t["type"] == "heatmap" for t in json.loads(grid.plot)["data"]) >= 4
    heat, step_cross, step_self, _, _ = tiny.on_heat(trace, None, "decoder", 1, "mean", True, 1)
    assert "words" in json.loads(heat.plot)["layout"]["title"]["text"]
    heat, step_cross, step_self, _, _, partial, step_topk = tiny.on_step(trace, None, "cross", 1, "mean", False, 2)
    assert len(partial) == 2 and partial[-1][1] == app.CURRENT
    assert "Step 2" in json.loads(step_topk.plot)["layout"]["title"]["text"]
    assert tiny.on_pick_head("2:1")[0]["value"] == 2 and tiny.on_pick_head("2:1")[1]["value"] == "1"
    assert all(v is not None for v in tiny.on_heat(None, None, "cross", 1, "mean", False, 1))


def test_tabs_and_direction_views(tiny):
    trace = final(translate(tiny, max_new=5))["trace"]
    grid, summary, table, pe_rows, stats, arch = tiny.on_tabs(trace, "de-en", "encoder", False)
    assert all(isinstance(f, PlotData) for f in (grid, summary, table, pe_rows))
    pe_rows_fig = json.loads(pe_rows.plot)
    assert len(pe_rows_fig["layout"]["yaxis"]["ticktext"]) == len(trace.source_tokens)
    card, pe, sim, params, curves, text_update, dims, training, arch = tiny.on_direction("en-de", ["0", "1", "9"])
    assert "English → German" in card and "d_model" in card
    assert len(json.loads(pe.plot)["data"]) == 1 + 3
    assert "English" in text_update["placeholder"]
    assert len(dims["choices"]) == tiny.registry.get("en-de").config.d_model
    assert len(tiny.on_dims("en-de", ["4"]).plot) > 0


def test_examples_use_default_settings(tiny):
    out = tiny.on_example("Two dogs.", "en-de")
    n = len(app.EXAMPLE_OUT)
    assert len(out) == n + 7 and not set(app.SYNCED) & set(app.EXAMPLE_OUT)
    values = dict(zip(app.EXAMPLE_OUT, out[:n]))
    assert values["translation"] and isinstance(values["grid"], PlotData)
    assert not any(isinstance(v, dict) and v.get("__type__") == "update" for v in out)  # cacheable: plain values
    assert out[n:] == (1, 0, 5, 1.0, 0.0, "cross", False)
    # after the cached outputs: this visitor's trace, and the controls fitted to it
    trace, *controls = tiny.on_example_state("Two dogs.", "en-de")
    assert trace.text == values["translation"] and len(controls) == 5
    candidates, step, layer, head, pick_head = tiny.on_sync(trace)
    assert step["value"] == len(trace.output_tokens) and layer["value"] == 2 and head["value"] == "mean"
    assert not candidates["visible"] and len(pick_head["choices"]) == 4


def test_restore_from_link(tiny):
    class Req:
        query_params = {"direction": "en-de", "text": "Two dogs.", "beam": "3", "view": "decoder", "layer": "2",
                        "head": "1"}

    key, text, beam, max_new, lp, view, layer, head, merge, presenter = tiny.on_load(Req())
    assert (key, text, beam, view, layer, head) == ("en-de", "Two dogs.", 3, "decoder", 2, "1")
    out = as_dict(tiny.on_load_translate("en-de", "Two dogs.", 1, 4, "cpu", 5, 1.0, "decoder", 2, "1", False, Req()))
    assert out["trace"] is not None


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
    assert Trace.from_dict(trace).text == text


def test_gradio_client_translate_endpoint(tiny):
    from gradio_client import Client

    demo = tiny.demo
    _, url, _ = demo.launch(server_name="127.0.0.1", prevent_thread_lock=True, quiet=True, **app.LAUNCH_KWARGS)
    try:
        client = Client(url, verbose=False)
        api = client.view_api(return_format="dict", print_info=False)["named_endpoints"]
        assert list(api) == ["/translate"]  # the UI's own (streaming) events stay undocumented
        params = [p["parameter_name"] for p in api["/translate"]["parameters"]]
        assert params == ["text", "direction", "beam_size", "max_new_tokens"]
        text, notice, trace = client.predict(text=SENTENCE, direction="de-en", max_new_tokens=5, api_name="/translate")
        assert isinstance(text, str) and "length limit" in notice and len(trace["output_tokens"]) == 5
        assert client.predict(text="", direction="en-de", api_name="/translate") == (
            "", "Nothing to translate: text is empty.", None)
    finally:
        demo.close()


def test_concurrent_clients_get_exactly_their_own_results(tiny):
    """8 visitors at once on loopback: each gets what it would get alone, with no cross-talk."""
    from concurrent.futures import ThreadPoolExecutor

    from gradio_client import Client

    jobs = [(f"Hund {'Schnee ' * i}spielen.", "de-en" if i % 2 else "en-de", 1 + i % 3) for i in range(8)]
    alone = [tiny.api_translate(text, direction, beam, 6) for text, direction, beam in jobs]
    demo = tiny.demo
    _, url, _ = demo.launch(server_name="127.0.0.1", prevent_thread_lock=True, quiet=True, **app.LAUNCH_KWARGS)
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


def test_shipped_checkpoints_translate_correctly_through_the_client():
    """The real models, through gradio_client, as the README documents it."""
    from gradio_client import Client

    registry = app.demo.anatomy.registry
    missing = [d for d in SHIPPED if d not in registry.entries or registry.entries[d].untrained]
    if missing:
        pytest.skip(f"no trained checkpoint for {missing} under checkpoints/")
    _, url, _ = app.demo.launch(server_name="127.0.0.1", prevent_thread_lock=True, quiet=True, **app.LAUNCH_KWARGS)
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
        app.demo.close()


def test_module_constants():
    assert app.LAUNCH_KWARGS["theme"] is app.THEME and app.LAUNCH_KWARGS["css"] is app.CSS
    assert not [n for n in vars(app.THEME) if n.endswith("_dark")]  # the page keeps the light palette
    assert isinstance(app.demo, gr.Blocks)
    assert isinstance(app.demo.anatomy.registry.get(None).cpu, Translator)
