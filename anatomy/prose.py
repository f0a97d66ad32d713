"""The page's prose: the introduction and the guide to reading the figures (markdown)."""

INTRO = """Type a sentence and watch a from-scratch Transformer
([Vaswani et al., 2017](https://arxiv.org/abs/1706.03762)), trained here on German–English text, translate it
piece by piece (each model's data is under *Training*). Then look inside: every attention head of the
encoder and the decoder, each decoding step's choices, and the positional encoding.
"""

HOW_TO_READ = """### How to read the figures
- **Pieces.** The model reads and writes SentencePiece *pieces*: `▁` starts a word, `</s>` ends the sentence and the
  decoder starts from `<s>`. *Merge pieces into words* sums the attention *to* a word's pieces and averages the
  attention *from* them, so rows still sum to 1.
- **Queries are rows, keys are columns.** Row *i* shows how query *i* spread its attention (the row sums to 1) over
  the keys. All heatmaps share one colour scale, 0 to 1.
- **Encoder self-attention**: every source piece looks at every source piece, in every layer.
- **Decoder masked self-attention**: decoder position *t* may look only at positions ≤ *t*; the grey cells are hidden
  by the mask (they are not zeros). This is what lets the decoder write left to right.
- **Cross-attention**: decoder position *t* looking at the encoder's output for each source piece. A decoder
  position is labelled `read ▸ produced`: it *reads* the previous output piece (`<s>` first) and *produces* the next
  one. In a trained model this is roughly an alignment between the two sentences.
- **Heads**: each layer has *h* heads attending independently (§3.2.2); *mean of heads* averages them. *All heads*
  shows every layer × head side by side; *Head statistics* measures what each one does (how focused it is, whether
  it looks at the previous piece or parks on `</s>`, how well cross-attention follows the word order), and a click
  on a row opens that head.
- **Trained vs untrained**: the same sentence through the same architecture before training (random weights): its
  heads spread their attention almost evenly. Everything the trained heads do was learned. The untrained twin
  always has every head on: *Switch heads off* changes the trained model only.
- **Switch heads off**: the sentence is translated again without those heads, and everything read from that
  translation (a beam candidate, the softmax walk, *Inspect a translation*) is computed with the same heads off.
  *Head importance* is the exception: it judges every head on the translation with every head on.
- **Architecture**: the paper's Figure 1 with the tensor shapes of your sentence, and where the parameters are.
- **Presenter mode** enlarges everything and hides the settings; *Link to this view* gives a link that reopens
  exactly what is on screen.
- **Decoding steps**: the slider picks step *t* (counted from 1): what had been produced up to then, where step *t*
  looked, and the probabilities of its candidates for the next piece.
- **Beam search** keeps the *beam size* best partial translations at each step; click a candidate to see its
  attention. Under *Inspect a translation*, the model is teacher-forced through any translation you type.
- **Positional encoding**: the Transformer has no recurrence; word order enters only through the sinusoids added to
  the embeddings (§3.5). Each pair of dimensions is a wave of its own wavelength (2π to 10000·2π); the dot product
  of two positions' encodings depends mostly on their distance.
"""
# The Predictions tab: what the logit lens shows, and what it cannot claim of a post-LN model.
LENS_HELP = ("**The logit lens**: what each decoder layer would predict if decoding stopped after it, its output "
             "read through the output projection (the last layer's is the model's own prediction). Early layers "
             "of a post-LN model like the paper's were never trained to be read this way: what they show is a "
             "hint, not the model's belief.")

# The Why this word tab: what its attributions show, from what baseline, and what they cannot claim.
METHOD_LABELS = {"ig": "Integrated gradients", "grad": "Input × gradient", "occlusion": "Occlusion (source words)"}
WHY_HELP = ("**Why this word?** Attention says where a head looked, not what the prediction depended on. Here each "
            "piece the model wrote is explained by what each source piece and each piece it had already written "
            "(the target prefix) added to its log-probability: **integrated gradients** (from a baseline of zero "
            "embeddings, positions kept: as many pieces saying nothing; its parts add up to the change from the "
            "baseline), **input × gradient** (the first-order part of that) or **occlusion** (the change when one "
            "source word is set to the baseline: source words only). Red raised the piece, blue lowered it. Pick "
            "the step with the step slider or ← / →; type a word (or leave it empty for the step's runner-up) and "
            "*Compare* to ask why this piece and not that one. Computed for every step when this tab opens, and "
            "after each new translation while it is open.")

# The attention views' weights: the softmax's own, or weighted by what each key moves, or rolled out (encoder).
# Short labels: the row holds them beside "Show as" at 1600 px; the figures' titles and docs/app.md say the rest.
WEIGHTS_CHOICES = [("α", "attention"), ("value-norm", "value-norm"), ("rollout", "rollout")]
