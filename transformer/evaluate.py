"""Score a checkpoint: `python -m transformer.evaluate --checkpoint DIR --corpus tatoeba --split val`.

Prints sacreBLEU's BLEU and chrF lines with their signatures (detokenized, cased, 13a) for
each corpus and ends with one line `bleu=XX.X chrf=YY.Y` (the mean when several corpora are
given). Without --corpus it reads --data-dir (Multi30k by default).
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
    p.add_argument("--corpus", action="append", metavar="NAME",
                   help="a corpus under --data-root, or a path (repeatable)")
    p.add_argument("--data-root", help="folder of corpora (default: $ANATOMY_DATA_ROOT, ../shared/data)")
    p.add_argument("--data-dir", help="without --corpus: one folder with {split}.{lang}.gz")
    p.add_argument("--split", default="val")
    p.add_argument("--limit", type=int, help="only the first N sentences")
    args = p.parse_args(argv)
    if args.corpus and args.data_dir:
        raise SystemExit("give either --corpus (with --data-root) or --data-dir, not both")
    try:
        folders = ([data.parse_corpus(c, args.data_root).path for c in args.corpus] if args.corpus
                   else [data.resolve_data_dir(args.data_dir)])
    except (ValueError, FileNotFoundError) as err:
        raise SystemExit(f"error: {err}") from None
    translator = load_translator(args)
    meta = translator.checkpoint
    results = []
    for folder in folders:
        try:
            sources, references = data.read_pairs(folder, args.split, meta.source_lang, meta.target_lang)
        except FileNotFoundError as err:
            raise SystemExit(f"error: {err}") from None
        if args.limit:
            sources, references = sources[:args.limit], references[:args.limit]
        bleu_score, chrf_score, bleu, chrf = score(translator, sources, references, args.beam,
                                                   args.length_penalty, args.batch_size)
        print(f"{folder.name} {meta.source_lang}->{meta.target_lang} {args.split}: {len(sources)} sentences, "
              f"beam {args.beam}, length penalty {args.length_penalty}")
        print(f"{bleu_score} | {bleu.get_signature()}")
        print(f"{chrf_score} | {chrf.get_signature()}")
        if len(folders) > 1:
            print(f"{folder.name}: bleu={bleu_score.score:.1f} chrf={chrf_score.score:.1f}")
        results.append((bleu_score.score, chrf_score.score))
    mean_bleu = sum(b for b, _ in results) / len(results)
    mean_chrf = sum(c for _, c in results) / len(results)
    print(f"bleu={mean_bleu:.1f} chrf={mean_chrf:.1f}")
    return mean_bleu, mean_chrf


if __name__ == "__main__":
    main()
