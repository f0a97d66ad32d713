"""A small random MarianMTModel configured like the Helsinki-NLP opus-mt models, saved in the Hugging Face layout
(two SentencePiece models over one vocab.json), for the tests that hold our Transformer against `transformers`."""
from __future__ import annotations

import io
import json
import random
from pathlib import Path

import sentencepiece as spm
import torch

DE = "der die das ein eine mann frau kind hund katze spielt läuft sitzt auf im park schnee straße haus rot grün " \
     "klein groß heute gestern schön zwei drei kinder hunde fahrrad buch liest singt bühne wiese".split()
EN = "the a man woman child dog cat plays runs sits on in park snow street house red green small big today " \
     "yesterday beautiful two three children dogs bicycle book reads sings stage field".split()
SENTENCES = ["Zwei Hunde spielen im Schnee.", "Ein Mann fährt mit dem Fahrrad eine Straße entlang.",
             "Die Katze sitzt heute auf dem roten Haus.", "Kinder singen auf einer grünen Wiese.",
             "Eine Frau liest gestern ein schönes Buch.", "Der kleine Hund läuft im Park ☃ Ω."]
TINY = dict(d_model=32, encoder_layers=2, decoder_layers=2, encoder_attention_heads=4, decoder_attention_heads=4,
            encoder_ffn_dim=64, decoder_ffn_dim=64, max_position_embeddings=64)


def lines(words: list[str], n: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    return [" ".join(rng.choice(words) for _ in range(rng.randint(3, 10))).capitalize() + "." for _ in range(n)]


def train_spm(text: list[str], vocab_size: int) -> bytes:
    buffer = io.BytesIO()
    spm.SentencePieceTrainer.train(sentence_iterator=iter(text), model_writer=buffer, vocab_size=vocab_size,
                                   model_type="unigram", character_coverage=1.0, minloglevel=2, num_threads=1,
                                   hard_vocab_limit=False, bos_id=-1, eos_id=1, unk_id=0, pad_id=-1)
    return buffer.getvalue()


def make_marian(folder: Path, seed: int = 0, eos_bias: float = 0.6, **config) -> Path:
    """A random opus-mt-like model in `folder`: swish, scaled embeddings, pad = decoder start = V-1, eos 0,
    a random final logits bias, pad banned from generation (as opus-mt's generation config does)."""
    from transformers import GenerationConfig, MarianConfig, MarianMTModel, MarianTokenizer

    folder.mkdir(parents=True, exist_ok=True)
    source = train_spm(lines(DE, 300, 1) + SENTENCES[:-1], 90)  # the last one keeps characters it never saw
    target = train_spm(lines(EN, 300, 2), 80)
    (folder / "src.spm").write_bytes(source)
    (folder / "tgt.spm").write_bytes(target)
    pieces = []
    for proto in (source, target):
        sp = spm.SentencePieceProcessor(model_proto=proto)
        pieces += [sp.id_to_piece(i) for i in range(sp.get_piece_size())
                   if not sp.is_control(i) and not sp.is_unknown(i)]
    vocab = {"</s>": 0, "<unk>": 1}
    for p in pieces:
        vocab.setdefault(p, len(vocab))
    V = len(vocab)  # the pad id: the last one, as in opus-mt
    vocab["<pad>"] = V
    vocab_size = V + 1
    (folder / "vocab_src.json").write_text(json.dumps(vocab))
    tokenizer = MarianTokenizer(str(folder / "src.spm"), str(folder / "tgt.spm"), str(folder / "vocab_src.json"),
                                source_lang="de", target_lang="en")
    for name in ("src.spm", "tgt.spm", "vocab_src.json"):
        (folder / name).unlink()
    tokenizer.save_pretrained(folder)
    hf = MarianConfig(vocab_size=vocab_size, decoder_vocab_size=vocab_size, activation_function="swish",
                      scale_embedding=True, pad_token_id=V, decoder_start_token_id=V, eos_token_id=0,
                      forced_eos_token_id=None, share_encoder_decoder_embeddings=True, init_std=0.15,
                      dropout=0.0, attention_dropout=0.0, activation_dropout=0.0, **{**TINY, **config})
    torch.manual_seed(seed)
    model = MarianMTModel(hf)
    with torch.no_grad():
        model.final_logits_bias.normal_(0, 0.5)
        model.final_logits_bias[0, 0] += eos_bias  # EOS likely enough that some beams finish before the limit
    model.generation_config = GenerationConfig(decoder_start_token_id=V, eos_token_id=0, pad_token_id=V,
                                               bad_words_ids=[[V]], forced_eos_token_id=None, max_length=64)
    model.save_pretrained(folder)
    return folder


def load_hf(folder: Path):
    """The saved model with eager attention (sdpa returns no attention weights) and its tokenizer."""
    from transformers import MarianMTModel, MarianTokenizer

    return MarianMTModel.from_pretrained(folder, attn_implementation="eager").eval(), \
        MarianTokenizer.from_pretrained(folder)
