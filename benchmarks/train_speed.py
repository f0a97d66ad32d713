"""Training throughput of our Transformer vs torch.nn.Transformer at the same size, on this CPU.

Same batches (real Multi30k lengths), same embeddings/PE/projection in front and behind;
prints target tokens/s of each and the ratio ours/torch.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn

if not __package__:  # run as a file (python benchmarks/train_speed.py): put the repo root on sys.path
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from transformer import data  # noqa: E402
from transformer.config import PAD_ID, PRESETS, ModelConfig  # noqa: E402
from transformer.model import Transformer  # noqa: E402
from transformer.tokenizer import Tokenizer  # noqa: E402


class TorchReference(nn.Module):
    """torch.nn.Transformer behind the same embedding, PE and tied projection as ours."""

    def __init__(self, config: ModelConfig):
        super().__init__()
        self.ours = Transformer(config)  # borrowed for embeddings and PE only
        self.core = nn.Transformer(config.d_model, config.n_heads, config.n_encoder_layers,
                                   config.n_decoder_layers, config.d_ff, config.dropout, batch_first=True,
                                   norm_first=config.norm_first)

    def forward(self, src: torch.Tensor, tgt: torch.Tensor) -> torch.Tensor:
        o = self.ours
        causal = nn.Transformer.generate_square_subsequent_mask(tgt.size(1))
        out = self.core(o._embed(src, o.embedding), o._embed(tgt, o.embedding), tgt_mask=causal,
                        src_key_padding_mask=src == PAD_ID, tgt_key_padding_mask=tgt == PAD_ID,
                        memory_key_padding_mask=src == PAD_ID, tgt_is_causal=True)
        return o.logits(out)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--steps", type=int, default=12)
    p.add_argument("--max-tokens", type=int, default=2500)
    args = p.parse_args()
    torch.set_num_threads(args.threads)
    src_text, tgt_text = data.read_pairs(data.resolve_data_dir(), "train", "de", "en")
    src_text, tgt_text = src_text[:4000], tgt_text[:4000]
    tok = Tokenizer.train(src_text + tgt_text, vocab_size=8000)
    s, t = tok.encode_batch(src_text), tok.encode_batch(tgt_text)
    batches = [data.make_batch([s[i] for i in b], [t[i] for i in b])
               for b in data.token_batches(s, t, args.max_tokens, seed=0)[:args.steps]]
    config = ModelConfig(vocab_size=tok.vocab_size, max_len=256, **PRESETS["small"])
    rates = {}
    for name, model in (("ours", Transformer(config)), ("torch", TorchReference(config))):
        opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
        model.train()
        times = []
        for b in batches:
            t0 = time.perf_counter()
            logits = model(b.src, b.tgt_in)
            loss = F.cross_entropy(logits.flatten(0, 1), b.tgt_out.flatten(), ignore_index=PAD_ID)
            opt.zero_grad()
            loss.backward()
            opt.step()
            times.append((time.perf_counter() - t0) / b.n_tokens)
        rates[name] = 1.0 / statistics.median(times[2:])
        print(f"{name}: {rates[name]:.0f} target tokens/s")
    print(f"threads={args.threads} ours_tok_s={rates['ours']:.0f} torch_tok_s={rates['torch']:.0f} "
          f"ratio={rates['ours'] / rates['torch']:.2f}")


if __name__ == "__main__":
    main()
