"""Hostile or odd input: the /translate API answers every one with a clear notice and never raises;
token text in the figures is escaped, never live markup."""
from __future__ import annotations

import json

import numpy as np
import pytest

import app
import viz

UNKNOWN = "German and English"
HOSTILE = '<a href="javascript:alert(1)">x</a>'


@pytest.mark.parametrize("text, direction, beam, max_new, translated, notice", [
    pytest.param(" \n\t\u3000 ", "de-en", 1, 4, False, "Nothing to translate", id="whitespace"),
    pytest.param("Hund " * 2000, "de-en", 1, 4, True, f"longer than {app.MAX_CHARS} characters", id="10k-chars"),
    pytest.param("Hunde 🐶🎉", "de-en", 1, 4, True, UNKNOWN, id="emoji"),
    pytest.param("\x1b[31mrot\x1b[0m", "de-en", 1, 4, True, "Control characters", id="ansi"),
    pytest.param("a\x00b\x07c\u200b", "de-en", 1, 4, True, "Control characters", id="control-chars"),
    pytest.param("\x1b[2J\x00", "de-en", 1, 4, False, "Nothing to translate", id="only-control"),
    pytest.param("你好世界", "de-en", 1, 4, True, UNKNOWN, id="cjk"),
    pytest.param("مرحبا بالعالم", "en-de", 1, 4, True, UNKNOWN, id="arabic"),
    pytest.param("<img src=x onerror=alert(1)>", "de-en", 1, 4, True, "", id="html"),
    pytest.param("?!...,;", "de-en", 1, 4, True, "", id="punctuation"),
    pytest.param("Zwei\nHunde\r\nspielen", "de-en", 1, 4, True, "", id="several-lines"),
    pytest.param("Hund", "de-en", 10**9, 4, False, "beam_size must be from 1 to", id="huge-beam"),
    pytest.param("Hund", "de-en", "lots", 4, False, "beam_size must be an integer", id="text-beam"),
    pytest.param("Hund", "de-en", 1, 10**9, False, "max_new_tokens must be from 1 to", id="huge-max"),
    pytest.param("Hund", "de-en", 1, -5, False, "max_new_tokens must be from 1 to", id="negative-max"),
    pytest.param("Hund", "xx-yy", 1, 4, False, "Unknown direction 'xx-yy'", id="unknown-direction"),
    pytest.param("Hund", None, 1, 4, False, "Unknown direction", id="no-direction"),
])
def test_api_bad_input_gets_a_notice_and_never_raises(tiny, text, direction, beam, max_new, translated, notice):
    out, said, trace = tiny.api_translate(text, direction, beam, max_new)
    assert isinstance(out, str) and isinstance(said, str)
    assert notice in said
    if translated:
        assert trace is not None and trace["text"] == out
        assert len(trace["source_tokens"]) <= tiny.registry.get(direction).config.max_len
        assert all(ch not in "".join(trace["source_tokens"]) for ch in "\x1b\x00\x07\n\r")
        if max_new:
            assert len(trace["output_tokens"]) <= max_new
    else:
        assert out == "" and trace is None and said  # refused, and says why


def _texts(fig) -> str:
    """Every tick label, hover text and annotation of a figure, as one JSON string."""
    return json.dumps(json.loads(fig.to_json()), ensure_ascii=False)


@pytest.mark.parametrize("token", [HOSTILE, "<b>", "<script>alert(1)</script>"])
def test_figure_labels_escape_markup(token):
    tokens = ["▁Zwei", token, "</s>"]
    w = np.full((3, 3), 1 / 3, dtype=np.float32)
    queries = [("<s>", "▁Two"), (token, token), ("x", "</s>")]
    figs = [
        viz.attention_heatmap(w, queries, tokens),
        viz.attention_heatmap(w, tokens, tokens, causal=True),
        viz.attention_row(w[0], tokens, query=token),
        viz.attention_grid(np.broadcast_to(w, (1, 2, 3, 3)), queries, tokens),
        viz.topk_table(tokens, [[{"token": t, "prob": 0.5}] for t in tokens]),
        viz.topk_bars([{"token": t, "prob": 0.3} for t in tokens], chosen=token),
        viz.positional_rows(np.zeros((8, 4), dtype=np.float32), tokens),
    ]
    escaped = viz.escape(token[:8])  # long labels are shortened (viz.text.MAX_LABEL), never unescaped
    for fig in figs:
        js = _texts(fig)
        assert escaped in js, fig.layout.title
        stripped = js.replace("<b>", "").replace("</b>", "") if token == "<b>" else js
        # the raw tag never survives: only its escaped form does
        assert token not in stripped
        assert "<a " not in js and "<a>" not in js and "<script" not in js and "<img" not in js
        ticks = [t for ax in ("xaxis", "yaxis") for t in (fig.layout[ax].ticktext or ())]
        assert all("<a " not in t and "<script" not in t for t in ticks)
