"""Memory soak of the served app on loopback: the server's RSS over many sequential requests.

Starts `python app.py` on 127.0.0.1 (the checkpoints under checkpoints/ unless --checkpoints says otherwise) and
sends --requests requests one after another, as a stream of visitors would: each visitor asks --per-visitor
/translate API requests in a session of its own and leaves (gradio_client's heartbeat for its session closes);
every --page-every-th visitor also translates once through the page's own Translate event, whose run the session
keeps in server memory (gr.State). Every answer must equal the first answer for its sentence. The server's RSS
(VmRSS of /proc/PID/status) is read every --sample-every requests; after --warmup requests, its growth is the
least-squares slope of RSS over requests, per 1,000. Prints the readings, then one line of `key=value` figures:
requests, page_translations, mismatches, seconds, rss_after_warmup_mb, rss_end_mb, rss_growth_mb_per_1000.

    python benchmarks/soak.py                                   # 5,000 requests, 1,000 of warm-up
    python benchmarks/soak.py --requests 600 --warmup 200 --sample-every 50
"""
from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from gradio_client import Client

if not __package__:  # run as a file (python benchmarks/soak.py): put the repo root on sys.path
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.common import ROOT, PageSession, start_app  # noqa: E402
from benchmarks.load import SENTENCES, same  # noqa: E402


def rss_mb(pid: int) -> float:
    """Resident memory of process `pid`, in MB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(f"no VmRSS for process {pid}")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--checkpoints", type=Path, default=ROOT / "checkpoints",
                   help="folder of checkpoint folders to serve (ANATOMY_CHECKPOINT_DIR)")
    p.add_argument("--directions", default="de-en,en-de", help="comma-separated directions to ask for")
    p.add_argument("--requests", type=int, default=5000, help="/translate requests in all")
    p.add_argument("--warmup", type=int, default=1000, help="requests before the growth is measured")
    p.add_argument("--per-visitor", type=int, default=10, help="requests a visitor asks before leaving")
    p.add_argument("--page-every", type=int, default=5,
                   help="every N-th visitor also translates through the page's event (0: none)")
    p.add_argument("--sample-every", type=int, default=100, help="requests between two RSS readings")
    p.add_argument("--time-limit", type=float, default=1800.0, help="seconds; no request starts after it")
    args = p.parse_args()
    if not 0 <= args.warmup < args.requests:
        p.error("--warmup must be below --requests")
    jobs = [(sentence, direction) for direction in args.directions.split(",")
            for sentence in SENTENCES[direction.split("-")[0]]]

    with tempfile.NamedTemporaryFile("w", prefix="anatomy-soak-", suffix=".log", delete=False) as log:
        proc, url = start_app(args.checkpoints, log)
        try:
            client = Client(url, verbose=False, download_files=False)
            reference, samples, mismatches, pages = {}, [], 0, 0
            start = time.perf_counter()
            deadline = time.monotonic() + args.time_limit
            done = 0
            while done < args.requests and time.monotonic() < deadline:
                if done % args.per_visitor == 0:
                    client.reset_session()  # a new visitor; the last one's heartbeat closes
                    visitor = done // args.per_visitor
                    if args.page_every and visitor % args.page_every == 0:
                        text, direction = jobs[visitor % len(jobs)]
                        page = PageSession(url, client.session_hash)  # the page's event, in this visitor's session
                        event = page.on("translate")
                        page.call(event, page.values(event, {"source-text": text, "direction": direction}))
                        page.close()
                        pages += 1
                job = jobs[done % len(jobs)]
                answer = client.predict(text=job[0], direction=job[1], api_name="/translate")
                mismatches += not same(answer, reference.setdefault(job, answer))
                done += 1
                if done % args.sample_every == 0:
                    samples.append((done, rss_mb(proc.pid)))
            seconds = time.perf_counter() - start
            client.close()
        finally:
            proc.terminate()
            proc.wait(timeout=30)

    measured = [(n, mb) for n, mb in samples if n >= args.warmup]
    if len(measured) < 2:
        sys.exit(f"soak.py: only {len(measured)} RSS readings after the warm-up ({done} requests done): "
                 "raise --requests or --time-limit, or lower --sample-every")
    slope = np.polyfit(*np.array(measured).T, 1)[0]
    print("RSS (MB) after N requests: " + " ".join(f"{n}:{mb:.0f}" for n, mb in samples))
    print(f"requests={done} page_translations={pages} mismatches={mismatches} seconds={seconds:.0f} "
          f"rss_after_warmup_mb={measured[0][1]:.1f} rss_end_mb={samples[-1][1]:.1f} "
          f"rss_growth_mb_per_1000={1000 * slope:.1f}")


if __name__ == "__main__":
    main()
