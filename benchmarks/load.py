"""Load test of the served app on loopback: N visitors at once through the /translate API.

Starts `python app.py` on 127.0.0.1 (the checkpoints under checkpoints/ unless --checkpoints says
otherwise), asks each sentence once, alone, for the reference answers, then lets --clients
gradio_client clients (one per visitor) send --requests requests in all, each as soon as the visitor's last one
is answered, stopping early at --time-limit. A visitor told that the app is busy (gradio_client's QueueError
"Queue is full") asks again after a back-off, as a well-behaved script would (truncated exponential back-off, as
cloud APIs ask of their clients): --backoff (1 s), then twice as long after each refusal, at most 32 s, each with
jitter (a random half of it), so refused visitors do not come back all at once.
Every answer must equal the reference answer for its sentence: translation, notice, output pieces and
cross-attention. The visitors run only on CPU time the server leaves idle (Linux's SCHED_IDLE; --visitors-nice
to give them a plain nice value instead): a gradio_client request costs its sender as much CPU as it costs the
server or more (a TLS context per request, polling threads, the answer's JSON), and 200 visitor threads even at
nice 10 outweigh the server's few threads in the kernel's scheduler, so on a small machine a crowd measured its own
visitors. Real visitors spend their own machines' CPU.

Prints one `key=value` a line: clients, requests, served, refusals (refused tries, each asked again after its
back-off), unserved (requests still refused at the time limit), errors (failed otherwise), mismatches, seconds,
served_per_s (answers per second from the first answer to the last one before the last request was handed out:
the crowd's steady rate, while every visitor still has requests to ask, without the wait for the first answer or
the tail where the crowd thins out), p50_ms and p95_ms (served
requests, from the try that was let in: queueing included), p95_total_ms (from the first try: back-offs
included). --ratios runs one crowd after another against one server (64, 100 and 200 visitors by default), one
line of figures each, and ends with the served rate of each larger crowd over the first's:
`served_ratio_100=… served_ratio_200=…`.

    python benchmarks/load.py --clients 16
    python benchmarks/load.py --clients 32 --requests 320 --time-limit 300
    python benchmarks/load.py --ratios                    # 64, 100, 200 visitors
"""
from __future__ import annotations

import argparse
import math
import os
import random
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
from gradio_client import Client
from gradio_client.utils import QueueError

if not __package__:  # run as a file (python benchmarks/load.py): put the repo root on sys.path
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.common import ROOT, start_app  # noqa: E402

# Multi30k-style captions written for this benchmark, by source language.
SENTENCES = {
    "de": ["Zwei Hunde spielen im Schnee.", "Ein Mann fährt mit dem Fahrrad eine Straße entlang.",
           "Eine Frau in einem roten Kleid singt auf einer Bühne.", "Kinder spielen Fußball auf einer grünen Wiese.",
           "Ein kleines Mädchen lacht.", "Ein alter Mann sitzt auf einer Bank im Park.",
           "Drei Männer arbeiten auf einer Baustelle.", "Eine Gruppe von Menschen wartet an einer Bushaltestelle."],
    "en": ["Two dogs are playing in the snow.", "A man is riding a bicycle down the street.",
           "A woman in a red dress is singing on a stage.", "Children are playing soccer on a green field.",
           "A little girl is laughing.", "An old man is sitting on a bench in the park.",
           "Three men are working on a construction site.", "A group of people is waiting at a bus stop."],
}
MAX_BACKOFF_S = 32.0


def same(answer, reference) -> bool:
    """Equal translation, notice and output pieces; attention equal up to float noise."""
    (text, notice, trace), (text0, notice0, trace0) = answer, reference
    return ((text, notice) == (text0, notice0) and trace is not None and trace0 is not None
            and trace["output_tokens"] == trace0["output_tokens"]
            and np.allclose(trace["cross_attn"], trace0["cross_attn"], atol=1e-6))


def backoff(refusals: int, first: float, rng: random.Random) -> float:
    """Seconds to wait after a request's `refusals`-th refusal: doubling from `first` up to MAX_BACKOFF_S, its
    second half random."""
    delay = min(MAX_BACKOFF_S, first * 2 ** (refusals - 1))
    return delay / 2 + rng.uniform(0, delay / 2)


def lower_priority(nice: int | None) -> None:
    """This process and the threads it starts from now on: SCHED_IDLE, or `nice` if given (or if SCHED_IDLE is not
    there: not Linux)."""
    if nice is None and hasattr(os, "SCHED_IDLE"):
        os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))
    else:
        os.nice(10 if nice is None else nice)


def crowd(clients: list[Client], jobs: list, reference: dict, total: int, args: argparse.Namespace) -> dict:
    """`total` requests from these clients at once; the figures of one line (see the module's docstring)."""
    ask = dict(beam_size=args.beam, api_name="/translate")
    lock, counter = threading.Lock(), iter(range(total))
    served, refusals, unserved, errors = [], [0], [0], []
    start = time.perf_counter()
    deadline = time.monotonic() + args.time_limit
    handed_out = [math.inf]  # when the last request was handed out

    def visitor(n: int) -> None:
        client, rng = clients[n], random.Random(n)
        while time.monotonic() < deadline:
            with lock:
                i = next(counter, None)
                if i == total - 1:
                    handed_out[0] = time.perf_counter()
            if i is None:
                return
            job, first, refused = jobs[i % len(jobs)], time.perf_counter(), 0
            while True:
                tried = time.perf_counter()
                try:
                    answer = client.submit(text=job[0], direction=job[1], **ask).result(timeout=args.time_limit)
                except QueueError:
                    refused += 1
                    with lock:
                        refusals[0] += 1
                    wait = backoff(refused, args.backoff, rng)
                    if time.monotonic() + wait >= deadline:
                        with lock:
                            unserved[0] += 1
                        break
                    time.sleep(wait)
                    continue
                except Exception as err:  # failed or timed out: counted, not fatal
                    errors.append(err)
                    break
                served.append((job, first, tried, time.perf_counter(), answer))
                break

    with ThreadPoolExecutor(len(clients)) as pool:
        list(pool.map(visitor, range(len(clients))))
    seconds = time.perf_counter() - start
    if errors:
        print(f"{len(clients)} clients: {len(errors)} failed, e.g. {type(errors[0]).__name__}: {errors[0]}",
              file=sys.stderr)
    steady = sorted(done for *_, done, _ in served if done <= handed_out[0])
    rate = (len(steady) - 1) / (steady[-1] - steady[0]) if len(steady) > 2 else math.nan
    if served:
        p50, p95 = np.percentile([1000 * (done - tried) for _, _, tried, done, _ in served], [50, 95])
        p95_total = np.percentile([1000 * (done - first) for _, first, _, done, _ in served], 95)
    else:
        p50 = p95 = p95_total = np.nan
    return dict(clients=len(clients), requests=total, served=len(served), refusals=refusals[0],
                unserved=unserved[0], errors=len(errors),
                mismatches=sum(not same(answer, reference[job]) for job, *_, answer in served),
                seconds=f"{seconds:.2f}", served_per_s=f"{rate:.2f}",
                p50_ms=f"{p50:.0f}", p95_ms=f"{p95:.0f}", p95_total_ms=f"{p95_total:.0f}")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--checkpoints", type=Path, default=ROOT / "checkpoints",
                   help="folder of checkpoint folders to serve (ANATOMY_CHECKPOINT_DIR)")
    p.add_argument("--directions", default="de-en,en-de", help="comma-separated directions to ask for")
    p.add_argument("--clients", type=int, default=16, help="visitors at once, one gradio_client each")
    p.add_argument("--ratios", nargs="?", const="64,100,200", default=None, metavar="N,N,...",
                   help="crowds of these sizes in turn against one server (default 64,100,200), instead of --clients")
    p.add_argument("--requests", type=int, default=None, help="requests in all, per crowd (default: 10 per client)")
    p.add_argument("--time-limit", type=float, default=300.0,
                   help="seconds, per crowd; no request starts after it")
    p.add_argument("--beam", type=int, default=1, help="beam_size of every request (1 = greedy)")
    p.add_argument("--visitors-nice", type=int, default=None, metavar="N",
                   help="run the visitors at this nice value instead of SCHED_IDLE (0: as the server)")
    p.add_argument("--backoff", type=float, default=1.0,
                   help="seconds a refused visitor first waits before asking again (0: at once, a retry storm)")
    args = p.parse_args()
    sizes = [int(n) for n in args.ratios.split(",")] if args.ratios else [args.clients]
    jobs = [(sentence, direction) for direction in args.directions.split(",")
            for sentence in SENTENCES[direction.split("-")[0]]]

    with tempfile.NamedTemporaryFile("w", prefix="anatomy-load-", suffix=".log", delete=False) as log:
        proc, url = start_app(args.checkpoints, log)
        lower_priority(args.visitors_nice)  # the visitors' side only: the server started at our priority
        try:
            alone = Client(url, verbose=False)
            reference = {job: alone.predict(text=job[0], direction=job[1], beam_size=args.beam,
                                            api_name="/translate") for job in jobs}
            clients, results = [], []
            for size in sizes:
                with ThreadPoolExecutor(8) as pool:  # before the crowd starts: not timed
                    # download_files=False: the answers hold no files, and looking for them walks every number
                    # of the trace in Python, as much CPU as the server spends on the request
                    clients += pool.map(lambda _: Client(url, verbose=False, download_files=False),
                                        range(len(clients), size))
                results.append(crowd(clients[:size], jobs, reference, args.requests or 10 * size, args))
                if args.ratios:
                    print(" ".join(f"{k}={v}" for k, v in results[-1].items()), flush=True)
        finally:
            proc.terminate()
            proc.wait(timeout=30)

    if not args.ratios:
        print("\n".join(f"{k}={v}" for k, v in results[0].items()))
        return
    base = float(results[0]["served_per_s"])
    print(" ".join(f"served_ratio_{r['clients']}={float(r['served_per_s']) / base:.2f}" for r in results[1:]))


if __name__ == "__main__":
    main()
