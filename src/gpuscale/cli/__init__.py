"""The `gpuscale` command: one thin module per subcommand (parse, one library call, print).

Subcommands are imported lazily, so `gpuscale audit` never pays for the simulator's imports.
To add one: write `cli/<name>.py` exposing a click command named `command`, and list it in
`SUBCOMMANDS`. Only this package writes files or reads the wall clock.
"""

from __future__ import annotations

import gc
import importlib
import os
import sys

import click

from gpuscale import __version__
from gpuscale.errors import GpuscaleError

# True once main() runs as the process's entry (see main): the process ends with the command.
_PROCESS_ENTRY = [False]

# name -> (module, one-line help shown by `gpuscale --help`)
SUBCOMMANDS: dict[str, tuple[str, str]] = {
    "calibrate": (
        "gpuscale.cli.calibrate",
        "Compare the performance model with published numbers.",
    ),
    "demo": ("gpuscale.cli.demo", "Run the embedded default scenario and compare autoscalers."),
    "simulate": ("gpuscale.cli.simulate", "Simulate one scenario file."),
    "compare": ("gpuscale.cli.compare", "Run every strategy of a scenario on the same workload."),
    "backtest": (
        "gpuscale.cli.backtest",
        "Replay manifests on a Prometheus history: agreement first, then alternatives.",
    ),
    "plan": (
        "gpuscale.cli.plan",
        "Design a three-layer autoscaling plan: decisions, manifests, evidence.",
    ),
    "audit": ("gpuscale.cli.audit", "Report GPU autoscaling traps in manifests or a live cluster."),
    "diagnose": (
        "gpuscale.cli.diagnose",
        "Explain why GPU pods are Pending and which layer holds them.",
    ),
    "schedule": ("gpuscale.cli.schedule", "Run a scheduling-only scenario under each scheduler."),
    "report": (
        "gpuscale.cli.report",
        "Draw results or a sweep table into one offline HTML report.",
    ),
    "sweep": ("gpuscale.cli.sweep", "Run a grid of scenario overrides in parallel (local or Ray)."),
}


class LazyGroup(click.Group):
    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(SUBCOMMANDS)

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        if name not in SUBCOMMANDS:
            return None
        if not _PROCESS_ENTRY[0]:
            return _with_distinct_files(importlib.import_module(SUBCOMMANDS[name][0]).command)
        # What the import builds (modules, classes, pydantic schemas: ~50k objects) lives
        # until exit, so collecting while it grows finds nothing (~120 collections, ~0.02 s
        # of simulate's import); frozen after, the full collections during a run have none of
        # it to walk (one, 0.02-0.03 s, on the issue 16 scenario).
        gc.disable()
        try:
            return _with_distinct_files(importlib.import_module(SUBCOMMANDS[name][0]).command)
        finally:
            gc.freeze()
            gc.enable()

    def resolve_command(self, ctx: click.Context, args: list[str]):
        name = args[0] if args else ""
        if name and not name.startswith("-") and name not in SUBCOMMANDS:
            import difflib

            # click.Group says only "No such command"; say which one was meant (click's own
            # "did you mean" habit for options, src/click/exceptions.py).
            close = difflib.get_close_matches(name, sorted(SUBCOMMANDS), n=1, cutoff=0.6)
            if close:
                ctx.fail(f"No such command {name!r}; did you mean {close[0]!r}?")
        return super().resolve_command(ctx, args)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        rows = [(name, SUBCOMMANDS[name][1]) for name in sorted(SUBCOMMANDS)]
        with formatter.section("Commands"):
            formatter.write_dl(rows)

    def invoke(self, ctx: click.Context):
        try:
            try:
                return super().invoke(ctx)
            except OSError as exc:  # writing stdout failed (/dev/full), a file vanished, ...
                from gpuscale.cli.environment import write_failure

                if (error := write_failure(exc)) is None:
                    raise
                raise error from None
            except (GpuscaleError, click.ClickException, click.exceptions.Exit):
                raise
            except BaseException as exc:  # Ctrl-C, SIGTERM (errors.Terminated), or one wrapped
                from gpuscale.cli.environment import stopped_error

                if (stopped := stopped_error(exc)) is None:
                    raise
                raise stopped from None
        except GpuscaleError as exc:
            # One clear line, no traceback; the exit code lives on the exception class. User
            # text in it (names, values, paths) is shown with control characters escaped.
            from gpuscale.outputs import terminal_safe

            click.echo(f"gpuscale: error: {terminal_safe(exc)}", err=True)
            ctx.exit(exc.exit_code)
        except click.UsageError as exc:
            # A subcommand's bad option or argument: the same one-line shape (click's own
            # three-line usage block buries the message), exit code 2 as click gives it.
            where = exc.ctx.command_path if exc.ctx else ctx.command_path
            from gpuscale.outputs import terminal_safe

            click.echo(f"gpuscale: error: {terminal_safe(exc.format_message())} "
                       f"(see `{where} --help`)", err=True)
            ctx.exit(exc.exit_code)


def _with_distinct_files(command: click.Command) -> click.Command:
    """`command` refusing, before its work, an output that is another output or one of its
    inputs (cli/distinct_files.py); wrapped once, as the command object is the module's."""
    callback = command.callback
    if callback is None or getattr(callback, "checks_distinct_files", False):
        return command

    def checked(*args, **kwargs):
        from gpuscale.cli.distinct_files import check_distinct_files

        check_distinct_files(command, kwargs)
        return callback(*args, **kwargs)

    checked.checks_distinct_files = True  # type: ignore[attr-defined]
    command.callback = checked
    return command


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="gpuscale")
@click.pass_context
def cli(ctx: click.Context) -> None:
    """Simulate, plan and audit GPU autoscaling for LLM serving on Kubernetes.

    gpuscale reads and renders; it never writes to a cluster. Defaults come from
    .gpuscale.yaml (below GPUSCALE_<COMMAND>_<OPTION> variables and flags).
    """
    name = ctx.invoked_subcommand
    if name in SUBCOMMANDS and not ctx.resilient_parsing:
        from gpuscale.cli.config import defaults_for, find_config
        from gpuscale.cli.environment import check_process, escape_unencodable_output

        escape_unencodable_output()
        check_process()

        from gpuscale.cli.config import check_environment

        command = importlib.import_module(SUBCOMMANDS[name][0]).command
        check_environment(name, command)
        path = find_config()
        if path is not None:
            # click reads a subcommand's default_map from here; flags and the environment
            # still win over it (click's order).
            ctx.default_map = {name: defaults_for(path, name, command, frozenset(SUBCOMMANDS))}


# Thread pools of numpy's BLAS (OpenBLAS in the wheels; MKL or OpenMP builds read the others).
_BLAS_THREAD_VARIABLES = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")


def single_threaded_blas_default(environ=os.environ) -> None:
    """One BLAS thread unless the user chose a count (any of the variables set wins).

    gpuscale's numpy work is small arrays, where a BLAS thread pool only costs: OpenBLAS
    reads these once, when numpy is first imported, and its idle threads spin after each
    call (3 % of `perf` samples on `simulate`, taken from the core the simulation runs on).
    Only the command line sets this, before any subcommand imports numpy; importing the
    library leaves the host program's environment alone.
    """
    if not any(name in environ for name in _BLAS_THREAD_VARIABLES):
        for name in _BLAS_THREAD_VARIABLES:
            environ[name] = "1"


def main(argv: list[str] | None = None) -> None:
    """The `gpuscale` command. Without `argv` it is the process's entry (the console script,
    `python -m gpuscale`) and the process ends with it; callers passing `argv` (tests, bench/)
    keep running, so only the former freezes the collector's long-lived objects (after the
    subcommand's import, and on the way out)."""
    single_threaded_blas_default()
    _PROCESS_ENTRY[0] = argv is None
    if argv is None:  # the process is ours: pydantic's plugin scan without importlib.metadata
        from gpuscale.cli import pydantic_plugins
        from gpuscale.cli.environment import stop_on_sigterm

        pydantic_plugins.install()
        stop_on_sigterm()
    try:
        cli.main(args=argv if argv is not None else sys.argv[1:], prog_name="gpuscale",
                 auto_envvar_prefix="GPUSCALE")
    finally:
        if argv is None:
            # Exiting: the interpreter's shutdown runs a full collection over every object
            # left (a simulate leaves ~50k) only to free memory the OS takes back anyway;
            # 0.05-0.08 CPU-s of `simulate`'s exit on the issue 16 scenario, ~0.02 frozen.
            # Outputs are closed by their `with` blocks; atexit handlers still run.
            gc.freeze()


def entry() -> None:
    """The process's entry (the `gpuscale` console script, `python -m gpuscale`): `main()`,
    then the process ends without the interpreter's teardown where nothing can be lost
    (cli/process_exit.py: atexit handlers run and stdout/stderr are flushed first; ~0.02
    CPU-s of `simulate` on the issue 16 scenario). `main()` itself returns, for callers that
    go on after it."""
    try:
        main()
    except SystemExit as exc:
        code = exc.code
    except BaseException as exc:  # stopped outside a command: starting it (imports), or exiting
        code = _stopped_outside_a_command(exc)
    else:
        code = 0
    from gpuscale.cli.process_exit import exit_process

    exit_process(code)


def _stopped_outside_a_command(exc: BaseException) -> int:
    """Ctrl-C or SIGTERM while the command was imported or the process was exiting: the same
    one line as within a command (nothing was written yet, or all was); anything else raises."""
    from gpuscale.cli.environment import stopped_error

    if (stopped := stopped_error(exc)) is None:
        raise exc
    sys.stderr.write(f"gpuscale: error: {stopped}\n")
    return stopped.exit_code
