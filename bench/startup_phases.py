"""Where one `gpuscale simulate SCENARIO` spends CPU outside the simulation loop (issue 16).

    python bench/startup_phases.py SCENARIO.yaml [ROUNDS]

Each round runs, in a fresh interpreter, the import of the `simulate` command, then the
command itself (`--format json --out` a temporary file) with each phase wrapped: the scenario
load, the trace (`scenario_requests`), the run, the result build and the oracle probe inside
it. It prints the best CPU seconds (`time.process_time`) of each phase over the rounds: on a
host shared with other work these move far less than wall seconds. The command runs through
`gpuscale.cli.main(argv)`, so the process-entry collector settings (cli/__init__.py) are not
in these figures; `bench/ab_cpu.py` times the whole command as a user runs it.
`bench_e2e.py --keep FILE.yaml` writes the issue 16 scenario.

    python bench/startup_phases.py SCENARIO.yaml [ROUNDS] --as-entry

first does what the process entry (`gpuscale`, `python -m gpuscale`) does before it imports
a subcommand: one BLAS thread unless the environment chose, pydantic's plugin stand-in
(cli/pydantic_plugins.py), and the import with the collector off, frozen after. Without it,
numpy's BLAS threads spin through the import (~0.1 CPU-s more than a user's process pays).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

_ROUND = r"""
import contextlib, io, json, sys, tempfile, time
times = {}

def timed(owner, name, key):
    inner = getattr(owner, name)
    def wrapper(*args, **kwargs):
        start = time.process_time()
        try:
            return inner(*args, **kwargs)
        finally:
            times[key] = times.get(key, 0.0) + time.process_time() - start
    setattr(owner, name, wrapper)

as_entry = sys.argv[2] == "entry"
if as_entry:  # what cli.main() and LazyGroup.get_command do for the process entry
    import gc
    from gpuscale.cli import single_threaded_blas_default
    single_threaded_blas_default()
    try:
        from gpuscale.cli import pydantic_plugins
        pydantic_plugins.install()
    except ImportError:  # a tree from before the stand-in (A/B against an older commit)
        pass
    gc.disable()
start = time.process_time()
import gpuscale.cli.simulate as simulate_cmd
times["import the simulate command"] = time.process_time() - start
if as_entry:
    gc.freeze()
    gc.enable()
import gpuscale.sim.compare as compare
import gpuscale.sim.result as result
import gpuscale.sim.run as run
from gpuscale.cli import main
timed(simulate_cmd, "load_scenario", "load_scenario")
timed(compare, "scenario_requests", "scenario_requests (trace)")
timed(run._Run, "run", "run (loop + build_result)")
timed(run, "build_result", "build_result (oracle included)")
timed(result, "oracle_summary", "oracle probe")
with tempfile.TemporaryDirectory() as tmp:
    start = time.process_time()
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            main(["simulate", sys.argv[1], "--format", "json", "--out", f"{tmp}/out.json",
                  "--force"])
    except SystemExit:
        pass
    times["the command after import"] = time.process_time() - start
print(json.dumps(times))
"""


def main() -> int:
    if len(sys.argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    args = [a for a in sys.argv[1:] if a != "--as-entry"]
    mode = "entry" if "--as-entry" in sys.argv[1:] else "call"
    scenario = str(Path(args[0]).resolve())
    rounds = int(args[1]) if len(args) > 1 else 3
    best: dict[str, float] = {}
    for _ in range(rounds):
        out = subprocess.run([sys.executable, "-c", _ROUND, scenario, mode], check=True,
                             capture_output=True, text=True).stdout
        for key, value in json.loads(out.strip().splitlines()[-1]).items():
            best[key] = min(best.get(key, value), value)
    for key, value in best.items():
        print(f"{key:32s} {value:7.3f} CPU-s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
