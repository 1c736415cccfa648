"""Load on `estimator serve`: requests/s and p50/p99 latency per endpoint at 1, 8 and 32 concurrent clients, and
the server's resident memory over a long run of requests.

Run from the repository root:  python -m lab.speed.server_load [--requests 200] [--long 10000]

It starts ``python -m estimator serve --port 0`` (loopback only, the shipped catalog, no calibration, a cache
folder of its own, warmed by one request to each endpoint first), then for each endpoint and each number of
clients sends ``--requests`` requests from that many threads, each on a keep-alive connection of its own, and
times each request from send to the last byte of the answer. Every answer must be 200 (any other status stops the
run: a benchmark of refusals measures nothing). Then ``--long`` requests over every endpoint in turn, 8 clients,
reading the server's VmRSS (/proc/PID/status) every tenth of the way: flat means no memory grows with the number
of requests served. The clients run on the same machine as the server and share its cores; the load average
before and after is printed beside the figures, since other work on the machine slows both.
"""

from __future__ import annotations

import argparse
import http.client
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
ENDPOINTS = {  # name → path and query: the pages' and scripts' common requests
    "estimate json": "/v1/estimate?model=llama-3.1-8b&gpu=h100&batch=8&prompt_tokens=2k&output_tokens=256",
    "estimate csv": "/v1/estimate?model=llama-3.1-8b&gpu=h100&batch=8&prompt_tokens=2k&format=csv",
    "train": "/v1/train?model=llama-3.2-1b&gpu=h100&batch=4&seq_len=2048",
    "plan": "/v1/plan?model=llama-3.1-8b&gpu=h100&concurrency=16",
    "sweep": "/v1/sweep?model=llama-3.2-1b&gpu=h100&batch=1,8,32&prompt_tokens=512,2k",
    "models": "/v1/models",
    "gpus": "/v1/gpus",
}
CLIENTS = (1, 8, 32)


@contextmanager
def serving() -> Iterator[tuple[str, int, int]]:
    """A fresh `estimator serve` on a free loopback port: (host, port, pid)."""
    env = {**os.environ, "ESTIMATOR_NO_CALIBRATION": "1", "PYTHONPATH": str(ROOT),
           "ESTIMATOR_CACHE_DIR": os.environ.get("ESTIMATOR_CACHE_DIR") or tempfile.mkdtemp(prefix="serve-load-")}
    with subprocess.Popen([sys.executable, "-m", "estimator", "serve", "--port", "0"], stdout=subprocess.PIPE,
                          stderr=subprocess.DEVNULL, text=True, cwd=ROOT, env=env) as server:
        try:
            line = server.stdout.readline() if server.stdout else ""
            url = line.split()[2]  # "serving on http://127.0.0.1:PORT ..."
            host, port = url.removeprefix("http://").rstrip("/").split(":")
            assert host == "127.0.0.1", line  # loopback only
            yield host, int(port), server.pid
        finally:
            server.terminate()
            server.wait(timeout=30)


class Client:
    """One keep-alive connection; `get` returns the seconds from send to the answer's last byte."""

    def __init__(self, host: str, port: int) -> None:
        self.connection = http.client.HTTPConnection(host, port, timeout=300)

    def get(self, path: str) -> float:
        start = time.perf_counter()
        self.connection.request("GET", path)
        answer = self.connection.getresponse()
        answer.read()
        took = time.perf_counter() - start
        if answer.status != 200:
            raise SystemExit(f"{path}: HTTP {answer.status}")
        return took


def load(host: str, port: int, paths: list[str], clients: int) -> tuple[float, list[float]]:
    """Send ``paths`` from ``clients`` threads (each its own connection, taking the next path as it finishes):
    the wall time of all and each request's latency."""
    lock, queue, latencies = threading.Lock(), list(reversed(paths)), []

    def worker() -> None:
        client = Client(host, port)
        while True:
            with lock:
                if not queue:
                    return
                path = queue.pop()
            took = client.get(path)
            with lock:
                latencies.append(took)

    start = time.perf_counter()
    with ThreadPoolExecutor(clients) as pool:
        for future in [pool.submit(worker) for _ in range(clients)]:
            future.result()
    return time.perf_counter() - start, latencies


def rss_bytes(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise SystemExit(f"no VmRSS for {pid}")


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def throughput(host: str, port: int, requests: int) -> list[str]:
    rows = ["| endpoint | clients | requests | requests/s | p50 ms | p99 ms |",
            "| --- | ---: | ---: | ---: | ---: | ---: |"]
    for name, path in ENDPOINTS.items():
        for clients in CLIENTS:
            wall, latencies = load(host, port, [path] * requests, clients)
            rows.append(f"| {name} | {clients} | {requests:,} | {requests / wall:,.1f} | "
                        f"{1000 * statistics.median(latencies):,.1f} | {1000 * _percentile(latencies, 0.99):,.1f} |")
            print(rows[-1], flush=True)
    return rows


def memory(host: str, port: int, pid: int, requests: int) -> list[str]:
    paths = [list(ENDPOINTS.values())[k % len(ENDPOINTS)] for k in range(requests)]
    tenth = max(1, requests // 10)
    readings = [(0, rss_bytes(pid))]
    for start in range(0, requests, tenth):
        load(host, port, paths[start:start + tenth], 8)
        readings.append((min(start + tenth, requests), rss_bytes(pid)))
    series = ", ".join(f"{n:,}: {b / 2**20:,.0f}" for n, b in readings)
    return [f"server RSS (MiB) after N requests over every endpoint, 8 clients: {series}",
            f"growth over the second half: {(readings[-1][1] - readings[len(readings) // 2][1]) / 2**20:+,.1f} MiB"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=200, help="requests per endpoint and number of clients")
    parser.add_argument("--long", type=int, default=10_000, help="requests of the memory run")
    args = parser.parse_args()
    before = os.getloadavg()
    with serving() as (host, port, pid):
        for path in ENDPOINTS.values():  # warm: imports, the catalog, the caches
            Client(host, port).get(path)
        print(f"server pid {pid} on {host}:{port}; RSS after warming {rss_bytes(pid) / 2**20:,.0f} MiB", flush=True)
        lines = throughput(host, port, args.requests) if args.requests else []
        lines += memory(host, port, pid, args.long) if args.long else []
    after = os.getloadavg()
    lines.append(f"load average (1 min) before {before[0]:.1f}, after {after[0]:.1f}; {os.cpu_count()} cores")
    print("\n".join(lines[-3:]), flush=True)


if __name__ == "__main__":
    main()
