"""The view part of a link read in the browser (anatomy/viewer/link.js, by Node) as the server reads it
(anatomy/inputs.py parse_link, then the translation's steps and source pieces): the same view and the same values
named, on a model whose encoder is deeper than its decoder."""
from __future__ import annotations

import json
import re
import subprocess

import pytest

import app
from anatomy.payload import trace_payload
from anatomy.run import StopSignal
from tests.app_fixtures import SENTENCE, configs, make_checkpoint
from tests.viewer import NODE, ROOT, needs_node
from ui.values import Inputs

QUERIES = [
    {},
    {"view": "encoder", "layer": "3", "head": "2", "merge": "1", "step": "2", "hide": "1", "display": "lines",
     "query": "3", "presenter": "1", "tour": "4"},
    {"view": "decoder", "layer": "7", "head": "0", "step": "2.5", "query": "1e9", "tour": "-inf"},
    {"view": "<script>", "layer": "abc", "merge": "maybe", "display": "3d", "step": "x", "query": "y"},
    {"view": "api", "layer": " 1 ", "head": "mean", "hide": "no", "presenter": "off", "step": "1e12", "query": "0"},
    {"view": "cross", "layer": "inf", "head": "1.5", "tour": "99", "display": "walk", "query": "2"},
]
VIEW_PARAMS = ("view", "layer", "head", "merge", "step", "hide", "display", "query", "presenter", "tour")


def named(notices) -> set[str]:
    """The "name=value" of every view parameter that the notices name as changed or not understood."""
    return {m.group(1) for n in notices for m in re.finditer(r"\b([a-z]+=[^ ,(]*)(?: \(allowed| was not used)", n)
            if m.group(1).split("=")[0] in VIEW_PARAMS}


@needs_node
@pytest.mark.slow
def test_the_browser_reads_a_link_s_view_as_the_server_does(tmp_path):
    folder = make_checkpoint(tmp_path / "tiny-de-en", n_encoder_layers=3, n_decoder_layers=2, n_heads=2)
    h = app.create_app([str(folder)]).anatomy
    from anatomy.inputs import parse_link

    links = [parse_link({"text": SENTENCE, "max": "4", **q}, configs(h)) for q in QUERIES]
    run = h.translate_link(Inputs(link=links[0], signal=StopSignal()))[h.page.run]
    trace = run.trace
    steps, sources = len(trace.output_tokens), len(trace.source_tokens)
    path = tmp_path / "link.json"
    path.write_text(json.dumps({"payload": trace_payload(trace, h.registry.get("de-en"), SENTENCE),
                                "queries": QUERIES}), encoding="utf-8")
    done = subprocess.run([NODE, str(ROOT / "tests" / "js" / "link.mjs"), str(path)], capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    for query, link, read in zip(QUERIES, links, map(json.loads, done.stdout.splitlines()), strict=True):
        v, js = link.view, read["view"]
        server = {"kind": v.kind, "layer": v.layer, "head": v.head, "merge": v.merge,
                  "step": None if v.step is None else min(v.step, steps), "hide": v.hide, "display": v.display,
                  "query": min(v.query, sources)}
        assert js == server, query
        assert (read["presenter"], read["tour"]) == (link.presenter, link.tour), query
        said = [*link.notices, *link.translated_notices(steps, sources)]
        assert named([*read["outside"], *read["unread"]]) == named(said), (query, said)
        # the same words for each, but the step and query the server could not read before translating
        js_items = {i for i in [*read["outside"], *read["unread"]] if not re.match(r"(step|query)=", i)}
        assert all(item in " ".join(said) for item in js_items), (js_items, said)
