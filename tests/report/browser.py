"""Drive Debian's headless Chromium from a test: dump the DOM after scripts ran, screenshot,
and collect console messages (Chromium logs every console call and uncaught error to stderr as
`INFO:CONSOLE` lines when started with --enable-logging=stderr)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

ARTIFACTS = Path(__file__).resolve().parents[1] / "artifacts"
CANDIDATES = ("chromium", "chromium-browser", "google-chrome", "chrome")


def chromium_or_skip() -> str:
    for name in CANDIDATES:
        path = shutil.which(name)
        if path:
            return path
    pytest.skip("headless Chromium not installed (Debian package `chromium`; .ci/run installs it)")


def _run(binary: str, page: Path, profile: Path, *extra: str) -> subprocess.CompletedProcess:
    args = [binary, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
            "--disable-dev-shm-usage", "--hide-scrollbars", f"--user-data-dir={profile}",
            # Virtual time runs the page's scripts and layout to completion before dumping.
            "--virtual-time-budget=5000", "--enable-logging=stderr", "--v=0", *extra,
            page.resolve().as_uri()]
    return subprocess.run(args, capture_output=True, text=True, timeout=120, check=False)


def load_page(page: Path, tmp: Path) -> tuple[str, list[str]]:
    """(DOM after the page's scripts ran, console lines)."""
    result = _run(chromium_or_skip(), page, tmp / "profile", "--dump-dom")
    if result.returncode != 0 or "<html" not in result.stdout:
        raise AssertionError(f"chromium failed ({result.returncode}): {result.stderr[-2000:]}")
    return result.stdout, console_lines(result.stderr)


def console_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if ":CONSOLE" in line]


def screenshot(page: Path, out: Path, tmp: Path, *, height: int) -> Path:
    out.parent.mkdir(parents=True, exist_ok=True)
    result = _run(chromium_or_skip(), page, tmp / "profile-shot", f"--screenshot={out}",
                  f"--window-size=1040,{height}")
    if not out.exists():
        raise AssertionError(f"no screenshot: {result.stderr[-2000:]}")
    return out
