"""A hostile visitor of a public Space, over HTTP (issue 49: the disk, another visitor's trace, what the server
tells anyone): what the served app keeps on disk for anyone, whether one visitor can fetch another's trace, and what
it shows anyone of its endpoints and traffic."""
from __future__ import annotations

import hashlib
import json
import secrets
from pathlib import Path

import httpx
import pytest

from benchmarks.common import PageSession
from tests.app_fixtures import SENTENCE
from tests.conftest import serve

API = {"/translate", "/explain", "/animate", "/export_html"}
CAP_MB = 4  # two offline pages (~1.6 MB each, Plotly.js inside) fit, a third does not


@pytest.fixture(scope="module")
def capped(tmp_path_factory):
    """The app with its files capped at CAP_MB and kept 10 minutes: during a test only the cap deletes them."""
    with serve(tmp_path_factory.mktemp("capped"), ANATOMY_FILES_MB=str(CAP_MB),
               ANATOMY_TRACE_RETENTION="600") as app:
        yield app


def fetched(app, path: str) -> httpx.Response:
    return httpx.get(f"{app.url}gradio_api/file={path}", timeout=30)


def holding(folder: Path, data: bytes) -> list[Path]:
    return [p for p in folder.rglob("*") if p.is_file() and p.stat().st_size == len(data) and p.read_bytes() == data]


# ---- the disk --------------------------------------------------------------------------------------------------

@pytest.mark.slow
def test_every_upload_is_refused_and_nothing_of_it_kept(served):
    data = secrets.token_bytes(1_000_000)
    upload = httpx.post(served.url + "gradio_api/upload", files={"files": ("visitor.bin", data)}, timeout=30)
    recording = httpx.post(served.url + "gradio_api/process_recording", files={"video": ("visitor.mp4", data)},
                           timeout=30)
    assert (upload.status_code, recording.status_code) == (403, 403), (upload.text, recording.text)
    assert holding(served.tmp, data) == []


@pytest.mark.slow
def test_the_files_written_for_visitors_are_capped_the_oldest_removed_first(capped):
    """Four offline pages from /export_html (one client, as fast as it is answered) on an app whose files may
    hold CAP_MB: the disk holds at most that, the newest pages are there and the first is gone."""
    from gradio_client import Client

    client = Client(capped.url, verbose=False, download_files=False)
    paths = [client.predict(text=f"{SENTENCE} {n}", direction="de-en", api_name="/export_html")[0]["path"]
             for n in range(4)]
    files = [p for p in capped.tmp.rglob("*") if p.is_file() and "gradio" in p.parts]
    assert 0 < sum(p.stat().st_size for p in files) <= CAP_MB * 1_000_000, files
    assert [fetched(capped, path).is_success for path in (paths[0], paths[-1])] == [False, True]


# ---- another visitor's trace -----------------------------------------------------------------------------------

@pytest.mark.slow
def test_a_trace_is_written_when_asked_for_under_a_name_no_one_can_guess(capped):
    """Two visitors translate the same sentence on the page: no trace is written until each clicks Download trace;
    then each gets a file of its own, with the same trace, under a name nobody computes from the sentence."""
    visitors = [PageSession(capped.url) for _ in range(2)]
    for visitor in visitors:
        event = visitor.on("translate")
        visitor.call(event, visitor.values(event, {"source-text": SENTENCE}))
    assert [p.name for p in capped.tmp.rglob("trace-*")] == []
    paths = [visitor.call(visitor.on("download"))[0]["value"]["path"] for visitor in visitors]
    assert paths[0] != paths[1]
    texts = [fetched(capped, path) for path in paths]
    assert [t.status_code for t in texts] == [200, 200] and texts[0].content == texts[1].content
    assert json.loads(texts[0].content)["text"]
    guessed = Path(paths[0]).with_name(f"trace-{hashlib.sha1(texts[0].content).hexdigest()[:16]}.json")
    assert not fetched(capped, str(guessed)).is_success
    for visitor in visitors:
        visitor.close()


# ---- what the server tells anyone ------------------------------------------------------------------------------

@pytest.mark.slow
def test_monitoring_is_off_and_only_the_api_is_listed(served):
    from gradio_client import Client

    assert [httpx.get(served.url + path, timeout=30).status_code
            for path in ("monitoring", "monitoring/summary", "monitoring/0")] == [403, 403, 403]
    assert "monitoring" not in "".join(served.output).lower()  # its key is never printed
    info = httpx.get(served.url + "gradio_api/info", params={"all_endpoints": "true"}, timeout=30).json()
    assert (set(info["named_endpoints"]), info["unnamed_endpoints"]) == (API, {})
    config = httpx.get(served.url + "config", timeout=30).json()
    assert {f"/{d['api_name']}" for d in config["dependencies"] if d["api_visibility"] != "private"} == API
    client = Client(served.url, verbose=False, download_files=False)
    assert set(client.view_api(print_info=False, return_format="dict")["named_endpoints"]) == API


def test_the_root_is_the_app_s_own_page_and_gradio_keeps_its_api_view(served):
    """GET / is the app's page (ui/document.py): no Gradio page script; a Space's "Use via API" (?view=api) still
    opens Gradio's page, which documents the API."""
    own = httpx.get(served.url, timeout=30)
    assert own.status_code == 200 and 'id="anatomy-events"' in own.text and "gradio_config" not in own.text
    assert '<a href="?view=api">Use via API</a>' in own.text
    linked = httpx.get(served.url + "?text=Hallo&view=heatmap", timeout=30)
    assert 'id="anatomy-events"' in linked.text
    api = httpx.get(served.url + "?view=api", timeout=30)
    assert api.status_code == 200 and 'id="anatomy-events"' not in api.text and "gradio_config" in api.text


def test_monitoring_is_on_when_the_setting_asks(monkeypatch):
    import ui

    assert ui.launch_options()["enable_monitoring"] is False
    monkeypatch.setenv("ANATOMY_MONITORING", "1")
    assert ui.launch_options()["enable_monitoring"] is True
