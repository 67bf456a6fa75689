"""Write trace.csv, the examples' request log in gpuscale's generic CSV format.

Thirty minutes of chat traffic for one Llama-3.1-8B service: quiet, a burst, quiet again;
seeded so the file is reproducible:
    python examples/keda-scaling-modifiers/make_trace.py
"""

from pathlib import Path

import numpy as np

# (start_s, end_s, requests per second)
PHASES = ((0, 240, 0.5), (240, 1500, 9.0), (1500, 1800, 0.5))

rng = np.random.default_rng(20261202)
rows = []
for start, end, rate in PHASES:
    t = float(start)
    while True:
        t += rng.exponential(1.0 / rate)
        if t >= end:
            break
        prompt = int(min(8000, max(16, rng.lognormal(np.log(700), 0.8))))
        output = int(min(1500, max(1, rng.lognormal(np.log(180), 0.6))))
        rows.append(f"{t:.3f},{prompt},{output}")
out = Path(__file__).with_name("trace.csv")
out.write_text("arrival_s,prompt_tokens,output_tokens\n" + "\n".join(rows) + "\n")
print(f"{len(rows)} requests -> {out}")
