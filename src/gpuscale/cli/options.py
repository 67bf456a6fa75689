"""Options every command spells the same way, as kubectl does.

`-o/--output` (with `--format` kept as an alias) takes one vocabulary: `table` (the human
view; `text` is accepted for it), `json` and `yaml`, plus what a command adds (`sarif` for
audit). `-` as a file argument reads stdin (`StdinPath`). Defaults can come from
`.gpuscale.yaml` (cli/config.py).
"""

from __future__ import annotations

import io
import json
import math
from pathlib import Path

import click

OUTPUT_FORMATS = ("table", "json", "yaml")

# Ceilings of the numeric options, so a huge number is one line, not an OverflowError or a
# machine taken over (issue 30). Inputs are held in memory: 4 GiB is past any manifest bundle
# or cluster dump (the default limit is 16 MiB, gpuscale/inputs.py). Worker processes: more
# than 256 on one machine only thrash. A tensor-parallel size: the scenario's own bound.
MAX_INPUT_BYTES = 4 * 2**30
MAX_WORKERS = 256
MAX_TP = 64
MAX_TIME_BUDGET_S = 7 * 86_400.0
# An engine's sequence and token budgets: vLLM's defaults are 256-1024 sequences and 2-16 k
# tokens; 65,536 sequences and the 10 M-token longest context (calibration/fit_bench.py
# MAX_LENGTH_TOKENS) bound every real server.
MAX_NUM_SEQS = 65_536
MAX_BATCH_TOKENS = 10_000_000


class FiniteFloatRange(click.FloatRange):
    """A FloatRange that refuses nan and inf (FloatRange lets nan through: every comparison
    with nan is false, so `--time-budget-s nan` ran without a budget)."""

    def convert(self, value, param, ctx):
        number = super().convert(value, param, ctx)
        if not math.isfinite(number):
            self.fail(f"{value!r} is not a finite number", param, ctx)
        return number
ALIASES = {"text": "table"}


class OutputFormat(click.Choice):
    """A Choice that folds the old spelling `text` into `table`."""

    def convert(self, value, param, ctx):
        if isinstance(value, str) and value.lower() in ALIASES:
            value = ALIASES[value.lower()]
        return super().convert(value, param, ctx)


def output_option(*extra: str, default: str = "table", help_text: str = ""):
    """`-o/--output/--format`: table | json | yaml (| extra)."""
    choices = OutputFormat([*OUTPUT_FORMATS, *extra], case_sensitive=False)
    return click.option("-o", "--output", "--format", "fmt", type=choices, default=default,
                        show_default=True,
                        help=help_text or "table for people; json or yaml for machines.")


def json_text_as(fmt: str, text: str) -> str:
    """The JSON document `text` as YAML when `fmt` is yaml (same keys, same order)."""
    if fmt != "yaml":
        return text
    import yaml

    return yaml.safe_dump(json.loads(text), sort_keys=False, allow_unicode=True)


class StdinPath:
    """Stands in for a `Path` when a file argument is `-`: read once from stdin, relative
    paths inside resolve from the working directory, and messages name it `<stdin>`."""

    def __init__(self) -> None:
        self._text: str | None = None
        self.parent = Path(".")
        self.name = "<stdin>"
        self.suffix = ""

    def _read(self) -> str:
        if self._text is None:  # capped like every input (gpuscale/inputs.py)
            from gpuscale.inputs import read_text

            self._text = read_text("-")
        return self._text

    def exists(self) -> bool:
        return True

    def is_dir(self) -> bool:
        return False

    def is_file(self) -> bool:
        return True

    def read_text(self, encoding: str = "utf-8", errors: str | None = None) -> str:
        return self._read()

    def read_bytes(self) -> bytes:
        return self._read().encode("utf-8")

    def open(self, mode: str = "r", *args, **kwargs):
        return io.BytesIO(self.read_bytes()) if "b" in mode else io.StringIO(self._read())

    def stat(self):
        class _Stat:
            st_size = len(self.read_bytes())
        return _Stat()

    def __str__(self) -> str:
        return "<stdin>"

    def __fspath__(self) -> str:
        return "-"  # what gpuscale.inputs reads as stdin


def input_path(value: Path | str) -> Path:
    """`-` -> StdinPath(); anything else a Path."""
    return StdinPath() if str(value) == "-" else Path(value)  # type: ignore[return-value]


def scenario_file_argument(scenario_file: Path | None, trace: Path | None,
                           emit: Path | None) -> Path:
    """simulate/compare without --manifests: SCENARIO_FILE is required (`-` = stdin), and
    the manifest-only options are refused."""
    if scenario_file is None:
        raise click.UsageError(
            "Missing argument 'SCENARIO_FILE' (or give --manifests PATH --trace FILE).")
    if trace is not None or emit is not None:
        raise click.UsageError("--trace and --emit-scenario go with --manifests")
    return input_path(scenario_file)
