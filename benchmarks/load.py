"""Load test of the served app on loopback: N visitors at once through the /translate API.

Starts `python app.py` on 127.0.0.1 (the checkpoints under checkpoints/ unless --checkpoints says
otherwise), asks each sentence once, alone, for the reference answers, then lets --clients
gradio_client clients (one per visitor) send --requests requests in all, as fast as they are
answered, stopping early at --time-limit. Every answer must equal the reference answer for its
sentence: translation, notice, output pieces and cross-attention. Prints one `key=value` a line:
clients, requests, completed, errors (refused or failed), mismatches, seconds, requests_per_s,
p50_ms, p95_ms (latency of the completed requests, queueing included).

    python benchmarks/load.py --clients 16
    python benchmarks/load.py --clients 32 --requests 320 --time-limit 300
"""
from __future__ import annotations

import argparse
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
from gradio_client import Client

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


def same(answer, reference) -> bool:
    """Equal translation, notice and output pieces; attention equal up to float noise."""
    (text, notice, trace), (text0, notice0, trace0) = answer, reference
    return ((text, notice) == (text0, notice0) and trace is not None and trace0 is not None
            and trace["output_tokens"] == trace0["output_tokens"]
            and np.allclose(trace["cross_attn"], trace0["cross_attn"], atol=1e-6))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--checkpoints", type=Path, default=ROOT / "checkpoints",
                   help="folder of checkpoint folders to serve (ANATOMY_CHECKPOINT_DIR)")
    p.add_argument("--directions", default="de-en,en-de", help="comma-separated directions to ask for")
    p.add_argument("--clients", type=int, default=16, help="visitors at once, one gradio_client each")
    p.add_argument("--requests", type=int, default=None, help="requests in all (default: 10 per client)")
    p.add_argument("--time-limit", type=float, default=180.0, help="seconds; no request starts after it")
    p.add_argument("--beam", type=int, default=1, help="beam_size of every request (1 = greedy)")
    args = p.parse_args()
    total = args.requests or 10 * args.clients
    jobs = [(sentence, direction) for direction in args.directions.split(",")
            for sentence in SENTENCES[direction.split("-")[0]]]

    with tempfile.NamedTemporaryFile("w", prefix="anatomy-load-", suffix=".log", delete=False) as log:
        proc, url = start_app(args.checkpoints, log)
        try:
            ask = dict(beam_size=args.beam, api_name="/translate")
            alone = Client(url, verbose=False)
            reference = {job: alone.predict(text=job[0], direction=job[1], **ask) for job in jobs}
            lock, counter, results = threading.Lock(), iter(range(total)), []

            def visitor(client: Client) -> None:
                while time.monotonic() < deadline:
                    with lock:
                        i = next(counter, None)
                    if i is None:
                        return
                    job = jobs[i % len(jobs)]
                    start = time.perf_counter()
                    try:
                        answer = client.submit(text=job[0], direction=job[1], **ask).result(timeout=args.time_limit)
                    except Exception as err:  # refused (queue full), failed or timed out: counted, not fatal
                        results.append((job, time.perf_counter() - start, err))
                        continue
                    results.append((job, time.perf_counter() - start, answer))

            with ThreadPoolExecutor(args.clients) as pool:
                clients = list(pool.map(lambda _: Client(url, verbose=False), range(args.clients)))
                start = time.perf_counter()
                deadline = time.monotonic() + args.time_limit
                list(pool.map(visitor, clients))
                seconds = time.perf_counter() - start
        finally:
            proc.terminate()
            proc.wait(timeout=30)

    done = [(job, latency, answer) for job, latency, answer in results if not isinstance(answer, Exception)]
    p50, p95 = np.percentile([1000 * latency for _, latency, _ in done], [50, 95]) if done else (np.nan, np.nan)
    print(f"clients={args.clients}")
    print(f"requests={total}")
    print(f"completed={len(done)}")
    print(f"errors={len(results) - len(done)}")
    print(f"mismatches={sum(not same(answer, reference[job]) for job, _, answer in done)}")
    print(f"seconds={seconds:.2f}")
    print(f"requests_per_s={len(done) / seconds:.2f}")
    print(f"p50_ms={p50:.0f}")
    print(f"p95_ms={p95:.0f}")


if __name__ == "__main__":
    main()
