"""Per-head statistics on hand-made attention whose answers are known, and their figures."""
from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest

import viz
from tests.app_fixtures import make_checkpoint
from transformer import Translator
from transformer.analysis import DEFINITIONS, HeadStats, head_statistics, trace_head_statistics
from transformer.kinds import KINDS
from viz.attention import causal_mask

LABELS = {kind.name: kind.label for kind in KINDS}  # as the page names them

SRC = ["▁Zwei", "▁Hund", "e", "▁<b>", "▁spielen", ".", "</s>"]
TGT = ["<s>", "▁Two", "▁dog", "s", "▁play", "."]
STATS = ("entropy", "focus", "same", "previous", "next", "first", "eos", "special", "monotonic")


def heads(*matrices) -> np.ndarray:
    """One layer whose heads are the given (queries × keys) matrices."""
    return np.stack(matrices)[None].astype(np.float32)


def one(weights, kind: str, keys) -> HeadStats:
    (stats,) = head_statistics(heads(weights), kind, keys)
    return stats


def uniform(n_queries: int, n_keys: int) -> np.ndarray:
    return np.full((n_queries, n_keys), 1 / n_keys)


def causal_uniform(n: int) -> np.ndarray:
    w = (~causal_mask(n, n)).astype(np.float64)
    return w / w.sum(-1, keepdims=True)


def test_diagonal_head_attends_to_itself_with_no_entropy():
    s = one(np.eye(len(SRC)), "encoder", SRC)
    assert (s.kind, s.layer, s.head) == ("encoder", 1, 1)
    assert s.same == pytest.approx(1) and s.entropy == pytest.approx(0) and s.focus == pytest.approx(1)
    assert s.previous == pytest.approx(0) and s.next == pytest.approx(0)
    assert s.first == pytest.approx(1 / len(SRC)) and s.eos == pytest.approx(1 / len(SRC))
    assert s.monotonic is None  # self-attention


def test_uniform_encoder_head_has_maximal_entropy_and_no_focus():
    n = len(SRC)
    s = one(uniform(n, n), "encoder", SRC)
    assert s.entropy == pytest.approx(math.log2(n), rel=1e-5)
    assert s.focus == pytest.approx(0, abs=1e-5)
    for share in (s.same, s.previous, s.next, s.first, s.eos):
        assert share == pytest.approx(1 / n, rel=1e-5)


def test_previous_and_next_token_heads():
    n = len(SRC)
    previous = np.eye(n, k=-1)
    previous[0, 0] = 1  # the first row has no previous position: it looks at itself
    s = one(previous, "encoder", SRC)
    assert s.previous == pytest.approx(1)
    assert s.next == pytest.approx(0) and s.same == pytest.approx(1 / n)
    following = np.eye(n, k=1)
    following[-1, -1] = 1
    assert one(following, "encoder", SRC).next == pytest.approx(1)


def test_causal_uniform_decoder_head_has_no_focus():
    n = len(TGT)
    s = one(causal_uniform(n), "decoder", TGT)
    # uniform over what the mask lets it see; row 0 sees only <s>, has no choice and is left out
    assert s.focus == pytest.approx(0, abs=1e-5)
    assert s.entropy == pytest.approx(np.mean(np.log2(np.arange(1, n + 1))), rel=1e-5)
    assert s.same == pytest.approx(np.mean(1 / np.arange(1, n + 1)), rel=1e-5)
    assert s.first == pytest.approx(s.same, rel=1e-5)  # row i gives 1/(i+1) to <s> and to itself
    assert s.next is None and s.monotonic is None
    assert s.eos is None  # the decoder reads <s> y1..yn: no key is </s>
    # a decoder head that always reads <s> is fully focused
    bos = np.zeros((n, n))
    bos[:, 0] = 1
    s = one(bos, "decoder", TGT)
    assert s.focus == pytest.approx(1) and s.first == pytest.approx(1) and s.entropy == pytest.approx(0)


def test_eos_head_and_partial_eos_share():
    q = len(TGT)
    to_eos = np.zeros((q, len(SRC)))
    to_eos[:, -1] = 1
    s = one(to_eos, "cross", SRC)
    assert s.eos == pytest.approx(1) and s.first == pytest.approx(0) and s.focus == pytest.approx(1)
    assert s.same is None and s.previous is None and s.next is None
    half = np.zeros((q, len(SRC)))
    half[:, [0, -1]] = 0.5
    s = one(half, "cross", SRC)
    assert s.eos == pytest.approx(0.5) and s.first == pytest.approx(0.5) and s.entropy == pytest.approx(1)
    # every </s> among the keys counts
    assert one(uniform(2, 4), "cross", ["a", "</s>", "b", "</s>"]).eos == pytest.approx(0.5)


def test_cross_monotonic_alignment():
    n = len(SRC)
    assert one(np.eye(n), "cross", SRC).monotonic == pytest.approx(1)
    assert one(np.eye(n)[::-1], "cross", SRC).monotonic == pytest.approx(-1)
    assert one(uniform(len(TGT), n), "cross", SRC).monotonic == 0.0
    assert one(uniform(1, n), "cross", SRC).monotonic == 0.0  # a single query row
    # Float32 rounding must not turn identical-looking rows into a perfect correlation.
    noisy = uniform(len(TGT), n) * (1 + 1e-7 * np.arange(len(TGT)))[:, None]
    assert one(noisy, "cross", SRC).monotonic == 0.0
    # A rectangular alignment that moves forward two keys per query is still perfectly monotonic.
    stretched = np.zeros((3, n))
    stretched[[0, 1, 2], [0, 2, 4]] = 1
    assert one(stretched, "cross", SRC).monotonic == pytest.approx(1)
    # a partly aligned head lies strictly between
    mixed = 0.5 * np.eye(n) + 0.5 * uniform(n, n)
    assert 0 < one(mixed, "cross", SRC).monotonic <= 1
    assert one(np.eye(n)[::-1] * 0.3 + np.eye(n) * 0.7, "cross", SRC).monotonic == pytest.approx(1)


def test_heads_and_layers_are_numbered_in_order():
    n = len(SRC)
    w = np.stack([heads(np.eye(n), uniform(n, n))[0], heads(uniform(n, n), np.eye(n))[0]])  # (2, 2, n, n)
    stats = head_statistics(w, "encoder", SRC)
    assert [(s.layer, s.head) for s in stats] == [(1, 1), (1, 2), (2, 1), (2, 2)]
    assert [s.focus for s in stats] == pytest.approx([1, 0, 0, 1], abs=1e-5)
    assert [s.entropy for s in stats] == pytest.approx([0, math.log2(n), math.log2(n), 0], abs=1e-5)


def test_bad_input_is_rejected_clearly():
    with pytest.raises(ValueError, match="unknown attention kind"):
        head_statistics(heads(np.eye(3)), "self", ["a", "b", "c"])
    with pytest.raises(ValueError, match="layers, heads, queries, keys"):
        head_statistics(np.eye(3), "encoder", ["a", "b", "c"])
    with pytest.raises(ValueError, match="key tokens"):
        head_statistics(heads(np.eye(3)), "encoder", ["a", "b"])
    with pytest.raises(ValueError, match="square"):
        head_statistics(heads(uniform(2, 3)), "decoder", ["a", "b", "c"])


def test_empty_sequences_do_not_crash():
    for kind, q, k in [("encoder", 0, 0), ("decoder", 0, 0), ("cross", 0, 3), ("cross", 2, 0)]:
        stats = head_statistics(np.zeros((2, 3, q, k), np.float32), kind, ["a", "b", "</s>"][:k])
        assert len(stats) == 6
        for s in stats:
            assert s.entropy == 0 and s.first == 0 and s.focus == 0
            assert s.monotonic in (None, 0.0)
    # one token: no previous or next position to look at, and nothing to align
    (s,) = head_statistics(np.ones((1, 1, 1, 1)), "decoder", ["<s>"])
    assert (s.focus, s.same, s.previous, s.first) == (1.0, 1.0, 0.0, 1.0)


@pytest.fixture(scope="module")
def trace(tmp_path_factory):
    folder = make_checkpoint(tmp_path_factory.mktemp("analysis") / "tiny")
    translator = Translator.from_checkpoint(folder, device="cpu")
    return translator.force("Zwei Hunde spielen im Schnee.", "Two dogs are playing in the snow.")


def test_trace_statistics_cover_every_head_in_range(trace):
    L, H = trace.encoder_self_attn.shape[:2]
    n_keys = {"encoder": len(trace.source_tokens), "decoder": len(trace.target_tokens),
              "cross": len(trace.source_tokens)}
    stats = trace_head_statistics(trace)
    assert len(stats) == 3 * L * H
    assert [s.kind for s in stats] == ["encoder"] * (L * H) + ["decoder"] * (L * H) + ["cross"] * (L * H)
    assert [(s.layer, s.head) for s in stats[:L * H]] == [(li, h) for li in range(1, L + 1) for h in range(1, H + 1)]
    for s in stats:
        for name in ("focus", "same", "previous", "next", "first", "eos", "special"):
            value = getattr(s, name)
            assert value is None or -1e-6 <= value <= 1 + 1e-6, (s, name)
        assert 0 <= s.entropy <= math.log2(n_keys[s.kind]) + 1e-4
        assert s.monotonic is None or -1 - 1e-6 <= s.monotonic <= 1 + 1e-6
        assert (s.monotonic is None) == (s.kind != "cross")
        assert (s.eos is None) == (s.kind == "decoder")  # the source ends in </s>, the decoder input does not
    # decoder row 0 sees only <s> and so gives it everything: its share of <s> is at least 1/T
    assert all(s.first >= 1 / n_keys["decoder"] - 1e-6 for s in stats if s.kind == "decoder")


def test_definitions_cover_every_statistic():
    assert tuple(DEFINITIONS) == STATS
    assert set(STATS) < {f for f in HeadStats.__dataclass_fields__}
    assert all(d.endswith(".") and len(d) < 200 for d in DEFINITIONS.values())


# --- figures -----------------------------------------------------------------------------------------------

def random_stats(L: int = 3, H: int = 4) -> list[HeadStats]:
    rng = np.random.default_rng(0)
    w = {"encoder": rng.dirichlet(np.ones(len(SRC)), size=(L, H, len(SRC))),
         "decoder": np.broadcast_to(causal_uniform(len(TGT)), (L, H, len(TGT), len(TGT))),
         "cross": rng.dirichlet(np.ones(len(SRC)), size=(L, H, len(TGT)))}
    keys = {"encoder": SRC, "decoder": TGT, "cross": SRC}
    return [s for kind in ("encoder", "decoder", "cross") for s in head_statistics(w[kind], kind, keys[kind])]


def test_table_rows_order_rounding_and_blanks():
    stats = random_stats(2, 2)
    headers, rows = viz.head_table(list(reversed(stats)), LABELS)
    assert headers[:3] == ["attention", "layer", "head"] and len(headers) == 3 + len(STATS)
    assert len(rows) == len(stats) == 3 * 2 * 2 and all(len(r) == len(headers) for r in rows)
    assert [r[:3] for r in rows[:5]] == [["encoder self-attention", 1, 1], ["encoder self-attention", 1, 2],
                                         ["encoder self-attention", 2, 1], ["encoder self-attention", 2, 2],
                                         ["decoder masked self-attention", 1, 1]]
    column = dict(zip(headers, zip(*rows)))
    assert column["monotonic"][:8] == (None,) * 8 and None not in column["monotonic"][8:]
    assert column["next position"][4:] == (None,) * 8 and None not in column["next position"][:4]
    assert column["EOS"][4:8] == (None,) * 4
    assert all(v == round(v, 3) for v in column["focus"])
    assert column["focus"][0] == round(stats[0].focus, 3)
    with pytest.raises(ValueError, match="unknown attention kind"):
        viz.head_table([replace(stats[0], kind="self")], LABELS)
