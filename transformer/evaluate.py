"""Score a checkpoint on Multi30k: `python -m transformer.evaluate --checkpoint DIR --split val`.

Prints sacreBLEU's BLEU and chrF lines with their signatures (detokenized, cased, 13a) and
ends with one line `bleu=XX.X chrf=YY.Y`.
"""
from __future__ import annotations

import argparse

import sacrebleu

from . import data
from .translate import add_decoding_args, load_translator


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
    hyps = translator.translate_batch(sources, beam_size=args.beam, max_new_tokens=args.max_new_tokens,
                                      length_penalty=args.length_penalty, batch_size=args.batch_size)
    bleu = sacrebleu.metrics.BLEU()
    chrf = sacrebleu.metrics.CHRF()
    bleu_score = bleu.corpus_score(hyps, [references])
    chrf_score = chrf.corpus_score(hyps, [references])
    print(f"{meta.source_lang}->{meta.target_lang} {args.split}: {len(hyps)} sentences, beam {args.beam}, "
          f"length penalty {args.length_penalty}")
    print(f"{bleu_score} | {bleu.get_signature()}")
    print(f"{chrf_score} | {chrf.get_signature()}")
    print(f"bleu={bleu_score.score:.1f} chrf={chrf_score.score:.1f}")
    return bleu_score.score, chrf_score.score


if __name__ == "__main__":
    main()
