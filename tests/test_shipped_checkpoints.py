"""The checkpoints that ship in checkpoints/ load and translate real sentences of every corpus they learnt from,
and the app offers the general ones first."""
from __future__ import annotations

from pathlib import Path

import pytest

from anatomy.registry import ModelRegistry
from transformer import Translator

pytestmark = pytest.mark.slow  # real checkpoints or subprocesses

CHECKPOINTS = Path(__file__).resolve().parents[1] / "checkpoints"
# Val sentences (Tatoeba, Multi30k, newstest for the general models; Multi30k for the others), and words (any one
# of each tuple) their translation must contain.
CASES = {
    "general-de-en": [
        ("Warum wollt ihr in Australien arbeiten?", [("why",), ("australia",), ("work",)]),
        ("Sie interessiert sich sehr für Schach.", [("interest",), ("chess",)]),
        ("Zwei Frauen stehen vor einer Schulklasse und sprechen über ein Buch.", [("two",), ("women",), ("book",)]),
        ("Dies ist heute nicht der Fall.", [("case",), ("today",)]),
        ("Eine Mannschaft baut sich mit der Zeit auf.", [("team",), ("time",)]),
    ],
    "general-en-de": [
        ("Did you find your parents?", [("eltern",), ("gefunden",)]),
        ("I'm studying several languages.", [("mehrere",), ("sprachen",)]),
        ("A man sitting on the ground, playing guitar.", [("mann",), ("boden",), ("gitarre",)]),
        ("Today, this isn't the case.", [("heute",), ("fall",)]),
        ("We'll try to go as far as possible.", [("versuchen",), ("weit",), ("möglich",)]),
    ],
    "multi30k-de-en": [
        ("Ein brauner Hund rennt dem schwarzen Hund hinterher.", [("brown",), ("dog",), ("black",)]),
        ("Drei Männer gehen auf einer Straße in den Bergen.", [("three",), ("men",), ("mountain",)]),
        ("Eine Frau sitzt an einer dunklen Bar.", [("woman",), ("bar",)]),
    ],
    "multi30k-en-de": [
        ("A brown dog is running after the black dog.", [("braun",), ("hund",), ("schwarz",)]),
        ("Three men are walking on a road in the mountains.", [("drei",), ("männer",), ("berg",)]),
        ("A woman sits at a dark bar.", [("frau",), ("bar",)]),
    ],
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_shipped_checkpoint_translates_key_words(name):
    folder = CHECKPOINTS / name
    assert (folder / "model.safetensors").is_file(), f"{folder} is not shipped"
    translator = Translator.from_checkpoint(folder, device="cpu")
    assert (translator.checkpoint.source_lang, translator.checkpoint.target_lang) == tuple(name.split("-")[1:])
    assert (folder / "README.md").is_file() and (folder / "metrics.jsonl").is_file()
    assert sum(f.stat().st_size for f in folder.iterdir()) <= 45 * 1024 * 1024
    for beam in (1, 5):
        outputs = translator.translate_batch([source for source, _ in CASES[name]], beam_size=beam)
        for (source, words), output in zip(CASES[name], outputs):
            for options in words:
                assert any(w in output.lower() for w in options), (source, output, options)


def test_the_app_opens_with_the_general_models_and_keeps_the_caption_ones():
    registry = ModelRegistry.discover([str(p) for p in sorted(CHECKPOINTS.iterdir()) if p.is_dir()])
    assert registry.choices() == [
        ("German → English · everyday", "de-en"), ("English → German · everyday", "en-de"),
        ("German → English · image captions", "multi30k-de-en"),
        ("English → German · image captions", "multi30k-en-de")]
    assert registry.get(None).source.endswith("general-de-en")
    # A visitor's first sentence, decoded as the page does by default (the model card's beam and length penalty).
    entry = registry.get("de-en")
    own = entry.decoding
    text = entry.cpu.translate("Wie geht es dir?", beam_size=own.beam_size, length_penalty=own.length_penalty).text
    assert "how are you" in text.lower(), text
