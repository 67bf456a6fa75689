"""A real Prometheus on localhost over blocks backfilled from OpenMetrics text (what a user
does with `--metrics-out`): `promtool tsdb create-blocks-from openmetrics`, then `prometheus`
on 127.0.0.1 with no scrape targets, queried through its HTTP API. Bounded in time; stopped
on exit. Callers skip without the binaries."""

from __future__ import annotations

import contextlib
import json
import shutil
import socket
import subprocess
import time
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path

PROMTOOL = shutil.which("promtool")
PROMETHEUS = shutil.which("prometheus")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class LivePrometheus:
    def __init__(self, url: str) -> None:
        self.url = url

    def query(self, query: str, t_s: float) -> dict:
        """The API's `data` for an instant query at Unix time `t_s`."""
        params = urllib.parse.urlencode({"query": query, "time": f"{t_s:.3f}"})
        with urllib.request.urlopen(f"{self.url}/api/v1/query?{params}", timeout=30) as reply:
            body = json.load(reply)
        assert body["status"] == "success", body
        return body["data"]

    def query_range(self, query: str, start_s: float, end_s: float, step_s: float) -> dict:
        """The whole `/api/v1/query_range` response."""
        params = urllib.parse.urlencode({"query": query, "start": f"{start_s:.3f}",
                                         "end": f"{end_s:.3f}", "step": f"{step_s}"})
        with urllib.request.urlopen(f"{self.url}/api/v1/query_range?{params}",
                                    timeout=60) as reply:
            body = json.load(reply)
        assert body["status"] == "success", body
        return body


@contextlib.contextmanager
def backfilled(openmetrics: Path, workdir: Path) -> Iterator[LivePrometheus]:
    assert PROMTOOL is not None and PROMETHEUS is not None
    data = workdir / "tsdb"
    subprocess.run([PROMTOOL, "tsdb", "create-blocks-from", "openmetrics", str(openmetrics),
                    str(data)], check=True, capture_output=True, timeout=300)
    config = workdir / "prometheus.yml"
    config.write_text("global: {}\n")
    port = _free_port()
    server = subprocess.Popen(
        [PROMETHEUS, f"--config.file={config}", f"--storage.tsdb.path={data}",
         f"--web.listen-address=127.0.0.1:{port}", "--storage.tsdb.retention.time=100y"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                with urllib.request.urlopen(f"{url}/-/ready", timeout=2) as reply:
                    if reply.status == 200:
                        break
            except OSError:
                pass
            if time.monotonic() > deadline or server.poll() is not None:
                raise RuntimeError("prometheus did not become ready")
            time.sleep(0.2)
        yield LivePrometheus(url)
    finally:
        server.terminate()
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
