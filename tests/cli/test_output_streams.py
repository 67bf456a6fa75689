"""Outputs that are streams are written as a shell redirect writes them, never renamed over:
`--out /dev/stdout | cat` once replaced the system's /dev/stdout link with a regular file
(issue 30). One test per kind of target: absent, regular file, symlink to a regular file,
character device, FIFO, and the standard-stream aliases through /proc and /dev/fd."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from gpuscale.cli.io import check_output_path, is_stream
from gpuscale.outputs import write_atomic, writes_in_place

SCENARIO = Path(__file__).resolve().parents[2] / "examples" / "midnight-spike" / "scenario.yaml"


def test_absent_and_regular_files_are_replaced_by_rename(tmp_path):
    absent = tmp_path / "new.json"
    assert not writes_in_place(absent)
    write_atomic(absent, "a")
    regular = tmp_path / "old.json"
    regular.write_text("old contents")
    inode = regular.stat().st_ino
    assert not writes_in_place(regular)
    write_atomic(regular, "b")
    assert absent.read_text() == "a" and regular.read_text() == "b"
    assert regular.stat().st_ino != inode  # a new file renamed in: readers never see half


def test_a_symlink_to_a_regular_file_is_replaced_not_written_through(tmp_path):
    target = tmp_path / "target.json"
    target.write_text("untouched")
    link = tmp_path / "out.json"
    link.symlink_to(target)
    write_atomic(link, "new")
    assert target.read_text() == "untouched"
    assert link.is_file() and not link.is_symlink() and link.read_text() == "new"


def test_a_character_device_is_written_in_place():
    assert writes_in_place(Path("/dev/null")) and is_stream(Path("/dev/null"))
    write_atomic(Path("/dev/null"), "discarded")
    assert Path("/dev/null").is_char_device()


def _drain(path: Path, into: list[bytes]) -> threading.Thread:
    def read() -> None:
        with open(path, "rb") as handle:
            into.append(handle.read())

    thread = threading.Thread(target=read, daemon=True)
    thread.start()
    return thread


def test_a_fifo_is_written_in_place_and_stays_a_fifo(tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    got: list[bytes] = []
    reader = _drain(fifo, got)
    assert writes_in_place(fifo)
    check_output_path(fifo)  # no --force needed: nothing a user made is replaced
    write_atomic(fifo, "through the pipe")
    reader.join(timeout=10)
    assert got == [b"through the pipe"]
    assert fifo.is_fifo()


def test_a_link_to_a_pipe_through_proc_is_written_into_the_pipe(tmp_path):
    """What /dev/stdout is under `| cat`: a link into /proc/self/fd that names a pipe. The link
    must survive (before the fix it was replaced by a regular file holding the output)."""
    read_fd, write_fd = os.pipe()
    target = f"/proc/self/fd/{write_fd}"
    try:
        link = tmp_path / "stdout"
        link.symlink_to(target)
        assert writes_in_place(link)
        write_atomic(link, "piped")
        os.close(write_fd)
        write_fd = -1
        assert os.read(read_fd, 100) == b"piped"
        assert link.is_symlink() and os.readlink(link) == target
    finally:
        os.close(read_fd)
        if write_fd >= 0:
            os.close(write_fd)


def test_a_stream_alias_redirected_to_a_regular_file_truncates_that_file(tmp_path):
    """`--out /dev/stdout > result.json`: the alias resolves to a regular file, which the shell
    opened; write into it (truncating, as the shell's open did), never replace the alias."""
    redirected = tmp_path / "result.json"
    redirected.write_text("x" * 100)
    with open(redirected, "r+b") as handle:
        alias = Path(f"/dev/fd/{handle.fileno()}")
        assert writes_in_place(alias) and is_stream(alias)
        write_atomic(alias, "short")
    assert redirected.read_text() == "short"


@pytest.mark.skipif(not os.path.islink("/dev/stdout"), reason="/dev/stdout is not a symlink here")
def test_simulate_out_dev_stdout_into_a_pipe_leaves_dev_stdout_alone():
    before = os.readlink("/dev/stdout")
    proc = subprocess.run(
        [sys.executable, "-m", "gpuscale", "simulate", str(SCENARIO), "--strategy", "karpenter",
         "--out", "/dev/stdout", "--format", "json"],
        capture_output=True, timeout=300, check=False)
    assert proc.returncode == 0, proc.stderr.decode()[-2000:]
    assert b'"slo_attainment"' in proc.stdout
    assert os.path.islink("/dev/stdout") and os.readlink("/dev/stdout") == before
