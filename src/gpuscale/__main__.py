"""`python -m gpuscale ...` and the `gpuscale` console script: the CLI (`gpuscale.cli.entry`).

`run` sets the SIGTERM handler and catches Ctrl-C before it imports the CLI, so a signal while
click and the command load (~0.3 s, over 1 s on a loaded machine) ends in the same one line,
exit 2, as one during the command, not in a traceback from whichever import it interrupted.
"""

import signal
import sys

from gpuscale.errors import raise_terminated, stopped_by


def run() -> None:
    signal.signal(signal.SIGTERM, raise_terminated)
    try:
        from gpuscale.cli import entry
    except BaseException as exc:
        if (what := stopped_by(exc)) is None:
            raise
        sys.stderr.write(f"gpuscale: error: stopped by {what} while starting; nothing written\n")
        sys.exit(2)
    entry()


if __name__ == "__main__":
    run()
