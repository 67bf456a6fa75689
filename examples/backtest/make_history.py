"""Write trace.csv and history.om: an hour of chat traffic (a morning climb to 8 requests/s
and back) served by `manifests/`, its series exported as a cluster's Prometheus would hold
them. Stands in for your own export (docs/backtest.md, "Export the history"):
    python examples/backtest/make_history.py
"""

import subprocess
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
SPAN_S, BASE_PER_S, PEAK_PER_S = 3600.0, 1.0, 8.0

rng = np.random.default_rng(20261124)
# Poisson arrivals at the peak rate, thinned to a raised-cosine day shape.
arrival = np.cumsum(rng.exponential(1.0 / PEAK_PER_S, size=int(PEAK_PER_S * SPAN_S * 1.2)))
arrival = arrival[arrival < SPAN_S]
rate = BASE_PER_S + (PEAK_PER_S - BASE_PER_S) * 0.5 * (1 - np.cos(2 * np.pi * arrival / SPAN_S))
arrival = arrival[rng.random(len(arrival)) < rate / PEAK_PER_S]
prompt = np.clip(rng.lognormal(np.log(700), 0.8, len(arrival)), 16, 8000).astype(int)
output = np.clip(rng.lognormal(np.log(180), 0.6, len(arrival)), 1, 2000).astype(int)
trace = HERE / "trace.csv"
trace.write_text("arrival_s,prompt_tokens,output_tokens\n" + "".join(
    f"{a:.3f},{p},{o}\n" for a, p, o in zip(arrival, prompt, output, strict=True)))
subprocess.run([sys.executable, "-m", "gpuscale", "simulate", "--manifests",
                str(HERE / "manifests"), "--trace", str(trace), "--metrics-out",
                str(HERE / "history.om"), "--force", "-o", "json", "--out",
                str(HERE / "history-run.json")], check=True, stdout=subprocess.DEVNULL)
print(f"{len(arrival)} requests -> {trace}; their series -> {HERE / 'history.om'}")
