"""What the served app answers a hostile client of its API (issue 49, items 5 to 7), over HTTP as such a client
calls it: a lone surrogate in any argument, a model skipped at start-up. No answer quotes an internal error or names
a path on the server, and every endpoint gives the same reason for a skipped model."""
from __future__ import annotations

import json
import shutil

import httpx
import pytest

from tests.app_fixtures import SENTENCE, make_checkpoint
from tests.conftest import Served, serve

pytestmark = pytest.mark.slow

# Each endpoint's arguments in order, every one good: /explain by input × gradient (quicker than the default), the
# rest with their defaults.
GOOD = {"translate": [SENTENCE, "de-en", 1, 3, None], "explain": [SENTENCE, "de-en", "grad"],
        "animate": [SENTENCE, "de-en", *[None] * 10], "export_html": [SENTENCE, "de-en"]}
LONE = "Ein \ud800 Haus"
SURROGATE = "Unpaired surrogates (halves of a character, which are not text) were removed from the text."
# What an answer would hold of an internal error: its type, a C++ binding's message, the API's catch-all notice.
INTERNAL = ("Error", "C++", "pybind", "Traceback", " failed")


@pytest.fixture(scope="module")
def skipping(tmp_path_factory) -> Served:
    """`python app.py` on a tiny de-en model and a copy of it whose weights are corrupt, which is skipped."""
    root = tmp_path_factory.mktemp("skipping")
    folder = make_checkpoint(root / "checkpoints" / "tiny-de-en", "de", "en", max_len=256)
    shutil.copytree(folder, root / "checkpoints" / "broken")
    (root / "checkpoints" / "broken" / "model.safetensors").write_bytes(b"not safetensors")
    with serve(root) as app:
        yield app


def call(served: Served, endpoint: str, values: list) -> tuple[str, object, str]:
    """One API call as any HTTP client can send it (a lone surrogate written as JSON's "\\ud800" escape, which
    gradio_client cannot send: httpx encodes its JSON as UTF-8): the event that ended it (complete or error), its
    data, and the whole answer as sent."""
    sent = httpx.post(f"{served.url}gradio_api/call/{endpoint}", content=json.dumps({"data": values}),
                      headers={"content-type": "application/json"}, timeout=60)
    assert sent.status_code == 200, sent.text
    answer = httpx.get(f"{served.url}gradio_api/call/{endpoint}/{sent.json()['event_id']}", timeout=120).text
    lines = answer.splitlines()
    ended = max(i for i, line in enumerate(lines) if line in ("event: complete", "event: error"))
    return lines[ended].removeprefix("event: "), json.loads(lines[ended + 1].removeprefix("data: ")), answer


@pytest.mark.parametrize("endpoint", GOOD)
def test_a_lone_surrogate_in_the_text_is_removed_and_the_text_translated(skipping, endpoint):
    event, data, answer = call(skipping, endpoint, [LONE, *GOOD[endpoint][1:]])
    assert event == "complete", answer
    result, notice = data[0] if endpoint in ("animate", "export_html") else data[2], data[1]
    assert notice.startswith(SURROGATE) and result, answer
    assert not any(word in notice for word in INTERNAL), notice


@pytest.mark.parametrize("endpoint, at", [(endpoint, at) for endpoint, good in GOOD.items()
                                          for at in range(1, len(good))])
def test_a_lone_surrogate_in_any_other_argument_gets_a_notice_or_an_answer(skipping, endpoint, at):
    values = list(GOOD[endpoint])
    values[at] = LONE
    event, data, answer = call(skipping, endpoint, values)
    assert event == "complete", answer
    assert not any(word in data[1] for word in INTERNAL), data[1]


@pytest.mark.parametrize("endpoint", GOOD)
def test_every_endpoint_names_a_skipped_model_by_its_folder_and_says_why(skipping, endpoint):
    event, data, answer = call(skipping, endpoint, [SENTENCE, "broken", *GOOD[endpoint][2:]])
    assert event == "complete" and data[1].startswith("The model 'broken' was skipped, it could not be loaded: "
                                                      "broken/model.safetensors cannot be read"), answer
    assert str(skipping.tmp.parent) not in answer


def test_the_trace_and_the_page_name_the_model_by_its_folder_not_its_path(skipping):
    root = str(skipping.tmp.parent)
    event, data, answer = call(skipping, "translate", GOOD["translate"])
    assert event == "complete" and data[2]["checkpoint"] == "tiny-de-en"
    assert root not in answer
    page = httpx.get(f"{skipping.url}config", timeout=30).text
    # the notice as the page shows it: HTML made of its Markdown
    assert "Skipped <code>broken</code>: broken/model.safetensors cannot be read" in page and root not in page
