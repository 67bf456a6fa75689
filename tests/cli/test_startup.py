"""Start-up cost: `audit`, `diagnose` and `--help` must not import the simulator.

They did once (via the scenario schema: `audit` took 1.2 s to start instead of 0.1 s). Each
command runs in a fresh interpreter and reports which of the heavy packages it loaded; a
wall-clock bound would be flaky on a shared machine, the module list is not.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "audit" / "fixtures"

# The simulator and what only it needs (the scenario schema pulls in every layer's params).
HEAVY = ("gpuscale.sim", "gpuscale.serving", "gpuscale.core.simulation", "gpuscale.metrics",
         "gpuscale.scenario.models", "gpuscale.workloads", "numpy", "pydantic")

_PROBE = """
import json, sys
from gpuscale.cli import main
try:
    main(sys.argv[1:])
except SystemExit:
    pass
heavy = sorted(m for m in sys.modules if m.split('.')[0] in ('gpuscale', 'numpy', 'pydantic')
               and any(m == h or m.startswith(h + '.') for h in HEAVY))
print(json.dumps(heavy), file=sys.stderr)
"""


def _probe(code: str, args: tuple[str, ...], timeout_s: float) -> list[str]:
    """Run a probe script in a fresh interpreter; its last stderr line is a JSON list."""
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    result = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True,
                            env=env, timeout=timeout_s)
    return json.loads(result.stderr.strip().splitlines()[-1])


def _heavy_modules(*args: str) -> list[str]:
    return _probe(f"HEAVY = {HEAVY!r}\n" + _PROBE, args, 60)


@pytest.mark.parametrize("args", [
    ("--help",),
    ("audit", "--help"),
    ("diagnose", "--help"),
    ("audit", "--format", "json", str(FIXTURES / "GPU001" / "fires.yaml")),
    ("audit", str(FIXTURES)),
    ("diagnose", str(ROOT / "tests" / "audit" / "diagnose" / "insufficient-gpus.json")),
], ids=lambda a: " ".join(Path(x).name for x in a))
def test_command_does_not_import_the_simulator(args):
    assert _heavy_modules(*args) == []


def test_the_probe_sees_the_simulator_when_it_is_imported():
    # Guard against a probe that can never fail: `simulate --help` loads the schema.
    assert "gpuscale.scenario.models" in _heavy_modules("simulate", "--help")


_ENV_PROBE = """
import json, os, sys
from gpuscale.cli import main
loaded_before = 'numpy' in sys.modules
try:
    main(sys.argv[1:])
except SystemExit:
    pass
names = ('OPENBLAS_NUM_THREADS', 'OMP_NUM_THREADS', 'MKL_NUM_THREADS')
print(json.dumps([loaded_before, {n: os.environ.get(n) for n in names},
                  'rich' in sys.modules]), file=sys.stderr)
"""


def _env_probe(env_extra: dict[str, str], *args: str) -> list:
    env = {k: v for k, v in os.environ.items()
           if k not in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")}
    env.update(PYTHONPATH=str(ROOT / "src"), **env_extra)
    result = subprocess.run([sys.executable, "-c", _ENV_PROBE, *args], capture_output=True,
                            text=True, env=env, timeout=120)
    return json.loads(result.stderr.strip().splitlines()[-1])


def test_the_command_line_defaults_blas_to_one_thread_before_numpy_loads():
    # OpenBLAS reads its thread count when numpy is first imported: the CLI sets it first.
    loaded_before, threads, _ = _env_probe({}, "simulate", "--help")
    assert not loaded_before
    assert threads == {"OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1",
                       "MKL_NUM_THREADS": "1"}


def test_a_thread_count_the_user_set_is_left_alone():
    _, threads, _ = _env_probe({"OMP_NUM_THREADS": "4"}, "simulate", "--help")
    assert threads == {"OPENBLAS_NUM_THREADS": None, "OMP_NUM_THREADS": "4",
                       "MKL_NUM_THREADS": None}


def test_json_output_does_not_import_the_table_renderer(tmp_path):
    # rich is only the terminal table (and the progress bar on a terminal); -o json skips it.
    scenario = ROOT / "examples" / "prefix-cache" / "scenario.yaml"
    *_, rich_loaded = _env_probe({}, "simulate", str(scenario), "-o", "json",
                                 "--out", str(tmp_path / "out.json"))
    assert (tmp_path / "out.json").is_file()
    assert rich_loaded is False


_PROBE_COMMAND = """
import gc, sys
import click

COLLECTING_AT_IMPORT = gc.isenabled()


@click.command("probe")
def command():
    # while the command runs: frozen objects, the collector on, and whether it was at import
    print(gc.get_freeze_count(), gc.isenabled(), COLLECTING_AT_IMPORT, file=sys.stderr)
"""

_FREEZE_PROBE = """
import gc, sys
import gpuscale.cli as cli_package
from gpuscale.cli import main

sys.path.insert(0, sys.argv.pop(1))
cli_package.SUBCOMMANDS["probe"] = ("probe_command", "probe")
as_entry = sys.argv.pop(1) == "entry"
try:
    main() if as_entry else main(sys.argv[1:])
except SystemExit:
    pass
print(gc.get_freeze_count(), file=sys.stderr)  # on the way out
"""


@pytest.mark.parametrize("how", ["entry", "call"])
def test_only_the_process_entry_freezes_the_collector(how, tmp_path):
    # The console script and `python -m gpuscale` call main() and exit: what the subcommand's
    # import built is frozen before the command runs (the run's full collections skip it),
    # and everything on the way out (the shutdown's collection has nothing to walk). A
    # caller passing argv (tests, bench/) goes on, and its collector must stay as it was.
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    (tmp_path / "probe_command.py").write_text(_PROBE_COMMAND)
    result = subprocess.run([sys.executable, "-c", _FREEZE_PROBE, str(tmp_path), how, "probe"],
                            capture_output=True, text=True, env=env, timeout=60)
    command_line, exit_line = result.stderr.strip().splitlines()[-2:]
    frozen, collecting, collecting_at_import = command_line.split()
    entry = how == "entry"
    assert (int(frozen) > 0) == entry  # the command's imports, frozen before it runs
    assert collecting == "True"  # the run itself collects as usual
    assert collecting_at_import == str(not entry)  # no collections while the import builds
    assert (int(exit_line) > 0) == entry


# The process entry, as the console script runs it; prints at exit whether pydantic's plugin
# loader imported importlib.metadata, and how many validators a plugin saw (if one is there).
_ENTRY_PROBE = """
import atexit, runpy, sys

def report():
    plugin = sys.modules.get("fake_pydantic_plugin")
    calls = plugin.PLUGIN.calls if plugin else None
    readers = [m for m in ("importlib.resources", "zipfile") if m in sys.modules]
    print("importlib.metadata" in sys.modules, calls, ",".join(readers) or "-", file=sys.stderr)

atexit.register(report)
sys.argv = ["gpuscale", *sys.argv[1:]]
runpy.run_module("gpuscale", run_name="__main__")
"""


def _entry_probe_line(extra_path: Path | None, *args: str) -> list[str]:
    paths = [str(ROOT / "src")] + ([str(extra_path)] if extra_path else [])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(paths)}
    env.pop("PYDANTIC_DISABLE_PLUGINS", None)
    result = subprocess.run([sys.executable, "-c", _ENTRY_PROBE, *args], capture_output=True,
                            text=True, env=env, timeout=120)
    return result.stderr.strip().splitlines()[-1].split()


def _entry_probe(extra_path: Path | None, *args: str) -> tuple[bool, int | None]:
    metadata, calls, _ = _entry_probe_line(extra_path, *args)
    return metadata == "True", None if calls == "None" else int(calls)


def _plugins_possible() -> bool:
    """Whether this environment itself may hold a pydantic plugin (or a path entry the
    stand-in cannot judge): then pydantic's own loader runs, rightly."""
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    code = ("import sys; from gpuscale.cli.pydantic_plugins import _scan; "
            "print(_scan(sys.path, sys.meta_path))")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            env=env, timeout=60)
    return result.stdout.strip() != "False"


def test_simulate_does_not_import_importlib_metadata_without_pydantic_plugins():
    # pydantic's plugin loader imports it (14 ms) only to find that no plugin is installed.
    if _plugins_possible():
        pytest.skip("this environment may have a pydantic plugin: pydantic's loader runs")
    assert _entry_probe(None, "simulate", "--help") == (False, None)


def test_a_run_reads_the_catalog_without_importlib_resources(tmp_path):
    # catalog/specs.py reads its YAML through its own loader: resources.files() imported its
    # readers and with them zipfile and importlib.util (~10 ms), for three files beside it.
    if _plugins_possible():
        pytest.skip("this environment may have a pydantic plugin: importlib.metadata loads")
    scenario = ROOT / "examples" / "prefix-cache" / "scenario.yaml"
    *_, readers = _entry_probe_line(None, "simulate", str(scenario), "-o", "json", "--out",
                                    str(tmp_path / "out.json"))
    assert (tmp_path / "out.json").is_file()
    assert readers == "-"


def test_an_installed_pydantic_plugin_still_sees_every_validator(tmp_path):
    # A distribution declaring a `pydantic` entry point: pydantic's own loader takes over and
    # the plugin is asked for each model's validator, as without gpuscale's stand-in.
    info = tmp_path / "fake_pydantic_plugin-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: fake-pydantic-plugin\n"
                                   "Version: 1.0\n")
    (info / "entry_points.txt").write_text("[pydantic]\nfake = fake_pydantic_plugin:PLUGIN\n")
    (tmp_path / "fake_pydantic_plugin.py").write_text(
        "class Plugin:\n"
        "    calls = 0\n"
        "    def new_schema_validator(self, *args, **kwargs):\n"
        "        Plugin.calls += 1\n"
        "        return None, None, None\n"
        "PLUGIN = Plugin()\n")
    metadata, calls = _entry_probe(tmp_path, "simulate", "--help")
    assert metadata is True
    assert calls is not None and calls > 50  # every scenario and result model


# Controllers a scenario may not use: their params modules (`*_params.py`) are what the
# scenario's union needs; the controller modules load when a run builds one.
LAZY_CONTROLLERS = ("gpuscale.autoscaling.kpa", "gpuscale.autoscaling.wva",
                    "gpuscale.autoscaling.planner_sla", "gpuscale.autoscaling.planner_load",
                    "gpuscale.autoscaling.capacity")

_LAZY_PROBE = """
import json, sys
from gpuscale.cli import main
try:
    main(sys.argv[1:])
except SystemExit:
    pass
print(json.dumps(sorted(m for m in LAZY if m in sys.modules)), file=sys.stderr)
"""


def _lazy_loaded(*args: str) -> list[str]:
    return _probe(f"LAZY = {LAZY_CONTROLLERS!r}\n" + _LAZY_PROBE, args, 120)


def test_the_scenario_schema_does_not_import_unused_controllers():
    assert _lazy_loaded("simulate", "--help") == []


_KPA_SCENARIO = """
name: kpa-only
duration_s: 60
model: {name: Llama-3.1-8B, precision: bf16, tp: 1}
cluster: {instance_type: p5.48xlarge, ready_nodes: 1, max_nodes: 1}
workload: {kind: poisson, rate_per_s: 2.0, duration_s: 60}
strategies:
  - name: kpa
    autoscaler: {kind: kpa, max_scale: 4}
"""


def test_a_run_imports_only_the_controller_it_builds(tmp_path):
    # The lazy entry still builds its controller: a KPA scenario loads kpa.py and no other.
    path = tmp_path / "kpa.yaml"
    path.write_text(_KPA_SCENARIO)
    loaded = _lazy_loaded("simulate", str(path), "-o", "json", "--out", str(tmp_path / "o.json"))
    assert (tmp_path / "o.json").is_file()
    assert loaded == ["gpuscale.autoscaling.kpa"]


def test_the_simulate_import_parses_no_builtin_signature():
    # pydantic reads each default_factory's signature; `default_factory=list` has it parsed
    # from list's text signature, the first such parse compiling tokenize's patterns (~5 ms).
    # The params models use provisioning.nodes.no_items instead.
    code = ("import sys; from gpuscale.cli import pydantic_plugins; pydantic_plugins.install(); "
            "import gpuscale.cli.simulate; tokenize = sys.modules.get('tokenize'); "
            "print(json.dumps([tokenize is not None and tokenize._compile.cache_info().currsize]),"
            " file=sys.stderr)")
    assert _probe("import json\n" + code, (), 120) == [0]
