"""Instructions the compiled simulation loop executes on issue 16's scenario: an A/B measure
that a shared, noisy host does not move.

    python bench/loop_instructions.py [--scheduler kai|kube-scheduler]

Runs `run_strategy` on `bench_e2e.scenario_dict` (the trace already loaded) under valgrind's
callgrind, counting only inside `Simulation.run` and what it calls (the interpreted
controllers included, the result's oracle probe too: it runs the loop again), and prints that
count. Repeat runs agree to ~0.01 %, where CPU seconds here move +-10-20 % run to run, so a
change of 1 % is visible. Instructions are not time (a cache miss costs more than an add), so
a change kept on this measure is also timed end to end (bench_e2e.py).

Needs valgrind and the compiled build (the toggle names its C function; a pure-Python run
counts nothing and is refused). PYTHONPATH chooses the tree, as for the other benchmarks.
Takes ~2 minutes (callgrind runs the loop ~50x slower).
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_e2e import ROOT, scenario_dict

TOGGLE = "CPyDef_simulation___Simulation___run"  # mypyc's C name of Simulation.run

_RUN = """
import sys
from pathlib import Path
from gpuscale.sim.run import run_strategy, scenario_requests
from gpuscale.scenario import load_scenario
path = Path(sys.argv[1])
scenario = load_scenario(path)
requests = scenario_requests(scenario, path.parent)
run_strategy(scenario, scenario.strategies[0], requests)
"""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scheduler", default="kai", choices=["kai", "kube-scheduler"])
    args = parser.parse_args()
    if shutil.which("valgrind") is None:
        print("loop_instructions: valgrind not found", file=sys.stderr)
        return 2
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        p for p in (os.environ.get("PYTHONPATH", ""), str(ROOT / "src")) if p),
        "OPENBLAS_NUM_THREADS": "1"}
    check = subprocess.run([sys.executable, "-c", "import gpuscale.core.simulation as s; "
                            "print(s.COMPILED)"], env=env, capture_output=True, text=True)
    if check.stdout.strip() != "True":
        print("loop_instructions: the compiled build is not what runs here (make compile)",
              file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory() as tmp:
        scenario = Path(tmp) / "scenario.yaml"
        scenario.write_text(yaml.safe_dump(scenario_dict(args.scheduler)))
        done = subprocess.run(
            ["valgrind", "--tool=callgrind", f"--toggle-collect={TOGGLE}",
             f"--callgrind-out-file={tmp}/callgrind.out", sys.executable, "-c", _RUN,
             str(scenario)], env=env, capture_output=True, text=True)
    found = re.search(r"Collected\s*:\s*(\d+)", done.stderr)
    if done.returncode != 0 or found is None:
        print(f"loop_instructions: callgrind failed:\n{done.stderr[-2000:]}", file=sys.stderr)
        return 1
    print(f"instructions inside Simulation.run ({args.scheduler}): {int(found.group(1)):,}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
