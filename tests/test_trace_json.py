"""A trace saved by *Download trace (JSON)* before its pieces were typed still loads, and saves back the same.

tests/data/trace-v1-*.json were written by `Trace.to_json` at commit 26f096d, when settings were a dict and each
top-k entry a dict {"token", "id", "prob"}: a random 1-layer model (tests/app_fixtures.make_checkpoint, d_model 16)
through anatomy.engine, as the page makes them: beam candidate 2 of a beam-2 search, a greedy run stopped after
its first piece, and a teacher-forced run.
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from transformer import Candidate, DecodingSettings, TopK, Trace

DATA = Path(__file__).parent / "data"
SETTINGS = {
    "beam-candidate": DecodingSettings("beam candidate", 3, "cpu", beam_size=2, max_new_tokens=3,
                                       length_penalty=1.0, candidate=2, direction="de-en"),
    "greedy-stopped": DecodingSettings("greedy", 3, "cpu", beam_size=1, max_new_tokens=3, length_penalty=1.0,
                                       stopped=True, direction="de-en"),
    "forced": DecodingSettings("forced", 2, "cpu", direction="de-en"),
}


@pytest.mark.parametrize("name", SETTINGS)
def test_a_trace_saved_before_typed_pieces_loads_into_the_same_values(name):
    text = (DATA / f"trace-v1-{name}.json").read_text()
    saved = json.loads(text)  # what the old Trace.from_json kept of top_k and settings: these dicts
    trace = Trace.from_json(text)
    assert trace.settings == SETTINGS[name]
    assert {key: getattr(trace.settings, key) for key in saved["settings"]} == saved["settings"]
    assert len(trace.top_k) == len(trace.output_tokens) and all(
        type(c) is TopK for row in trace.top_k for c in row)
    assert [[(c.token, c.id, c.prob) for c in row] for row in trace.top_k] == \
        [[(c["token"], c["id"], c["prob"]) for c in row] for row in saved["top_k"]]
    assert trace.candidates == [Candidate(**c) for c in saved["candidates"]]
    assert len(trace.candidates) == (2 if name == "beam-candidate" else 0)
    np.testing.assert_array_equal(trace.cross_attn, np.asarray(saved["cross_attn"], dtype=np.float32))
    # Saved again by today's code: the same JSON but for the weights' digits (each float32 now in its shortest exact
    # form) and the per-piece log p it did not record, so files from either version read the same.
    again = json.loads(trace.to_json())
    assert again.pop("log_probs") == [] and trace.log_prob is None
    weights = ("encoder_self_attn", "decoder_self_attn", "cross_attn")
    assert {k: v for k, v in again.items() if k not in weights} == {k: v for k, v in saved.items() if k not in weights}
    assert Trace.from_json(trace.to_json()).to_dict() == trace.to_dict()
    assert Trace.from_json(trace.to_json()).to_json() == trace.to_json()


def test_settings_write_only_what_is_set():
    assert DecodingSettings("forced", 5, "cpu").to_dict() == {"mode": "forced", "top_k": 5, "device": "cpu"}
    assert DecodingSettings("greedy", 5, "cuda", 1, 40, 1.0, stopped=True).to_dict() == {
        "mode": "greedy", "top_k": 5, "device": "cuda", "beam_size": 1, "max_new_tokens": 40, "length_penalty": 1.0,
        "stopped": True}
