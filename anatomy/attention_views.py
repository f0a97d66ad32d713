"""The attention explorer's arithmetic in Python: one kind's layer and head as shown (words, special tokens
hidden) and a decoding step's row, which the animation draws and tests hold equal to the viewer's
(anatomy/viewer/figures.js draws every view of a trace in the browser); the softmax walk, which needs the model's
q, k, v; the kinds' help; the export names of figures and animations.

transformer.kinds defines the attention kinds (name, label, sides); their axis titles and help are here.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

import viz
from transformer import HeadVectors, Trace
from transformer.kinds import CROSS, DECODER, ENCODER, AttentionKind, by_name
from transformer.pieces import word_groups, word_label

from .inputs import MEAN_HEAD, PAGE_KINDS, View
from .views import Arrays, arrays, name, steps, without_special

# Axis titles by the side that a kind's queries or keys come from (AttentionKind.queries, .keys).
QUERY_TITLES = {"source": "query: source piece", "target": "query: decoder position (read ▸ produced)"}
KEY_TITLES = {"source": "key: source piece", "target": "key: decoder input piece (read)"}
HIDE_TITLE = " · special tokens hidden, rows renormalised"
# The step panels' bar colours (viridis's): cross-attention, decoder self-attention.
STEP_COLORS: dict[AttentionKind, str] = {CROSS: "#3b528b", DECODER: "#21918c"}


def stepped(kind: AttentionKind) -> bool:
    """Its rows are decoder positions, one per decoding step (the step highlight and slow motion apply)."""
    return kind.queries == "target"


# What each kind does, under its name in the help.
HELP: dict[AttentionKind, str] = {
    CROSS: "Each row is one decoder position: it *reads* the previous output piece and *produces* the next one "
           "(`read ▸ produced`). The row shows which source pieces it drew on; in a trained model the upper layers "
           "look like an **alignment** between the sentences.",
    ENCODER: "Each source piece (row) mixes in information from every source piece (columns), in both directions. "
             "Heads specialise: some look at the next or previous piece, some at the end of the sentence.",
    DECODER: "Position *t* may only look at positions ≤ *t*: the **grey** cells are hidden by the mask (they are "
             "not zero attention). This is what makes left-to-right generation possible.",
}
COMMON_HELP = ("\n\nQueries are rows, keys are columns; each row sums to 1 and every heatmap uses the same 0–1 "
               "colour scale. The orange frame marks the step chosen under *Decoding steps* (counted from 1)."
               "\n\n**Show as**: *heatmap*; *lines* (queries left, keys right, a line per weight with that weight as "
               "its opacity, the heads of the mean in their own colours, a click on the legend hides a head; point "
               "at or tap a piece to keep only its lines); *softmax walk* (one query of one head through equation 1 "
               "with this translation's numbers: q, each k, q·k, ÷√d_k, the mask, the softmax, and the weighted sum "
               "of the values, the head's output before W_o; the query is the decoding step, or the *walk query* "
               "piece for encoder self-attention)."
               "\n\n**Hide special tokens** takes `<s>`, `</s>` and `<pad>` out of the keys and the rows and "
               "renormalises each row over the keys left, so that heads which park attention on `</s>` show what "
               "else they read.")


def kind_help(kind: str) -> str:
    """The help of the kind called `kind` (cross-attention's for any other value), then what every kind shares."""
    shown = next((k for k in PAGE_KINDS if k.name == kind), CROSS)
    return f"**{name(shown.name)}.** {HELP[shown]}{COMMON_HELP}"


def pick(weights: np.ndarray, layer: int, head: str) -> tuple[np.ndarray, str]:
    """(L, h, ...) -> one layer's head (or the mean of its heads), and a caption; layer and head counted from 1."""
    L, H = weights.shape[:2]
    li = min(max(layer, 1), L) - 1
    if head == MEAN_HEAD:
        return weights[li].mean(0), f"layer {li + 1}, mean of {H} heads"
    h = min(max(int(head), 1), H) - 1
    return weights[li, h], f"layer {li + 1}, head {h + 1}"


def word_labels(pieces: list[str], groups: list[list[int]]) -> list[str]:
    """Each group of pieces as its word (transformer.pieces, the one detokenisation)."""
    return [word_label([pieces[i] for i in g]) for g in groups]


def merge_labels(tokens: list, groups: list[list[int]]) -> list:
    """Word labels of `groups`: strings, or (read, produced) pairs for decoder positions, whose word is the one they
    produce and which read the word before it ("I ▸ didn't"): the pieces read at a word's later positions are its
    own first pieces, and joined to the word before they made labels such as "I didn' ▸ didn't"."""
    if tokens and isinstance(tokens[0], tuple):
        reads, prods = [t[0] for t in tokens], [t[1] for t in tokens]
        words = word_labels(prods, groups)
        before = [word_labels(reads, [g[:1]])[0] if k == 0 else words[k - 1] for k, g in enumerate(groups)]
        return list(zip(before, words))
    return word_labels(tokens, groups)


def _shown(a: Arrays, weights: np.ndarray, merge: bool, plain: bool = False):
    """Weights, labels and hidden cells as shown: per piece (▁ hidden when plain), or per word when merging."""
    if not merge:
        if plain:
            return weights, viz.plain_labels(a.queries), viz.plain_labels(a.keys), a.hidden
        return weights, a.queries, a.keys, a.hidden
    w, hidden = viz.merge_attention(weights, a.query_groups, a.key_groups, a.hidden)
    return w, merge_labels(a.queries, a.query_groups), merge_labels(a.keys, a.key_groups), hidden


@dataclass(frozen=True)
class Shown:
    """One layer's head (or the mean of its heads) of one kind, as the large view's heatmap shows it."""

    weights: np.ndarray  # (queries, keys): per piece, or per word when merging
    queries: list  # labels: pieces, words, or (read, produced) pairs of them
    keys: list
    hidden: np.ndarray | None  # (queries, keys): cells a mask hides
    rows: list[int]  # the trace's row of each piece row (hiding special tokens drops some)
    caption: str  # "layer 3, mean of 4 heads"


def matrix(trace: Trace, view: View) -> Shown:
    """The weights, labels and hidden cells of the view's kind, layer and head, with its words, ▁ and special
    tokens applied."""
    a = arrays(trace, view.kind, view.hide)
    weights, caption = pick(a.weights, view.layer, view.head)
    return Shown(*_shown(a, weights, view.merge, view.plain), a.rows, caption)


def view_title(view: View, caption: str) -> str:
    """What a view of one layer's head shows, as the animation titles it and the viewer's figures do:
    "Cross-attention · layer 3, mean of 4 heads · words"."""
    return f"{name(view.kind)} · {caption}" + (" · words" if view.merge else "") + (HIDE_TITLE if view.hide else "")


@dataclass(frozen=True)
class Walk:
    """One query of one head, what eq. 1 starts from: its q, each key's k and v, and the keys the mask lets it see
    (Tk keys, d_k dimensions). The viewer computes and draws every stage (anatomy/viewer/figures.js `walkFigure`)."""

    kind: str
    layer: int  # from 1
    head: int  # from 1
    row: int  # the query's row in the trace's attention of this kind (from 0)
    query: object  # its label: a piece or (read, produced)
    keys: list[str]
    q: np.ndarray  # (d_k,)
    k: np.ndarray  # (Tk, d_k)
    v: np.ndarray  # (Tk, d_k)
    visible: np.ndarray  # (Tk,) bool

    def to_json(self) -> dict:
        """As the page's viewer reads it (figures.js `Vectors`)."""
        return {"kind": self.kind, "layer": self.layer, "head": self.head, "row": self.row,
                "query": list(self.query) if isinstance(self.query, tuple) else self.query, "keys": self.keys,
                "q": self.q.tolist(), "k": self.k.tolist(), "v": self.v.tolist(), "visible": self.visible.tolist()}


def walk_row(trace: Trace, view: View) -> int:
    """The trace row the softmax walk follows: the decoding step, or the walk query for the encoder (from 0)."""
    if stepped(by_name(view.kind)):
        n = steps(trace)
        return min(view.step or n, n) - 1
    return min(view.query, len(trace.source_tokens)) - 1


def walk(trace: Trace, view: View, vectors: HeadVectors) -> Walk:
    """The walk of the view's query row through the head's q, k and v (the mean of heads has no single q: head 1).
    `vectors` may be of a longer trace that this one begins (a slow-motion frame): decoder attention is causal, so
    its first rows and keys are this trace's own."""
    H = vectors.q.shape[0]
    head = 1 if view.head == MEAN_HEAD else min(int(view.head), H)
    row = walk_row(trace, view)
    maps = trace.attention(view.kind)
    n = len(maps.keys)
    return Walk(view.kind, vectors.layer, head, row, maps.queries[row], list(maps.keys), vectors.q[head - 1, row],
                vectors.k[head - 1, :n], vectors.v[head - 1, :n], vectors.visible[row, :n])


@dataclass(frozen=True)
class StepRow:
    """One decoding step's attention row of one decoder kind, as its step panel shows it."""

    weights: np.ndarray  # (keys,): per piece, or per word when merging
    keys: list[str]  # the source, or the pieces read up to this step; special ones left out when hidden
    query: tuple[str, str]  # (read, produced)
    caption: str  # "layer 3, mean of 4 heads"


def step_row(trace: Trace, view: View, kind: AttentionKind, t: int) -> StepRow:
    """Row t (from 0) of a kind whose queries are decoding steps (cross-attention, decoder self-attention) over the
    keys it may see, with the view's layer, head, words, ▁ and special tokens."""
    if not stepped(kind):
        raise ValueError(f"{kind.label} has no row per decoding step")
    maps = trace.attention(kind.name)
    keys = list(maps.keys[:t + 1] if kind.causal else maps.keys)
    row, caption = pick(maps.weights[:, :, t, :len(keys)], view.layer, view.head)
    if view.hide:
        row, keys = without_special(row, keys)
    if view.merge:
        groups = word_groups(keys)
        row = np.array([row[g].sum() for g in groups], dtype=np.float32)
        keys = word_labels(keys, groups)
    elif view.plain:
        keys = viz.plain_labels(keys)
    query = (trace.target_tokens[t], trace.output_tokens[t])
    return StepRow(row, keys, viz.plain_labels([query])[0] if view.plain else query, caption)


def export_name(key: str, view: View, figure: str = "") -> str:
    """A figure's download name without extension: direction, step for the step panels, kind, layer, head
    (`de-en_cross-attention_layer3_head2`), how the large view draws it when not as a heatmap (`lines`,
    `walk-step4`), `no-special` when special tokens are hidden; `figure` names one that is not the large view
    ("step-topk", "grid", "trained", "untrained")."""
    shown = {"step-cross": CROSS, "step-self": DECODER}.get(figure) or by_name(view.kind)
    kind = shown.label.replace(" ", "-")
    head = "mean-of-heads" if view.head == MEAN_HEAD else f"head{view.head}"
    step = f"step{view.step}_" if figure.startswith("step") else ""
    special = ["no-special"] if view.hide and figure != "step-topk" else []
    if figure == "step-topk":
        return f"{key}_{step}next-piece-probabilities"
    if figure == "grid":
        return "_".join([f"{key}_{kind}_all-heads"] + (["words"] if view.merge else []) + special)
    display = []
    if not figure and view.display == "lines":
        display = ["lines"]
    elif not figure and view.display == "walk":
        head = "head1" if view.head == MEAN_HEAD else head
        where = f"step{view.step}" if stepped(by_name(view.kind)) else f"query{view.query}"
        return f"{key}_{kind}_layer{view.layer}_{head}_walk-{where}"
    parts = [f"{key}_{step}{kind}", f"layer{view.layer}", head] + (["words"] if view.merge else []) + display + (
        [figure] if figure in ("trained", "untrained") else []) + special
    return "_".join(parts)
