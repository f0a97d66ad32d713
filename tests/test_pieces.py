"""One detokenisation (transformer.pieces) for the final text, the stream, the ablation comparison, the word labels
and the offline page; what the page says when it cuts a visitor's text, or cannot read it."""
from __future__ import annotations

import dataclasses
import random

import numpy as np
import pytest
from safetensors.torch import load_file, save_file

from anatomy import ablation_views, offline, views
from anatomy.inputs import MAX_CHARS
from anatomy.registry import ModelRegistry
from anatomy.run import Ablation
from tests.app_fixtures import SENTENCE, make_checkpoint, make_tokenizer, run_of, show, translate
from transformer import Step, Translator
from transformer.config import UNK_ID
from transformer.marian import MarianTokenizer
from transformer.pieces import SPECIAL, detokenize, word_label
from ui.handlers import Handlers
from ui.values import Inputs

CUT = "The typed translation was"
UNREADABLE = "The model could not read this text"


# ---- the detokenisation ---------------------------------------------------------------------------

def test_detokenize_writes_what_sentencepiece_decodes_unknown_pieces_and_bare_marks_too():
    tok = make_tokenizer()
    rng = random.Random(0)
    bare = tok.sp.piece_to_id("\u2581")
    for _ in range(500):
        ids = [rng.choice([UNK_ID, bare, rng.randrange(tok.vocab_size)]) for _ in range(rng.randint(0, 10))]
        assert detokenize(tok.pieces(ids)) == tok.sp.decode([i for i in ids if i not in (0, 2, 3)]), tok.pieces(ids)
    assert tok.decode([UNK_ID, 3]) == " \u2047 "


def test_opus_mt_text_has_no_word_marks_even_of_pieces_only_its_source_model_has(opus_mt):
    """vocab.json numbers the pieces of source.spm and target.spm alike; target.spm's decode_pieces leaves the ▁ of a
    piece it lacks (the decoder may still choose one)."""
    tok = MarianTokenizer.load(opus_mt)
    source_only = [i for p, i in tok.vocab.items() if p.startswith("\u2581") and tok.target.piece_to_id(p) == 0]
    assert source_only
    ids = tok.encode_target("a street") + source_only[:3] + [tok.unk_id]
    assert tok.decode(ids) == detokenize(tok.pieces(ids)) and "\u2581" not in tok.decode(ids)
    # specials named otherwise in tokenizer_config.json still write nothing (and hide as special tokens)
    vocab = {("<end>" if p == "</s>" else p): i for p, i in tok.vocab.items()}
    renamed = MarianTokenizer(*tok.protos, vocab, eos="<end>")
    assert renamed.pieces([renamed.eos_id]) == ["</s>"] and detokenize(renamed.pieces(ids + [renamed.eos_id])) == \
        tok.decode(ids)


def test_a_word_label_is_its_pieces_text_a_special_piece_its_name():
    src = ["\u2581Zwei", "\u2581Hund", "e", "\u2581<b>", "\u2581spielen", ".", "</s>"]
    groups = [[0], [1, 2], [3], [4, 5], [6]]
    assert [word_label([src[i] for i in g]) for g in groups] == ["Zwei", "Hunde", "<b>", "spielen.", "</s>"]
    assert word_label([".", "</s>"]) == ". </s>" and word_label(["\u2581"]) == "\u2581"


# ---- the stream and the final text agree, piece for piece ---------------------------------------

@pytest.fixture(scope="module")
def unknowing(tmp_path_factory, tiny):
    """Handlers on a tiny checkpoint whose decoder writes <unk> after an ordinary first piece (its <unk> embedding
    flipped and tripled; the embedding is tied to the output projection)."""
    folder = make_checkpoint(tmp_path_factory.mktemp("unknowing") / "tiny-de-en")
    state = load_file(folder / "model.safetensors")
    state["embedding.weight"][UNK_ID] *= -3
    save_file(state, folder / "model.safetensors")
    return Handlers(ModelRegistry.discover([str(folder)]), tiny.page)


def test_the_stream_writes_the_final_text_piece_by_piece_unknown_pieces_too(unknowing, monkeypatch):
    from ui.handlers import model as handlers

    monkeypatch.setattr(handlers, "TEXT_INTERVAL", 0.0)
    p = unknowing.page
    outs = translate(unknowing, max_new=6)
    streamed, run = outs[1:-1], outs[-1][p.run]
    pieces = run.trace.output_tokens
    assert "<unk>" in pieces and set(pieces) != {"<unk>"}  # the case the stream used to write differently
    assert [len(o[p.out_chips]) for o in streamed] == list(range(1, len(pieces) + 1))
    for n, out in enumerate(streamed, start=1):
        assert out[p.translation] == detokenize(pieces[:n])
    assert streamed[-1][p.translation] == run.trace.text == show(unknowing, run)[-1][p.translation]
    assert "\u2047" in run.trace.text and "<unk>" not in run.trace.text


def test_a_stream_decodes_no_text_per_step(unknowing, monkeypatch):
    """Step carries no text: the page appends each piece's text, so a step costs no decode of the output so far."""
    translator = unknowing.registry.get("de-en").cpu
    calls = []
    decode = type(translator.tokenizer).decode
    monkeypatch.setattr(type(translator.tokenizer), "decode", lambda self, ids: calls.append(1) or decode(self, ids))
    *steps, trace = translator.stream(SENTENCE, max_new_tokens=20)
    assert len(steps) == 20 and calls == []
    assert "text" not in {f.name for f in dataclasses.fields(Step)}


def test_the_ablation_comparison_and_a_slow_motion_frame_write_the_final_text(unknowing):
    run = run_of(unknowing, max_new=6)
    trace = run.trace
    html = ablation_views.comparison_html(dataclasses.replace(
        run, request=run.request.decoded(heads_off="cross:1.1"),
        ablation=Ablation(trace, np.zeros(len(trace.output_ids)), np.zeros(len(trace.output_ids)))))
    assert f"<b>All heads on:</b> {trace.text.strip()}<br>" in html
    assert views.prefix(trace, 3).text == detokenize(trace.output_tokens[:3])


def test_the_viewer_s_payload_writes_pieces_as_the_app_s_detokenisation(unknowing):
    trace = run_of(unknowing, max_new=6).trace
    data = offline.payload(trace, unknowing.registry.get("de-en"), SENTENCE, [])["payload"]
    assert data["translation"] == trace.text
    texts = {q: t for side in ("source", "target", "output")
             for q, t in zip(data["pieces"][side], data["piece_texts"][side])}
    assert texts["</s>"] == ""
    spaced = [q for q in texts if q.startswith("\u2581") and len(q) > 1]
    inner = [q for q in texts if q not in SPECIAL and not q.startswith("\u2581")]
    assert spaced and inner  # a word's first piece and a piece inside a word, whichever the tokenizer made
    assert all(texts[q] in (" " + q[1:], q[1:]) for q in spaced)  # a text's first word has no space before it
    assert all(texts[q] == q for q in inner)


# ---- a typed translation cut to the model's length ------------------------------------------------

def test_a_typed_translation_cut_to_max_len_says_so_as_the_source_does(tiny):
    p = tiny.page
    run = run_of(tiny, max_new=3)
    translator: Translator = tiny.registry.get("de-en").cpu
    typed = " ".join(["Two dogs play in the snow."] * 15)
    n = len(translator.tokenizer.encode_target(typed)) + 1
    max_len = translator.config.max_len
    assert n > max_len
    forced = tiny.force(Inputs(run=run, forced=typed))[p.run]
    assert len(forced.trace.output_ids) == max_len and forced.trace.output_ids[-1] == translator.config.eos_id
    said = f"The typed translation was {n} tokens long; only the first {max_len} were read (the model's max_len)."
    assert said in forced.trace.notices and said in forced.notices  # the trace (download, API) and the run
    assert said in show(tiny, forced)[-1][p.run_info]
    short = tiny.force(Inputs(run=run, forced="Two dogs."))[p.run]
    assert not [n for n in short.notices if CUT in n]
    # the source side, the same way
    assert translator.encode_source("Hunde " * 200)[1][0].startswith("The input was ")


# ---- the visitor's text: cut, or unreadable --------------------------------------------------------

def test_a_long_paste_reaches_the_server_which_cuts_it_and_says_so(tiny):
    """The text box does not cut it (a browser's maxlength cuts a paste unseen): clean_text does, with a notice."""
    p = tiny.page
    assert p.text.max_length is None
    run = run_of(tiny, text="Zwei Hunde spielen. " * 30, max_new=2)
    said = f"The text was longer than {MAX_CHARS} characters: only the first {MAX_CHARS} were used."
    assert len(run.request.text) == MAX_CHARS and said in run.notices
    assert said in show(tiny, run)[-1][p.run_info]


def test_a_text_the_model_cannot_read_is_said_so_plainly_beside_the_output(tiny):
    p = tiny.page
    text, notice, trace = tiny.api_translate("😀🐶🎉👍", "de-en", 1, 4)
    assert notice.startswith(UNREADABLE) and "1 of the 1 piece(s)" in notice
    run = run_of(tiny, text="😀🐶🎉👍", max_new=2)
    assert show(tiny, run)[-1][p.run_info].startswith(f"⚠️ {UNREADABLE}")
    # a few unknown characters in a readable text: the count only
    _, notice, _ = tiny.api_translate("Zwei Hunde spielen 😀", "de-en", 1, 4)
    assert UNREADABLE not in notice and "1 piece(s) of the text are unknown" in notice
