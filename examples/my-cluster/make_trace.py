"""Write trace.csv, the example's request log in gpuscale's generic CSV format.

A quiet start, a burst and a tail, 45 minutes, seeded so the file is reproducible:
    python examples/my-cluster/make_trace.py
(Replace it with your own gateway's log: `--trace` also reads the Azure, BurstGPT and Mooncake
formats.)
"""

from pathlib import Path

import numpy as np

# (start_s, end_s, requests per second): a morning ramp compressed to 45 minutes.
PHASES = ((0, 480, 0.4), (480, 2280, 3.5), (2280, 2700, 0.6))

rng = np.random.default_rng(20251201)
rows = []
for start, end, rate in PHASES:
    t = float(start)
    while True:
        t += rng.exponential(1.0 / rate)
        if t >= end:
            break
        prompt = int(min(12000, max(16, rng.lognormal(np.log(900), 0.8))))
        output = int(min(2000, max(1, rng.lognormal(np.log(200), 0.6))))
        rows.append(f"{t:.3f},{prompt},{output}")
out = Path(__file__).with_name("trace.csv")
out.write_text("arrival_s,prompt_tokens,output_tokens\n" + "\n".join(rows) + "\n")
print(f"{len(rows)} requests -> {out}")
