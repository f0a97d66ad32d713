"""Hugging Face MarianMT folders (the Helsinki-NLP opus-mt models): read into our Transformer, and written from it.

opus-mt models have the paper's architecture; what differs from our own checkpoints is configuration of the one
model (SiLU "swish" FFN, sines-then-cosines PE layout, a final logits bias, pad = decoder start = V-1, eos 0) and of
the tokenizer: two SentencePiece models (source.spm, target.spm) whose pieces are numbered by one vocab.json.
Marian's sinusoidal position tables are fixed, so they are checked, not loaded.
"""
from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Iterable

import sentencepiece as spm
import torch
from torch import Tensor

from .config import ModelConfig
from .model import Transformer, sinusoidal_positional_encoding, split_order
from .pieces import UNKNOWN, detokenize

TOKENIZER_FILES = ("source.spm", "target.spm", "vocab.json")
WEIGHT_FILES = ("model.safetensors", "pytorch_model.bin")
# Marian's activation names -> ours ("silu" and "swish" are one function in transformers).
ACTIVATIONS = {"swish": "swish", "silu": "swish", "relu": "relu"}
_POSITIONS = ("model.encoder.embed_positions.weight", "model.decoder.embed_positions.weight")
_EMBEDDINGS = ("model.shared.weight", "model.encoder.embed_tokens.weight", "model.decoder.embed_tokens.weight",
               "lm_head.weight")


class MarianError(ValueError):
    """A Marian folder this project cannot represent or read, with the reason."""


class MarianTokenizer:
    """opus-mt's tokenizer: source.spm and target.spm cut text into pieces, vocab.json numbers them.

    Ids are those of `transformers.MarianTokenizer`: a piece missing from vocab.json (an unknown character)
    is <unk>; no BOS; the caller appends EOS to a source.
    """

    def __init__(self, source_proto: bytes, target_proto: bytes, vocab: dict[str, int],
                 unk: str = "<unk>", eos: str = "</s>", pad: str = "<pad>"):
        for name, piece in (("unk", unk), ("eos", eos), ("pad", pad)):
            if piece not in vocab:
                raise MarianError(f"vocab.json has no {name} piece {piece!r}")
        codes = sorted(p for p in vocab if p.startswith(">>") and p.endswith("<<"))
        if codes:
            raise MarianError(f"a multi-target model (target language codes such as {', '.join(codes[:3])}) needs a "
                              ">>lang<< prefix on every input; only single-target opus-mt models are supported")
        self.protos = (source_proto, target_proto)
        self.source = spm.SentencePieceProcessor(model_proto=source_proto)
        self.target = spm.SentencePieceProcessor(model_proto=target_proto)
        self.vocab = vocab
        self.unk_id, self.eos_id, self.pad_id = vocab[unk], vocab[eos], vocab[pad]
        # The specials by the names the app reads them by (transformer.pieces), whatever tokenizer_config calls them.
        self.id_to_piece = {**{i: p for p, i in vocab.items()},
                            self.unk_id: UNKNOWN, self.eos_id: "</s>", self.pad_id: "<pad>"}

    @classmethod
    def load(cls, folder: str | Path) -> "MarianTokenizer":
        folder = Path(folder)
        path = folder / "tokenizer_config.json"
        tokenizer_config = _read_json(path) if path.is_file() else {}
        if tokenizer_config.get("separate_vocabs"):
            raise MarianError(f"{folder} has separate source and target vocabularies; only a shared one is supported")
        specials = {k: tokenizer_config[f"{k}_token"] for k in ("unk", "eos", "pad")
                    if isinstance(tokenizer_config.get(f"{k}_token"), str)}
        return cls((folder / "source.spm").read_bytes(), (folder / "target.spm").read_bytes(),
                   _read_json(folder / "vocab.json"), **specials)

    @property
    def vocab_size(self) -> int:
        return len(self.vocab)

    def _ids(self, sp: spm.SentencePieceProcessor, text: str) -> list[int]:
        return [self.vocab.get(p, self.unk_id) for p in sp.encode(text, out_type=str)]

    def encode(self, text: str) -> list[int]:
        return self._ids(self.source, text)

    def encode_target(self, text: str) -> list[int]:
        return self._ids(self.target, text)

    def encode_batch(self, texts: list[str]) -> list[list[int]]:
        return [self.encode(t) for t in texts]

    def decode(self, ids: Iterable[int]) -> str:
        """The text of `ids` (transformer.pieces.detokenize; target.spm's decode_pieces would leave the ▁ of a
        piece only source.spm has)."""
        return detokenize(self.pieces(i for i in ids if int(i) not in (self.eos_id, self.pad_id)))

    def pieces(self, ids: Iterable[int]) -> list[str]:
        return [self.id_to_piece.get(int(i), UNKNOWN) for i in ids]


def _read_json(path: Path) -> dict:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as err:
        raise MarianError(f"{path} cannot be read as JSON: {err}") from err


def is_marian_folder(folder: Path) -> bool:
    """A folder in the Hugging Face MarianMT layout (config.json says model_type "marian")."""
    try:
        return json.loads((folder / "config.json").read_text()).get("model_type") == "marian"
    except (OSError, ValueError, AttributeError):
        return False


def config_from_hf(hf: dict, generation: dict | None = None) -> ModelConfig:
    """Our ModelConfig for a MarianConfig (config.json), refusing what our model cannot represent."""
    generation = generation or {}

    def need(condition: bool, what: str) -> None:
        if not condition:
            raise MarianError(f"unsupported Marian config: {what}")

    def get(name: str, default=None):
        return hf.get(name, default)

    need(get("encoder_attention_heads") == get("decoder_attention_heads"), "encoder and decoder head counts differ")
    need(get("encoder_ffn_dim") == get("decoder_ffn_dim"), "encoder and decoder d_ff differ")
    need(get("share_encoder_decoder_embeddings", True), "separate encoder and decoder embeddings")
    need(get("decoder_vocab_size") in (None, get("vocab_size")), "a decoder vocabulary of another size")
    need(get("tie_word_embeddings", True), "an output projection not tied to the embeddings")
    need(get("scale_embedding", False), "embeddings not scaled by sqrt(d_model) (scale_embedding=false)")
    need(not get("normalize_before", False), "pre-LN layers (normalize_before)")
    activation = ACTIVATIONS.get(get("activation_function", "gelu"))
    need(activation is not None, f"activation_function={get('activation_function', 'gelu')!r} "
                                 f"(supported: {', '.join(ACTIVATIONS)})")
    bad_words = generation.get("bad_words_ids", get("bad_words_ids")) or []
    need(all(len(w) == 1 for w in bad_words), "bad_words_ids longer than one token")
    start = generation.get("decoder_start_token_id", get("decoder_start_token_id"))
    return ModelConfig(
        vocab_size=get("vocab_size"), d_model=get("d_model"), n_heads=get("encoder_attention_heads"),
        d_ff=get("encoder_ffn_dim"), n_encoder_layers=get("encoder_layers"), n_decoder_layers=get("decoder_layers"),
        dropout=0.0, max_len=get("max_position_embeddings"), norm_first=False, tie_embeddings=True,
        activation=activation, pe_layout="split", final_logits_bias=True, pad_id=get("pad_token_id"),
        eos_id=generation.get("eos_token_id", get("eos_token_id")),
        decoder_start_id=get("pad_token_id") if start is None else start,
        suppress_ids=tuple(w[0] for w in bad_words), beam_limit_rule="top_k")


def parameter_names(config: ModelConfig) -> list[tuple[str, tuple[str, ...]]]:
    """(our name, the Marian names it is made of, concatenated along dim 0) for every tensor of our model."""
    names: list[tuple[str, tuple[str, ...]]] = [("embedding.weight", ("model.shared.weight",))]
    self_attention, cross_attention = ("self_attn", "self_attn"), ("cross_attn", "encoder_attn")
    stacks = (("encoder_layers", "model.encoder.layers", config.n_encoder_layers, (self_attention,),
               ("self_attn_layer_norm", "final_layer_norm")),
              ("decoder_layers", "model.decoder.layers", config.n_decoder_layers, (self_attention, cross_attention),
               ("self_attn_layer_norm", "encoder_attn_layer_norm", "final_layer_norm")))
    for our_stack, their_stack, n, attention, norms in stacks:
        for i in range(n):
            ours, theirs = f"{our_stack}.{i}", f"{their_stack}.{i}"
            for kind, hf_kind in attention:
                for p in ("weight", "bias"):
                    names.append((f"{ours}.{kind}.W_qkv.{p}", tuple(f"{theirs}.{hf_kind}.{x}_proj.{p}" for x in "qkv")))
                    names.append((f"{ours}.{kind}.W_o.{p}", (f"{theirs}.{hf_kind}.out_proj.{p}",)))
            for p in ("weight", "bias"):
                names.append((f"{ours}.ffn.W_1.{p}", (f"{theirs}.fc1.{p}",)))
                names.append((f"{ours}.ffn.W_2.{p}", (f"{theirs}.fc2.{p}",)))
                names.extend((f"{ours}.norms.{j}.{p}", (f"{theirs}.{norm}.{p}",)) for j, norm in enumerate(norms))
    return names


def state_from_hf(state: dict[str, Tensor], config: ModelConfig, where: str) -> dict[str, Tensor]:
    """Our state dict from a MarianMTModel's, name by name with shapes checked; positions must be the sinusoids."""
    state = {k: v.float() for k, v in state.items()}
    if "model.shared.weight" not in state:  # some saves keep only the (tied) per-stack copies
        for key in _EMBEDDINGS[1:3]:
            if key in state:
                state["model.shared.weight"] = state[key]
                break
    shared = state.get("model.shared.weight")
    for key in _EMBEDDINGS[1:]:
        if key in state and shared is not None and not torch.equal(state[key], shared):
            raise MarianError(f"{where}: {key} differs from model.shared.weight; untied embeddings are not supported")
    if "final_logits_bias" in state:
        state["final_logits_bias"] = state["final_logits_bias"].reshape(-1)  # Marian keeps it as (1, V)
    pe = sinusoidal_positional_encoding(config.max_len, config.d_model, "split")
    for key in _POSITIONS:
        if key in state and (state[key].shape != pe.shape or (state[key] - pe).abs().max() > 1e-4):
            raise MarianError(f"{where}: {key} is not Marian's fixed sinusoidal table; learned positions are "
                              "not supported")
    model = Transformer(config)
    expected = model.state_dict()
    out, used = {}, set(_EMBEDDINGS) | set(_POSITIONS)
    for ours, theirs in parameter_names(config) + [("final_logits_bias", ("final_logits_bias",))]:
        missing = [n for n in theirs if n not in state]
        if missing:
            raise MarianError(f"{where} has no tensor {missing[0]!r}: not a MarianMTModel of this config.json")
        tensor = torch.cat([state[n] for n in theirs])
        if tensor.shape != expected[ours].shape:
            raise MarianError(f"{where}: {', '.join(theirs)} give {tuple(tensor.shape)} for {ours}, "
                              f"config.json implies {tuple(expected[ours].shape)}")
        out[ours] = tensor
        used.update(theirs)
    unknown = sorted(set(state) - used)
    if unknown:
        raise MarianError(f"{where} has tensors our model has no place for: {unknown[:5]}")
    return out


def read_weights(folder: Path) -> dict[str, Tensor]:
    """model.safetensors, else pytorch_model.bin through torch.load(weights_only=True): tensors only, no code."""
    if (folder / "model.safetensors").is_file():
        from safetensors.torch import load_file

        return load_file(folder / "model.safetensors")
    if (folder / "pytorch_model.bin").is_file():
        try:
            return torch.load(folder / "pytorch_model.bin", map_location="cpu", weights_only=True)
        except Exception as err:  # weights_only refuses pickled code; corrupt files fail here too
            raise MarianError(f"{folder / 'pytorch_model.bin'} cannot be read as plain tensors: {err}") from err
    raise MarianError(f"{folder} has no weights: a MarianMT folder needs {' or '.join(WEIGHT_FILES)} "
                      "(TensorFlow, Flax and Rust weights are not read)")


def languages(folder: Path, name: str) -> tuple[str, str]:
    """(source, target) from tokenizer_config.json, else from an opus-mt-SRC-TGT name, else ("?", "?")."""
    tokenizer_config = folder / "tokenizer_config.json"
    data = _read_json(tokenizer_config) if tokenizer_config.is_file() else {}
    src, tgt = data.get("source_lang"), data.get("target_lang")
    match = re.search(r"opus-mt-([a-zA-Z_]+)-([a-zA-Z_]+)", name)
    if not (isinstance(src, str) and isinstance(tgt, str)) and match:
        src, tgt = match.groups()
    if isinstance(src, str) and isinstance(tgt, str):
        return src.split("_")[0], tgt.split("_")[0]  # "de_DE" -> "de"
    return "?", "?"


def load_folder(folder: Path, name: str) -> tuple[Transformer, MarianTokenizer, dict]:
    """Our model and tokenizer from a MarianMT folder, and the meta a Checkpoint keeps (its config.json's place)."""
    for file in ("config.json", *TOKENIZER_FILES):
        if not (folder / file).is_file():
            raise MarianError(f"{folder / file} is missing; a MarianMT folder needs config.json, "
                              f"{', '.join(TOKENIZER_FILES)} and {' or '.join(WEIGHT_FILES)}")
    hf = _read_json(folder / "config.json")
    generation = _read_json(folder / "generation_config.json") if (folder / "generation_config.json").is_file() else {}
    config = config_from_hf(hf, generation)
    tokenizer = MarianTokenizer.load(folder)
    if tokenizer.vocab_size != config.vocab_size:
        raise MarianError(f"{folder / 'vocab.json'} has {tokenizer.vocab_size} pieces but config.json says "
                          f"vocab_size={config.vocab_size}")
    if (tokenizer.eos_id, tokenizer.pad_id) != (config.eos_id, config.pad_id):
        raise MarianError(f"vocab.json numbers eos/pad {tokenizer.eos_id}/{tokenizer.pad_id}, config.json "
                          f"{config.eos_id}/{config.pad_id}")
    model = Transformer(config)
    model.load_state_dict(state_from_hf(read_weights(folder), config, str(folder)))
    source_lang, target_lang = languages(folder, name)
    owner = name.removeprefix("hf://").split("/")[0] if name.startswith("hf://") else ""
    family = "opus-mt" if "opus-mt" in name else "MarianMT"
    meta = {"model": config.to_dict(), "source_lang": source_lang, "target_lang": target_lang, "format": "marian",
            "origin": ", ".join(x for x in (family, owner) if x), "hf_config": hf}
    return model.eval(), tokenizer, meta


# --- export: our checkpoint -> a MarianMT folder ---

def _residual_axes(name: str) -> tuple[int, ...]:
    """The axes of one of our tensors that index the residual stream (d_model), by what the tensor does."""
    if name == "embedding.weight" or name.endswith(("W_qkv.weight", "W_1.weight")):
        return (1,)  # read the residual stream
    if name.endswith(("W_o.weight", "W_o.bias", "W_2.weight", "W_2.bias")) or ".norms." in name:
        return (0,)  # write it, or normalise it (LayerNorm commutes with a permutation of its features)
    return ()


def state_to_hf(model: Transformer) -> dict[str, Tensor]:
    """A MarianMTModel state dict computing what `model` computes.

    Marian's PE is split (sines, then cosines); ours is interleaved. Permuting the residual stream's basis by
    `split_order` on every weight that reads or writes it turns one into the other exactly.
    """
    config = model.config
    order = split_order(config.d_model) if config.pe_layout == "interleaved" else torch.arange(config.d_model)
    ours = {k: v.detach().float().cpu() for k, v in model.state_dict().items()}
    out = {}
    for name, theirs in parameter_names(config):
        tensor = ours[name]
        for axis in _residual_axes(name):
            tensor = tensor.index_select(axis, order)
        for hf_name, part in zip(theirs, tensor.chunk(len(theirs))):
            out[hf_name] = part.contiguous()
    bias = ours.get("final_logits_bias", torch.zeros(config.vocab_size))
    out["final_logits_bias"] = bias.reshape(1, -1).contiguous()
    return out


def hf_config(config: ModelConfig) -> dict:
    """A MarianConfig (config.json) with every id and field written out, none left to transformers' defaults."""
    return {
        "architectures": ["MarianMTModel"], "model_type": "marian", "dtype": "float32",
        "vocab_size": config.vocab_size, "decoder_vocab_size": config.vocab_size, "d_model": config.d_model,
        "encoder_layers": config.n_encoder_layers, "decoder_layers": config.n_decoder_layers,
        "encoder_attention_heads": config.n_heads, "decoder_attention_heads": config.n_heads,
        "encoder_ffn_dim": config.d_ff, "decoder_ffn_dim": config.d_ff,
        "activation_function": config.activation, "max_position_embeddings": config.max_len,
        "scale_embedding": True, "share_encoder_decoder_embeddings": True, "tie_word_embeddings": True,
        "dropout": 0.1, "attention_dropout": 0.0, "activation_dropout": 0.0, "encoder_layerdrop": 0.0,
        "decoder_layerdrop": 0.0, "init_std": 0.02, "use_cache": True, "is_encoder_decoder": True,
        "pad_token_id": config.pad_id, "eos_token_id": config.eos_id, "bos_token_id": config.decoder_start_id,
        "decoder_start_token_id": config.decoder_start_id, "forced_eos_token_id": None,
    }


def generation_config(config: ModelConfig) -> dict:
    """Default generate(): greedy up to max_len positions (ours: max_len - 1 new tokens), no forced EOS."""
    out = {"decoder_start_token_id": config.decoder_start_id, "eos_token_id": config.eos_id,
           "pad_token_id": config.pad_id, "bos_token_id": config.decoder_start_id, "forced_eos_token_id": None,
           "max_length": config.max_len, "num_beams": 1, "do_sample": False}
    if config.suppress_ids:
        out["bad_words_ids"] = [[i] for i in config.suppress_ids]
    return out


def vocab_of(tokenizer) -> dict[str, int]:
    """vocab.json for one of our SentencePiece tokenizers: every piece by its own id."""
    return {piece: i for i, piece in enumerate(tokenizer.pieces(range(tokenizer.vocab_size)))}


def model_card(repo_hint: str, source_lang: str, target_lang: str, config: ModelConfig) -> str:
    return f"""---
library_name: transformers
pipeline_tag: translation
language: [{source_lang}, {target_lang}]
tags: [translation, marian]
---
# {source_lang} → {target_lang}, exported from Transformer Anatomy

A from-scratch Transformer (Vaswani et al. 2017; {config.n_encoder_layers}+{config.n_decoder_layers} layers,
d_model {config.d_model}, {config.n_heads} heads, d_ff {config.d_ff}) written out in the MarianMT layout, so
`transformers` runs it with no code of the project:

```python
from transformers import MarianMTModel, MarianTokenizer

tokenizer = MarianTokenizer.from_pretrained("{repo_hint}")
model = MarianMTModel.from_pretrained("{repo_hint}")
batch = tokenizer(["..."], return_tensors="pt", padding=True)
print(tokenizer.batch_decode(model.generate(**batch), skip_special_tokens=True))
```

Default `generate()` is greedy decoding; pass `num_beams=5` for beam search. The
residual stream's dimensions are permuted (Marian's sinusoidal encoding puts all sines before all cosines;
the paper interleaves them): the computation is the same. Ids: pad {config.pad_id}, eos {config.eos_id},
decoder start {config.decoder_start_id}.
"""


def export(ck, out_dir: str | Path) -> Path:
    """Write checkpoint `ck` (ours) as a MarianMT folder that `transformers` loads with no code of ours."""
    from safetensors.torch import save_file

    config = ck.model.config
    if ck.meta.get("format") == "marian":
        raise MarianError(f"{ck.id} is already a MarianMT model: its own folder is what transformers loads")
    if config.norm_first:
        raise MarianError(f"{ck.id} is pre-LN (norm_first); Marian has only post-LN layers, so it cannot be exported")
    if not config.tie_embeddings:
        raise MarianError(f"{ck.id} has untied embeddings; Marian ties source, target and output embeddings")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    save_file(state_to_hf(ck.model), out / "model.safetensors", metadata={"format": "pt"})
    (out / "config.json").write_text(json.dumps(hf_config(config), indent=2) + "\n")
    (out / "generation_config.json").write_text(json.dumps(generation_config(config), indent=2) + "\n")
    for name in ("source.spm", "target.spm"):
        ck.tokenizer.save(out / name)  # one SentencePiece model serves both sides
    (out / "vocab.json").write_text(json.dumps(vocab_of(ck.tokenizer), ensure_ascii=False, indent=0) + "\n")
    tokenizer_config = {"tokenizer_class": "MarianTokenizer", "source_lang": ck.source_lang,
                        "target_lang": ck.target_lang, "unk_token": "<unk>", "eos_token": "</s>",
                        "pad_token": "<pad>", "model_max_length": config.max_len, "separate_vocabs": False}
    (out / "tokenizer_config.json").write_text(json.dumps(tokenizer_config, indent=2) + "\n")
    (out / "README.md").write_text(model_card(out.name, ck.source_lang, ck.target_lang, config))
    return out
