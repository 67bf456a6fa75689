"""Ending the `gpuscale` process without the interpreter's teardown, when nothing can be lost.

After the command returns, CPython's shutdown still wipes every module and frees every object
left (a `simulate` leaves the whole simulator, its pydantic schemas and numpy): ~0.02 CPU-s of
the issue 16 scenario's ~1.1 s, only to hand back memory the OS takes back anyway. mypy ends
its process the same way (`os._exit` once its output is flushed).

What a normal exit does that a user could see is done first, in its order (Py_FinalizeEx):
the `atexit` handlers (logging's flush, `weakref.finalize` callbacks such as a
`TemporaryDirectory`'s clean-up, coverage's data file, multiprocessing's children), then
stdout and stderr flushed. Every file gpuscale writes is closed by its `with` block before
the command returns. The normal exit is kept whenever this cannot promise the same:

- a flush fails (a closed pipe: `gpuscale ... | head`): the interpreter reports it as always
  (and exits 120);
- another thread is alive (the interpreter would join a non-daemon one first);
- a tracer or profiler is attached (`python -m cProfile -m gpuscale` prints after the
  command returns; coverage, pdb), `python -i`/PYTHONINSPECT (the prompt comes after), or
  `-X dev` (its shutdown warnings);
- the exit status is not a number from 0 to 255 (SystemExit("message") prints the message).

Only the process entry (`cli.entry`: the console script, `python -m gpuscale`) calls this;
`cli.main(argv)` returns to its caller (tests, bench/) as before.
"""

from __future__ import annotations

import os
import sys


def can_skip_teardown() -> bool:
    """Whether nothing a user could see depends on the interpreter's own shutdown."""
    if sys.gettrace() is not None or sys.getprofile() is not None:
        return False
    if sys.flags.inspect or sys.flags.interactive or sys.flags.dev_mode:
        return False
    if os.environ.get("PYTHONINSPECT"):  # may be set while running; read again at exit
        return False
    threading = sys.modules.get("threading")
    return threading is None or threading.active_count() == 1


def exit_process(code: object) -> None:
    """End the process with `code` (a SystemExit code). Skips the teardown when
    `can_skip_teardown()`; otherwise, or when a flush fails, raises SystemExit(code) for the
    interpreter's normal exit."""
    if code is None:
        code = 0
    if isinstance(code, int) and 0 <= code <= 255 and can_skip_teardown():
        import atexit

        run_exitfuncs = getattr(atexit, "_run_exitfuncs", None)
        if run_exitfuncs is not None:
            run_exitfuncs()  # runs each handler once and clears them (CPython)
            try:
                for stream in (sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__):
                    if stream is not None:
                        stream.flush()
            except Exception:  # the normal exit reports it, as it always did
                raise SystemExit(code) from None
            os._exit(code)
    raise SystemExit(code)
