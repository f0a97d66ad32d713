"""Our greedy decoding against its peers on the same weights: transformers' MarianMTModel and CTranslate2.

Two models: a random base-size opus-mt-shaped MarianMTModel built here (6+6 layers, d_model 512, V 58101), read
into our Transformer by `transformer.marian`; and --checkpoint (default: the shipped de→en model) exported with
`python -m transformer.hub export-hf`. One ~20-word sentence, batch 1, CPU, 1 thread. Every side generates
exactly --tokens tokens (EOS suppressed) and the outputs are asserted equal; median of --runs after a warm-up.

Ours runs on its default path (`transformer.device.pick_precision`): the random model's weights are made fp16 numbers,
as every checkpoint this project saves is, so on an x86 CPU ours reads them in fp16 (fbgemm) while transformers
reads the same numbers in fp32. Ours in fp32 must give the peers' ids exactly; ours on its default path, the same
ids or, where a sum's order decides a near-tie, teacher-forced logits within 1e-4 of the largest (then it says so).

- ours_capture: greedy with every attention map kept (as the app runs); hf_capture: generate(...,
  output_attentions=True, return_dict_in_generate=True) with eager attention.
- ours_plain / hf_plain: no capture (ours: fused attention; transformers: its default attention).
- ct2: CTranslate2 greedy on the converted model, when the `ctranslate2` package is installed (else `na`); only
  for the opus-mt-shaped model (its converter assumes Marian's decoder start, see `compare`).

The last line: ours_vs_hf_capture=X ours_vs_hf_plain=Y ours_vs_ct2=Z, each the peer's time ÷ ours, for the
base-size model. --quick: a tiny random model only, 1 run, 5 tokens (a smoke test, not a measurement).

    python benchmarks/peers.py
    python -m benchmarks.peers --quick
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import tempfile
from pathlib import Path

import torch

if not __package__:  # run as a file (python benchmarks/peers.py): put the repo root on sys.path
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.common import default_checkpoint, median_ms, sentence  # noqa: E402
from transformer import checkpoint, marian  # noqa: E402
from transformer.device import pick_precision  # noqa: E402
from transformer.model import Transformer  # noqa: E402
from transformer.search import greedy_steps  # noqa: E402

BASE = dict(vocab_size=58101, d_model=512, encoder_layers=6, decoder_layers=6, encoder_attention_heads=8,
            decoder_attention_heads=8, encoder_ffn_dim=2048, decoder_ffn_dim=2048, max_position_embeddings=512)
TINY = dict(vocab_size=300, d_model=32, encoder_layers=2, decoder_layers=2, encoder_attention_heads=4,
            decoder_attention_heads=4, encoder_ffn_dim=64, decoder_ffn_dim=64, max_position_embeddings=64)


def random_marian(folder: Path, sizes: dict, tokenizer) -> None:
    """A random opus-mt-shaped model saved in `folder`, with `tokenizer`'s pieces as the first of its vocabulary."""
    from transformers import GenerationConfig, MarianConfig, MarianMTModel

    V = sizes["vocab_size"]
    pad = V - 1
    config = MarianConfig(**sizes, decoder_vocab_size=V, activation_function="swish", scale_embedding=True,
                          pad_token_id=pad, decoder_start_token_id=pad, eos_token_id=0, forced_eos_token_id=None,
                          share_encoder_decoder_embeddings=True)
    torch.manual_seed(0)
    model = MarianMTModel(config)
    with torch.no_grad():  # fp16 numbers, as a checkpoint we save holds (the fp32 copy transformers reads is exact)
        for param in model.parameters():
            param.copy_(param.half().float())
    model.generation_config = GenerationConfig(decoder_start_token_id=pad, eos_token_id=0, pad_token_id=pad,
                                               bad_words_ids=[[pad]], forced_eos_token_id=None, max_length=512)
    model.save_pretrained(folder)
    # Marian's specials first (</s> 0, <unk> 1, <pad> last), then the tokenizer's pieces, then filler pieces.
    own = [p for p in tokenizer.pieces(range(tokenizer.vocab_size)) if p not in ("<pad>", "<unk>", "<s>", "</s>")]
    pieces = ["</s>", "<unk>"] + own[:V - 3]
    pieces += [f"▁filler{i}" for i in range(V - 1 - len(pieces))] + ["<pad>"]
    (folder / "vocab.json").write_text(json.dumps({p: i for i, p in enumerate(pieces)}, ensure_ascii=False))
    for name in ("source.spm", "target.spm"):
        tokenizer.save(folder / name)
    (folder / "tokenizer_config.json").write_text(json.dumps({"tokenizer_class": "MarianTokenizer",
                                                              "separate_vocabs": False}))


def no_eos(model: Transformer, precision: str = "auto") -> Transformer:
    """The same weights with EOS suppressed too, so every run generates exactly the asked number of tokens; in
    `precision` (auto: the app's default for these weights)."""
    config = dataclasses.replace(model.config, suppress_ids=(*model.config.suppress_ids, model.config.eos_id))
    clone = Transformer(config)
    clone.load_state_dict(model.state_dict())
    pick_precision(clone.eval(), precision)
    return clone


def compare(name: str, folder: Path, ours: Transformer, src_ids: list[int], tokens: int, runs: int) -> dict:
    """Time every side on one model; assert they all produce the same ids."""
    from transformers import MarianMTModel

    model, fp32, config = no_eos(ours), no_eos(ours, "fp32"), ours.config
    src = torch.tensor([src_ids])

    def ours_run(capture: bool, on: Transformer = model) -> list[int]:
        encoded = on.encode(src, need_weights=capture)
        return [int(s.ids[0]) for s in greedy_steps(on, encoded, tokens, need_weights=capture)]

    kwargs = dict(max_new_tokens=tokens, min_new_tokens=tokens, num_beams=1, do_sample=False)
    eager = MarianMTModel.from_pretrained(folder, attn_implementation="eager").eval()
    default = MarianMTModel.from_pretrained(folder).eval()

    def hf_capture() -> list[int]:
        with torch.inference_mode():
            out = eager.generate(src, output_attentions=True, return_dict_in_generate=True, **kwargs)
        return out.sequences[0, 1:].tolist()

    def hf_plain() -> list[int]:
        with torch.inference_mode():
            return default.generate(src, **kwargs)[0, 1:].tolist()

    expected = ours_run(True, fp32)
    assert len(expected) == tokens and config.eos_id not in expected
    mine = ours_run(True)
    if model.precision != "fp32":
        same = mine == expected
        if not same:
            close_logits(model, fp32, src, expected, name)
        print(f"{name}: ours in {model.precision} {'gives the same ids' if same else 'breaks a near-tie'}")
    sides = {"ours_capture": lambda: ours_run(True), "ours_plain": lambda: ours_run(False),
             "hf_capture": hf_capture, "hf_plain": hf_plain}
    # CTranslate2's Marian converter drops the last id (taken for <pad>) and starts the decoder from a zero
    # embedding: right for opus-mt, whose decoder start is that pad, not for ours, which start from <s>.
    ct2 = ct2_side(folder, src_ids, tokens) if config.decoder_start_id == config.pad_id == config.vocab_size - 1 \
        else None
    if ct2 is not None:
        sides["ct2"] = ct2
    for side, fn in sides.items():
        want = mine if side.startswith("ours") else expected  # ours in fp32 gave `expected`
        assert fn() == want, f"{name}: {side} generated other ids than ours"
    times = {side: median_ms(fn, runs) for side, fn in sides.items()}
    print(f"{name}: " + " ".join(f"{k}_ms={v:.1f}" for k, v in times.items()), flush=True)
    return times


@torch.inference_mode()
def close_logits(model: Transformer, fp32: Transformer, src: torch.Tensor, ids: list[int], name: str) -> None:
    """Teacher-forced on `ids`, the two precisions' logits agree within 1e-4 of the largest."""
    tgt = torch.tensor([[fp32.config.decoder_start_id] + ids[:-1]])
    a, b = (m.decode(tgt, m.encode(src)).logits for m in (fp32, model))
    assert (a - b).abs().max() <= 1e-4 * a.abs().max(), f"{name}: fp16 logits differ from fp32 beyond the rounding"


def ct2_side(folder: Path, src_ids: list[int], tokens: int):
    """CTranslate2 greedy on the converted model, as a function returning ids; None without the package."""
    try:
        import ctranslate2
    except ImportError:
        return None
    out = Path(tempfile.mkdtemp(prefix="ct2-"))
    ctranslate2.converters.TransformersConverter(str(folder)).convert(str(out), force=True)
    translator = ctranslate2.Translator(str(out), device="cpu", intra_threads=1, inter_threads=1)
    vocab = json.loads((folder / "vocab.json").read_text())
    id_to_piece = {i: p for p, i in vocab.items()}
    source = [id_to_piece[i] for i in src_ids]

    def run() -> list[int]:
        result = translator.translate_batch([source], beam_size=1, max_decoding_length=tokens,
                                            min_decoding_length=tokens)
        return [vocab[p] for p in result[0].hypotheses[0]]

    return run


def ratios(times: dict) -> str:
    def ratio(peer: str, ours: str) -> str:
        return f"{times[peer] / times[ours]:.2f}" if peer in times else "na"

    return (f"ours_vs_hf_capture={ratio('hf_capture', 'ours_capture')} "
            f"ours_vs_hf_plain={ratio('hf_plain', 'ours_plain')} ours_vs_ct2={ratio('ct2', 'ours_plain')}")


def main(argv: list[str] | None = None) -> str:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--checkpoint", type=Path, default=None, help="our checkpoint to export (default: shipped de→en)")
    p.add_argument("--tokens", type=int, default=40, help="tokens every side generates")
    p.add_argument("--runs", type=int, default=7, help="timed runs per side (median)")
    p.add_argument("--quick", action="store_true", help="a tiny random model, 1 run, 5 tokens: a smoke test")
    args = p.parse_args(argv)
    torch.set_num_threads(1)
    runs, tokens = (1, 5) if args.quick else (args.runs, args.tokens)
    shipped_path = args.checkpoint or default_checkpoint()
    shipped = checkpoint.load(shipped_path)
    text = sentence(shipped.source_lang)
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp) / "random-base"
        random_marian(base, TINY if args.quick else BASE, shipped.tokenizer)
        loaded = checkpoint.load(base)
        src_ids = loaded.tokenizer.encode(text) + [loaded.config.eos_id]
        base_times = compare("random base-size opus-mt" if not args.quick else "random tiny", base, loaded.model,
                             src_ids, tokens, runs)
        if not args.quick:
            exported = marian.export(shipped, Path(tmp) / "exported")
            src_ids = shipped.tokenizer.encode(text) + [shipped.config.eos_id]
            compare(f"{shipped_path.name} exported", exported, shipped.model, src_ids, tokens, runs)
    line = ratios(base_times)
    print(line)
    return line


if __name__ == "__main__":
    main()
