"""Score a checkpoint on Multi30k: `python -m transformer.evaluate --checkpoint DIR --split val`.

Prints sacreBLEU's BLEU and chrF lines with their signatures (detokenized, cased, 13a) and
ends with one line `bleu=XX.X chrf=YY.Y`.
"""
from __future__ import annotations

import argparse

from sacrebleu.metrics import BLEU, CHRF
from sacrebleu.metrics.bleu import BLEUScore
from sacrebleu.metrics.chrf import CHRFScore

from . import data
from .translate import add_decoding_args, load_translator
from .translator import Translator


def score(translator: Translator, sources: list[str], references: list[str], beam: int = 1,
          length_penalty: float = 1.0, batch_size: int = 64) -> tuple[BLEUScore, CHRFScore, BLEU, CHRF]:
    """Corpus BLEU and chrF of the translations of `sources` against one reference each."""
    hyps = translator.translate_batch(sources, beam_size=beam, length_penalty=length_penalty,
                                      batch_size=batch_size)
    bleu, chrf = BLEU(), CHRF()
    return bleu.corpus_score(hyps, [references]), chrf.corpus_score(hyps, [references]), bleu, chrf


def main(argv: list[str] | None = None) -> tuple[float, float]:
    p = argparse.ArgumentParser(prog="python -m transformer.evaluate", description=__doc__.split("\n")[0])
    add_decoding_args(p)
    p.add_argument("--data-dir")
    p.add_argument("--split", default="val")
    p.add_argument("--limit", type=int, help="only the first N sentences")
    args = p.parse_args(argv)
    translator = load_translator(args)
    meta = translator.checkpoint
    sources, references = data.read_pairs(data.resolve_data_dir(args.data_dir), args.split,
                                          meta.source_lang, meta.target_lang)
    if args.limit:
        sources, references = sources[:args.limit], references[:args.limit]
    bleu_score, chrf_score, bleu, chrf = score(translator, sources, references, args.beam, args.length_penalty,
                                               args.batch_size)
    print(f"{meta.source_lang}->{meta.target_lang} {args.split}: {len(sources)} sentences, beam {args.beam}, "
          f"length penalty {args.length_penalty}")
    print(f"{bleu_score} | {bleu.get_signature()}")
    print(f"{chrf_score} | {chrf.get_signature()}")
    print(f"bleu={bleu_score.score:.1f} chrf={chrf_score.score:.1f}")
    return bleu_score.score, chrf_score.score


if __name__ == "__main__":
    main()
