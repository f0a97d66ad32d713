"""The checkpoints that ship in checkpoints/ load and translate real captions."""
from __future__ import annotations

from pathlib import Path

import pytest

from transformer import Translator

pytestmark = pytest.mark.slow  # real checkpoints or subprocesses

CHECKPOINTS = Path(__file__).resolve().parents[1] / "checkpoints"
# Multi30k val sentences, and words (any one of each tuple) their translation must contain.
CASES = {
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
    assert (folder / "model.safetensors").stat().st_size < 20 * 1024 * 1024
    for beam in (1, 5):
        outputs = translator.translate_batch([source for source, _ in CASES[name]], beam_size=beam)
        for (source, words), output in zip(CASES[name], outputs):
            for options in words:
                assert any(w in output.lower() for w in options), (source, output, options)
