"""The model is the paper's: parameter counts, torch.nn.Transformer parity, masks, PE."""
from __future__ import annotations

import math

import pytest
import torch
from torch import nn

from transformer import ModelConfig, Transformer
from transformer.config import PAD_ID
from transformer.model import sinusoidal_positional_encoding

PAPER_V = 37000
SMALL = dict(vocab_size=50, d_model=32, n_heads=4, d_ff=64, n_encoder_layers=2, n_decoder_layers=3)


def test_defaults_are_the_paper_base_model():
    c = ModelConfig()
    assert (c.n_encoder_layers, c.n_decoder_layers, c.d_model, c.n_heads, c.d_ff, c.dropout) == (6, 6, 512, 8,
                                                                                                  2048, 0.1)
    assert c.d_k == 64 and c.norm_first is False and c.tie_embeddings is True


def test_config_is_frozen_and_round_trips_json():
    c = ModelConfig(vocab_size=8000, d_model=256, n_heads=4, norm_first=True)
    assert ModelConfig.from_json(c.to_json()) == c
    with pytest.raises(Exception):
        c.d_model = 128  # type: ignore[misc]


@pytest.mark.parametrize("bad", [dict(d_model=100, n_heads=3), dict(vocab_size=0), dict(dropout=1.5),
                                 dict(n_heads=True)])
def test_config_rejects_nonsense(bad):
    with pytest.raises(ValueError):
        ModelConfig(**bad)


@pytest.mark.parametrize("norm_first, expected", [(False, 44_138_496 + 512 * PAPER_V),
                                                  (True, 44_140_544 + 512 * PAPER_V)])
def test_parameter_count_matches_the_paper(norm_first, expected):
    # 168·d² + 192·d + V·d for post-LN (30 LayerNorms); pre-LN adds the two final norms (+4·d).
    with torch.device("meta"):  # shapes only: nothing is allocated or initialised
        model = Transformer(ModelConfig(vocab_size=PAPER_V, norm_first=norm_first))
    assert model.num_parameters() == expected


def test_untied_embeddings_add_two_vocabulary_matrices_and_no_output_bias():
    tied = Transformer(ModelConfig(**SMALL)).num_parameters()
    untied = Transformer(ModelConfig(**SMALL, tie_embeddings=False)).num_parameters()
    assert untied - tied == 2 * SMALL["vocab_size"] * SMALL["d_model"]


def test_tied_embedding_is_one_matrix_used_three_times():
    model = Transformer(ModelConfig(**SMALL)).eval()
    with torch.no_grad():
        model.embedding.weight[7].fill_(0.0)
    src = torch.tensor([[5, 6, 3]])
    logits = model(src, torch.tensor([[2, 4]]))
    assert torch.all(logits[..., 7] == 0)  # output projection reads the same matrix


def test_positional_encoding_is_the_papers_formula():
    max_len, d = 60, 16
    pe = sinusoidal_positional_encoding(max_len, d)
    for pos in range(max_len):
        for i in range(d // 2):
            angle = pos / 10000 ** (2 * i / d)
            assert pe[pos, 2 * i].item() == pytest.approx(math.sin(angle), abs=1e-6)
            assert pe[pos, 2 * i + 1].item() == pytest.approx(math.cos(angle), abs=1e-6)
    assert not torch.allclose(pe[:, 0::2], pe[:, 1::2])  # the sine half is not overwritten


def _copy_into_torch(ours: Transformer, ref: nn.Transformer) -> None:
    def attn(dst: nn.MultiheadAttention, src) -> None:
        dst.in_proj_weight.copy_(src.W_qkv.weight)
        dst.in_proj_bias.copy_(src.W_qkv.bias)
        dst.out_proj.weight.copy_(src.W_o.weight)
        dst.out_proj.bias.copy_(src.W_o.bias)

    def ffn_norms(dst, src) -> None:
        dst.linear1.load_state_dict(src.ffn.W_1.state_dict())
        dst.linear2.load_state_dict(src.ffn.W_2.state_dict())
        for i, norm in enumerate(src.norms):
            getattr(dst, f"norm{i + 1}").load_state_dict(norm.state_dict())

    with torch.no_grad():
        for dst, src in zip(ref.encoder.layers, ours.encoder_layers):
            attn(dst.self_attn, src.self_attn)
            ffn_norms(dst, src)
        for dst, src in zip(ref.decoder.layers, ours.decoder_layers):
            attn(dst.self_attn, src.self_attn)
            attn(dst.multihead_attn, src.cross_attn)
            ffn_norms(dst, src)
    if ours.config.norm_first:
        ref.encoder.norm.load_state_dict(ours.encoder_norm.state_dict())
        ref.decoder.norm.load_state_dict(ours.decoder_norm.state_dict())
    else:  # torch always adds final norms; the paper's post-LN stacks have none
        ref.encoder.norm = nn.Identity()
        ref.decoder.norm = nn.Identity()


@pytest.mark.parametrize("norm_first", [False, True])
def test_matches_torch_nn_transformer_given_the_same_weights(norm_first):
    torch.manual_seed(0)
    config = ModelConfig(**SMALL, norm_first=norm_first)
    ours = Transformer(config).eval()
    ref = nn.Transformer(config.d_model, config.n_heads, config.n_encoder_layers, config.n_decoder_layers,
                         config.d_ff, dropout=0.0, batch_first=True, norm_first=norm_first).eval()
    _copy_into_torch(ours, ref)
    src = torch.randint(4, config.vocab_size, (3, 9))
    src[1, 6:] = PAD_ID
    tgt = torch.randint(4, config.vocab_size, (3, 7))
    tgt[2, 5:] = PAD_ID
    with torch.no_grad():
        enc = ours.encode(src)
        ref_memory = ref.encoder(ours._embed(src, ours.embedding), src_key_padding_mask=src == PAD_ID)
        real = src != PAD_ID
        assert (enc.memory - ref_memory)[real].abs().max() < 1e-5
        ref_out = ref.decoder(ours._embed(tgt, ours.embedding), ref_memory,
                              tgt_mask=nn.Transformer.generate_square_subsequent_mask(tgt.size(1)),
                              tgt_key_padding_mask=tgt == PAD_ID, memory_key_padding_mask=src == PAD_ID)
        ours_logits = ours.decode(tgt, enc).logits
        real_t = tgt != PAD_ID
        assert (ours_logits - ours.logits(ref_out))[real_t].abs().max() < 1e-5


def _model(norm_first=False, seed=0):
    torch.manual_seed(seed)
    return Transformer(ModelConfig(**SMALL, norm_first=norm_first)).eval()


@pytest.mark.parametrize("norm_first", [False, True])
def test_fused_attention_equals_explicit(norm_first):
    model = _model(norm_first)
    src = torch.randint(4, 50, (2, 8))
    src[0, 5:] = PAD_ID
    tgt = torch.randint(4, 50, (2, 6))
    with torch.no_grad():
        fused_enc, explicit_enc = model.encode(src), model.encode(src, need_weights=True)
        assert torch.allclose(fused_enc.memory, explicit_enc.memory, atol=1e-5)
        fused = model.decode(tgt, fused_enc).logits
        explicit = model.decode(tgt, explicit_enc, need_weights=True)
    assert torch.allclose(fused, explicit.logits, atol=1e-5)
    assert fused_enc.self_attn is None
    assert len(explicit_enc.self_attn) == 2 and len(explicit.cross_attn) == 3


@pytest.mark.parametrize("norm_first", [False, True])
def test_attention_inputs_are_the_attention_of_the_pass_with_weights(norm_first):
    """Every kind and layer: attention_inputs' weights are exactly those of encode and decode with weights (the
    pass a trace's maps come from), and its heads exactly what that pass gave W_o."""
    model = _model(norm_first)
    src, tgt = torch.randint(4, 50, (1, 7)), torch.randint(4, 50, (1, 5))
    given = {}  # W_o module -> its input in the pass
    modules = {"encoder": [layer.self_attn for layer in model.encoder_layers],
               "decoder": [layer.self_attn for layer in model.decoder_layers],
               "cross": [layer.cross_attn for layer in model.decoder_layers]}
    hooks = [mha.W_o.register_forward_hook(lambda mod, args, out: given.__setitem__(mod, args[0]))
             for mhas in modules.values() for mha in mhas]
    with torch.no_grad():
        encoded = model.encode(src, need_weights=True)
        decoded = model.decode(tgt, encoded, need_weights=True)
    for hook in hooks:
        hook.remove()
    passes = {"encoder": encoded.self_attn, "decoder": decoded.self_attn, "cross": decoded.cross_attn}
    for kind, weights in passes.items():
        for layer, (w, mha) in enumerate(zip(weights, modules[kind], strict=True)):
            with torch.no_grad():
                got = model.attention_inputs(src, tgt, kind, layer)
            assert torch.equal(got.weights, w), (kind, layer)
            B, h, T_q, d_k = got.heads.shape
            assert torch.equal(got.heads.transpose(1, 2).reshape(B, T_q, h * d_k), given[mha.W_o]), (kind, layer)
            assert got.q.shape == got.heads.shape and got.k.shape == got.v.shape == (B, h, w.size(-1), d_k)
            if kind == "decoder":
                assert torch.equal(got.mask, torch.ones(T_q, T_q, dtype=torch.bool).tril())
            else:
                assert got.mask is None


def test_attention_rows_sum_to_one_and_masked_cells_are_exactly_zero():
    model = _model()
    src = torch.randint(4, 50, (2, 8))
    src[0, 5:] = PAD_ID
    tgt = torch.randint(4, 50, (2, 6))
    tgt[1, 4:] = PAD_ID
    with torch.no_grad():
        enc = model.encode(src, need_weights=True)
        dec = model.decode(tgt, enc, need_weights=True)
    for w in enc.self_attn:
        assert w.shape == (2, 4, 8, 8)
        assert torch.allclose(w.sum(-1), torch.ones(2, 4, 8))
        assert torch.all(w[0, :, :, 5:] == 0)  # padding keys
    for w in dec.cross_attn:
        assert w.shape == (2, 4, 6, 8)
        assert torch.allclose(w.sum(-1), torch.ones(2, 4, 6))
        assert torch.all(w[0, :, :, 5:] == 0)
    future = torch.ones(6, 6, dtype=torch.bool).triu(1)
    for w in dec.self_attn:
        assert w.shape == (2, 4, 6, 6)
        assert torch.allclose(w.sum(-1), torch.ones(2, 4, 6))
        assert torch.all(w[:, :, future] == 0)  # future positions
        assert torch.all(w[1, :, :, 4:] == 0)  # target padding


def test_changing_a_future_target_token_leaves_earlier_outputs_unchanged():
    model = _model(norm_first=True)
    src = torch.randint(4, 50, (1, 8))
    tgt = torch.randint(4, 50, (1, 6))
    changed = tgt.clone()
    changed[0, 4] = (tgt[0, 4] + 1) % 50
    with torch.no_grad():
        enc = model.encode(src)
        a, b = model.decode(tgt, enc).logits, model.decode(changed, enc).logits
    assert torch.equal(a[:, :4], b[:, :4])
    assert not torch.allclose(a[:, 4:], b[:, 4:])


def test_embeddings_are_scaled_by_sqrt_d_model_before_adding_pe():
    model = _model()
    ids = torch.tensor([[9, 10]])
    expected = model.embedding(ids) * math.sqrt(32) + model.pe[:2]
    assert torch.allclose(model._embed(ids, model.embedding), expected)


def test_sequence_longer_than_max_len_is_refused_clearly():
    model = Transformer(ModelConfig(**{**SMALL, "max_len": 8})).eval()
    with pytest.raises(ValueError, match="max_len"):
        model.encode(torch.randint(4, 50, (1, 9)))
