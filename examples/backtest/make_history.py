"""Write trace.csv and history.om: an hour of chat traffic (a morning climb to 8 requests/s
and back) served by `manifests/`, its series exported as a cluster's Prometheus would hold
them. Stands in for your own export (docs/backtest.md, "Export the history"):
    python examples/backtest/make_history.py [FOLDER]     (FOLDER: this one by default)
"""

import subprocess
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
SPAN_S, BASE_PER_S, PEAK_PER_S = 3600.0, 1.0, 8.0


def write_trace(path: Path) -> int:
    """Poisson arrivals at the peak rate, thinned to a raised-cosine day shape; lognormal
    lengths. Returns the number of requests."""
    rng = np.random.default_rng(20261124)
    arrival = np.cumsum(rng.exponential(1.0 / PEAK_PER_S, size=int(PEAK_PER_S * SPAN_S * 1.2)))
    arrival = arrival[arrival < SPAN_S]
    rate = BASE_PER_S + (PEAK_PER_S - BASE_PER_S) * 0.5 * (1 - np.cos(2 * np.pi * arrival
                                                                       / SPAN_S))
    arrival = arrival[rng.random(len(arrival)) < rate / PEAK_PER_S]
    prompt = np.clip(rng.lognormal(np.log(700), 0.8, len(arrival)), 16, 8000).astype(int)
    output = np.clip(rng.lognormal(np.log(180), 0.6, len(arrival)), 1, 2000).astype(int)
    path.write_text("arrival_s,prompt_tokens,output_tokens\n" + "".join(
        f"{a:.3f},{p},{o}\n" for a, p, o in zip(arrival, prompt, output, strict=True)))
    return len(arrival)


def main(folder: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    trace = folder / "trace.csv"
    count = write_trace(trace)
    subprocess.run([sys.executable, "-m", "gpuscale", "simulate", "--manifests",
                    str(HERE / "manifests"), "--trace", str(trace), "--metrics-out",
                    str(folder / "history.om"), "--force", "-o", "json", "--out",
                    str(folder / "history-run.json")], check=True, stdout=subprocess.DEVNULL)
    print(f"{count} requests -> {trace}; their series -> {folder / 'history.om'}")


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else HERE)
