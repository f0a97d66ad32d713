"""One typed decoding request (transformer.Decoding): the page's controls, a link, the API and a script each make one,
and it reaches the Translator and the trace unchanged."""
from __future__ import annotations

import urllib.parse

import pytest

from anatomy.inputs import Request, View, build_link, parse_link
from anatomy.run import StopSignal
from tests.app_fixtures import SENTENCE, configs
from transformer import Decoding
from ui.values import Inputs, PageSettings

ASKED = Decoding(beam_size=3, length_penalty=0.6, max_new_tokens=4, heads_off="encoder:2.2,cross:1.1")  # link form


def made_with(settings) -> Decoding:
    """What a trace's settings say it was decoded with (top-k and slow motion are not decoding)."""
    return Decoding(beam_size=settings.beam_size, length_penalty=settings.length_penalty,
                    max_new_tokens=settings.max_new_tokens, heads_off=settings.heads_off)


def test_the_translator_takes_a_request_and_keyword_changes_to_it_alike(tiny):
    translator = tiny.registry.translator("de-en", "cpu")[0]
    asked = Decoding(beam_size=3, length_penalty=0.6, max_new_tokens=4, top_k=2, heads_off="cross:1.1")
    by_request = translator.translate(SENTENCE, asked)
    by_words = translator.translate(SENTENCE, beam_size=3, length_penalty=0.6, max_new_tokens=4, top_k=2,
                                    heads_off="cross:1.1")
    changed = translator.translate(SENTENCE, Decoding(beam_size=5, top_k=2), beam_size=3, length_penalty=0.6,
                                   max_new_tokens=4, heads_off="cross:1.1")
    assert by_request.output_ids == by_words.output_ids == changed.output_ids
    assert by_request.settings == by_words.settings == changed.settings
    assert made_with(by_request.settings) == Decoding(3, 0.6, 4, heads_off="cross:1.1")
    assert {len(row) for row in by_request.top_k} == {2}
    assert translator.translate(SENTENCE).settings.mode == "greedy"
    with pytest.raises(TypeError):
        translator.translate(SENTENCE, beam=3)  # not a field: never read as nothing


def test_a_link_carries_the_request_and_takes_the_model_s_own_for_what_it_leaves_out(tiny):
    query = build_link(Request("de-en", SENTENCE, ASKED), View())
    link = parse_link(dict(urllib.parse.parse_qsl(query[1:])), configs(tiny))
    assert link.decoding == ASKED
    own = {"de-en": Decoding(beam_size=4, length_penalty=0.8)}
    assert parse_link({"text": SENTENCE}, configs(tiny), own=own).decoding == own["de-en"]
    assert parse_link({"text": SENTENCE, "beam": "2", "max": "9"}, configs(tiny), own=own).decoding == \
        Decoding(beam_size=2, length_penalty=0.8, max_new_tokens=9)


def test_the_page_a_link_and_the_api_reach_the_translator_with_the_same_request(tiny):
    settings = PageSettings("de-en", SENTENCE, 3, 4, "cpu", 5, 0.6, 0.0, ("cross:1.1", "encoder:2.2"))
    run = list(tiny.translate_page(Inputs(settings, signal=StopSignal())))[-1][tiny.page.run]
    assert run.request.decoding == ASKED and made_with(run.trace.settings) == ASKED
    query = build_link(run.request, View())
    link = parse_link(dict(urllib.parse.parse_qsl(query[1:])), configs(tiny))
    linked = tiny.translate_link(Inputs(link=link, signal=StopSignal()))[tiny.page.run]
    assert linked.request.decoding == ASKED and linked.trace.output_ids == run.trace.output_ids
    # the API's length penalty is the model's own (tiny-de-en: the defaults, 1.4)
    own = tiny.registry.get("de-en").decoding
    text, notice, trace = tiny.api_translate(SENTENCE, "de-en", 3, 4, ASKED.heads_off)
    settings = trace["settings"]
    assert text and "heads" not in notice  # every head named was the model's: none ignored
    assert (settings["beam_size"], settings["max_new_tokens"], settings["heads_off"]) == (3, 4, ASKED.heads_off)
    assert settings["length_penalty"] == own.length_penalty


# ---- a branch's forced pieces (issue 51 §1) ------------------------------------------------------------------

NASTY = ("▁a,b", "x y", "▁", '"quoted"', "it's", "ü€😀", "%2C", "&text=evil#", "[", "]", "\\", "+", ",", "")


def test_a_link_carries_any_forced_pieces_whole(tiny):
    request = Request("de-en", SENTENCE, Decoding(prefix=tuple(range(4, 4 + len(NASTY)))))
    query = build_link(request, View(), NASTY)
    params = urllib.parse.parse_qsl(query[1:], keep_blank_values=True)
    assert sum(name == "prefix" for name, _ in params) == 1 and dict(params)["text"] == SENTENCE
    assert parse_link(dict(params), configs(tiny)).prefix == NASTY
    assert "prefix" not in build_link(Request("de-en", SENTENCE), View())
    with pytest.raises(ValueError, match="forces 14 pieces; the link was given 0"):
        build_link(request, View())


@pytest.mark.parametrize("raw", ['["▁a", 3]', "▁a,▁b", '{"a": 1}', "[" + ",".join(['"a"'] * 64) + "]"])
def test_a_link_s_malformed_prefix_is_named_and_dropped(tiny, raw):
    link = parse_link({"text": SENTENCE, "prefix": raw}, configs(tiny))
    assert link.prefix == () and any("prefix=" in n and "a JSON list of at most 63 pieces" in n for n in link.notices)


def test_a_link_opens_its_branch_and_names_a_piece_the_vocabulary_lacks(tiny):
    link = parse_link({"text": SENTENCE, "prefix": '["nde","hne"]'}, configs(tiny))
    run = tiny.translate_link(Inputs(link=link, signal=StopSignal()))[tiny.page.run]
    assert run.trace.output_tokens[:2] == ["nde", "hne"] and run.trace.settings.mode == "branch"
    assert run.request.decoding.prefix == tuple(run.trace.output_ids[:2])
    # the model's own translation beside it, made in the same event, for Back to the model's own
    assert run.own.trace.settings.mode == "greedy" and not run.own.request.decoding.prefix
    assert not any("forced" in n for n in run.notices)  # (a random model's output stops at the length limit)
    again = parse_link(dict(urllib.parse.parse_qsl(tiny.share(Inputs(run=run, view=View()))[1:])), configs(tiny))
    assert again.prefix == ("nde", "hne")
    link = parse_link({"text": SENTENCE, "prefix": '["nde","▁Xylophon"]'}, configs(tiny))
    run = tiny.translate_link(Inputs(link=link, signal=StopSignal()))[tiny.page.run]
    assert run.trace.settings.mode == "greedy" and not run.request.decoding.prefix and run.own is None
    assert any("'▁Xylophon' is not in this model's vocabulary" in n for n in run.notices)
    assert "prefix= was not used" in " ".join(parse_link({"prefix": '["nde"]'}, configs(tiny)).notices)


def test_the_api_takes_a_forced_prefix_last_and_positional_callers_are_unchanged(tiny):
    before = tiny.api_translate(SENTENCE, "de-en", 2, 6, "cross:1.1")
    assert before[2]["settings"]["mode"] == "beam" and "prefix" not in before[2]["settings"]
    text, notice, trace = tiny.api_translate(SENTENCE, "de-en", 2, 6, "cross:1.1", ["nde", "hne"])
    assert trace["output_tokens"][:2] == ["nde", "hne"] and "prefix" not in notice
    assert (trace["settings"]["mode"], trace["settings"]["prefix"], trace["settings"]["heads_off"]) == (
        "branch", ("nde", "hne"), "cross:1.1")
    ids = trace["output_ids"][:2]
    assert tiny.api_translate(SENTENCE, "de-en", 2, 6, "cross:1.1", ids)[2]["output_ids"] == trace["output_ids"]
    for bad, said in ((["nde", "▁Xylophon"], "prefix: the piece '▁Xylophon' is not in this model's vocabulary."),
                      ("nde", "prefix must be a list of pieces (strings) or ids (integers), or null, got 'nde'."),
                      ([2.5], "prefix: a forced piece is a piece (a string) or an id from 0 to")):
        text, notice, trace = tiny.api_translate(SENTENCE, "de-en", 1, None, None, bad)
        assert (text, trace) == ("", None) and notice.startswith(said), notice
