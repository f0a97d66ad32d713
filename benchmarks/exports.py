"""Exports under a crowd: the server's memory and another visitor's translation while visitors export at once.

Starts `python app.py` on 127.0.0.1 (the checkpoints under checkpoints/ unless --checkpoints says otherwise). Each of
--visitors visitors (a session of its own) translates a --chars-character text through the page's Translate event;
then one of them alone, and then all of them at once, ask the page's Export animation (--size, --seconds a frame,
--layout, --format) and Download page, as any client can, by HTTP. One more visitor asks /translate of a typical
sentence --translations times on the idle server, and as many times while the crowd's exports wait and draw. The
server's memory is read every 20 ms over its process tree (the processes that draw animations included): their
proportional set sizes summed (memory_mb), which for the server alone is its RSS less what it shares with others.

Prints one line of `key=value` figures: visitors, frames (of each animation), megapixels (each animation's frames ×
pixels), idle_rss_mb (the server process's RSS before the exports), idle_mb (the tree's memory then),
one_peak_over_idle_mb (one visitor exporting alone), peak_over_idle_mb (the crowd), after_over_idle_mb (once every
export is answered), translate_idle_s, translate_busy_s (means), translate_ratio,
exports_s (the crowd's first request to its last answer), refused (exports answered with an error, the budget's
included), unfinished (translations timed after the last export was answered: 0, or the crowd ended too soon to
measure against), seconds.

    python benchmarks/exports.py                                    # 16 visitors, 500 characters, 1920×1080
    python benchmarks/exports.py --visitors 4 --chars 200 --size 1280x720
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from gradio_client import Client

if not __package__:  # run as a file (python benchmarks/exports.py): put the repo root on sys.path
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.common import ROOT, PageSession, default_checkpoint, languages, sentence, start_app  # noqa: E402
from benchmarks.load import SENTENCES  # noqa: E402
from benchmarks.soak import rss_mb  # noqa: E402

ANIMATION_FILE, PAGE_FILE, PAGE_BUTTON = "animation-file", "page-file", "download-page"


def tree(pid: int) -> list[int]:
    """Process `pid` and every process under it."""
    found, todo = [], [pid]
    while todo:
        at = todo.pop()
        found.append(at)
        for task in Path(f"/proc/{at}/task").glob("*"):
            try:
                todo += [int(child) for child in (task / "children").read_text().split()]
            except OSError:  # ended meanwhile
                continue
    return found


def memory_mb(pid: int) -> float:
    """The memory of process `pid` and every process under it, in MB: the sum of their proportional set sizes
    (resident memory, each page shared by n of them counted 1/n in each): a worker forked from another shares most
    of its pages, which the sum of their RSS would count twice."""
    total = 0.0
    for at in tree(pid):
        try:
            rollup = Path(f"/proc/{at}/smaps_rollup").read_text()
        except OSError:  # ended meanwhile
            continue
        total += next(int(line.split()[1]) for line in rollup.splitlines() if line.startswith("Pss:")) / 1024
    return total


class Peak:
    """The most memory_mb(pid) read while the `with` block runs, every `every` seconds."""

    def __init__(self, pid: int, every: float = 0.02):
        self.pid, self.every, self.mb = pid, every, 0.0
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._read, daemon=True)

    def _read(self) -> None:
        while not self._done.is_set():
            self.mb = max(self.mb, memory_mb(self.pid))
            self._done.wait(self.every)

    def __enter__(self) -> Peak:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._done.set()
        self._thread.join()


def long_text(chars: int, lang: str) -> str:
    """A text of at most `chars` characters: the benchmark's sentences one after another, cut after a word."""
    text, sentences = "", SENTENCES.get(lang, SENTENCES["de"])
    while len(text) < chars:
        text += sentences[len(text) % len(sentences)] + " "
    return text[:chars].rsplit(" ", 1)[0] if len(text) > chars else text.strip()


class Visitor(PageSession):
    """A visitor's page: its events over HTTP as the page sends them (they are private: gradio_client refuses them),
    in the session of a gradio_client Client, whose heartbeat keeps it open while the crowd waits (the server forgets
    a session a minute after its page is gone)."""

    def __init__(self, url: str):
        self.client = Client(url, verbose=False, download_files=False)
        super().__init__(url, self.client.session_hash)

    def close(self) -> None:
        super().close()
        self.client.close()


def translated(url: str, text: str, direction: str) -> Visitor:
    """A visitor whose page shows the translation of `text`."""
    page = Visitor(url)
    page.call("translate_page", page.values("translate_page", {"source-text": text, "direction": direction}))
    return page


def page_event(page: PageSession, writes: str, clicked: str | None = None) -> dict:
    """The page's one button-click event that writes the component with elem_id `writes` (and is a click of the one
    with elem_id `clicked`, when given), whatever its name."""
    ids = {c: component["props"].get("elem_id") for c, component in page.components.items()}
    found = [d for d in page.config["dependencies"] if d.get("api_visibility") != "public"
             and any(ids.get(i) == writes for i in d["outputs"]) and d["targets"]
             and all(t[1] == "click" and (clicked is None or ids.get(t[0]) == clicked) for t in d["targets"])]
    assert len(found) == 1, f"{len(found)} page events write #{writes}"
    return found[0]


def event_values(page: PageSession, event: dict, view: dict) -> list:
    """What a page sends with `event`: `view` as the viewer's view (JSON), every other control as on a fresh page
    (None for gr.State: the server keeps it per session)."""
    values = []
    for cid in event["inputs"]:
        component = page.components[cid]
        values.append(None if component["type"] == "state" else json.dumps(view)
                      if component["props"].get("label") == "view" else component["props"].get("value"))
    return values


def ask(page: PageSession, event: dict, view: dict) -> list:
    """The event asked as the page asks it: its outputs (RuntimeError: the page's error)."""
    return page.call(event["api_name"], event_values(page, event, view))


def written(page: PageSession, event: dict, answer: list, writes: str) -> Path | None:
    """The file an answer of `event` sets in the component with elem_id `writes`, on this machine (the server's)."""
    outputs = [page.components[i]["props"].get("elem_id") for i in event["outputs"]]
    value = answer[outputs.index(writes)]
    value = value.get("value", value) if isinstance(value, dict) and "__type__" in value else value
    path = value.get("path") if isinstance(value, dict) else value
    return Path(path) if path else None


def exports(visitors: list[PageSession], animation: dict) -> tuple[list, int]:
    """Every visitor's animation, then page, the visitors at once; the answers (None: refused) and how many were
    refused. A visitor asks one after the other: its page's events share one stream of answers (Gradio sends a
    session's messages to one reader)."""
    def visitor(page: PageSession) -> list:
        made = []
        for writes, view, clicked in ((ANIMATION_FILE, {"ask": "animation", "animation": animation}, None),
                                      (PAGE_FILE, {}, PAGE_BUTTON)):
            event = page_event(page, writes, clicked)
            try:
                made.append((writes, written(page, event, ask(page, event, view), writes)))
            except RuntimeError:  # the page's error (the budget's refusal)
                made.append((writes, None))
        return made

    with ThreadPoolExecutor(max(1, len(visitors))) as pool:
        answers = [a for made in pool.map(visitor, visitors) for a in made]
    return answers, sum(path is None for _, path in answers)


def translation_s(client: Client, text: str, direction: str) -> float:
    start = time.perf_counter()
    client.predict(text=text, direction=direction, api_name="/translate")
    return time.perf_counter() - start


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--checkpoints", type=Path, default=ROOT / "checkpoints",
                   help="folder of checkpoint folders to serve (ANATOMY_CHECKPOINT_DIR)")
    p.add_argument("--direction", default="de-en")
    p.add_argument("--visitors", type=int, default=16, help="visitors exporting at once")
    p.add_argument("--chars", type=int, default=500, help="characters of the text each visitor translates")
    p.add_argument("--size", default="1920x1080", help="the animation's size: 1280x720 or 1920x1080")
    p.add_argument("--seconds", type=float, default=0.1, help="seconds a frame")
    p.add_argument("--layout", default="bar", help="bar or heatmap")
    p.add_argument("--format", default=".gif", help=".gif or .mp4")
    p.add_argument("--translations", type=int, default=10, help="the other visitor's translations, idle and busy")
    args = p.parse_args()
    source = languages(default_checkpoint())[0] if args.direction == "de-en" else args.direction.split("-")[0]
    text, typical = long_text(args.chars, source), sentence(source)
    animation = {"layout": args.layout, "size": args.size, "seconds": args.seconds, "suffix": args.format}
    began = time.perf_counter()
    with tempfile.NamedTemporaryFile("w", prefix="anatomy-exports-", suffix=".log", delete=False) as log:
        proc, url = start_app(args.checkpoints, log)
        try:
            other = Client(url, verbose=False, download_files=False)
            translation_s(other, typical, args.direction)  # warm
            with ThreadPoolExecutor(4) as pool:
                visitors = list(pool.map(lambda _: translated(url, text, args.direction), range(args.visitors)))
            trace = other.predict(text=text, direction=args.direction, api_name="/translate")[2]
            frames = len(trace["output_tokens"]) + 1 if trace else 0
            width, height = (int(n) for n in args.size.split("x"))
            idle_s = statistics.fmean(translation_s(other, typical, args.direction) for _ in range(args.translations))
            time.sleep(1)
            idle, idle_rss = memory_mb(proc.pid), rss_mb(proc.pid)
            with Peak(proc.pid) as one:
                exports(visitors[:1], animation)
            start = time.perf_counter()
            with Peak(proc.pid) as crowd:
                done = threading.Event()
                answered: list = []

                def run_crowd() -> None:
                    answered.append(exports(visitors, animation))
                    done.set()

                threading.Thread(target=run_crowd, daemon=True).start()
                time.sleep(2)  # the crowd's exports queued and the first drawing
                busy, unfinished = [], 0
                for _ in range(args.translations):
                    busy.append(translation_s(other, typical, args.direction))
                    unfinished += done.is_set()
                done.wait()
                exports_s = time.perf_counter() - start
            time.sleep(1)
            after = memory_mb(proc.pid)
            other.close()
            for page in visitors:
                page.close()
        finally:
            proc.terminate()
            proc.wait(timeout=30)
    _, refused = answered[0]
    busy_s = statistics.fmean(busy)
    print(f"visitors={args.visitors} frames={frames} megapixels={frames * width * height / 1e6:.0f} "
          f"idle_rss_mb={idle_rss:.0f} idle_mb={idle:.0f} one_peak_over_idle_mb={one.mb - idle:.0f} "
          f"peak_over_idle_mb={crowd.mb - idle:.0f} after_over_idle_mb={after - idle:.0f} "
          f"translate_idle_s={idle_s:.3f} translate_busy_s={busy_s:.3f} translate_ratio={busy_s / idle_s:.2f} "
          f"exports_s={exports_s:.0f} refused={refused} unfinished={unfinished} "
          f"seconds={time.perf_counter() - began:.0f}")


if __name__ == "__main__":
    main()
