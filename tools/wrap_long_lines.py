"""Re-wrap lines over the ruff line length (E501) without reformatting whole files.

For each file given (default: every file under src/ and tests/ that ruff reports E501 for):
1. statements holding a long line are re-wrapped with `ruff format --range` (only that
   statement: the rest of the file keeps its hand layout);
2. what the formatter cannot split is wrapped here: a one-line docstring, a `#` comment, or a
   line that is one string literal (optionally `name="..."`), split at spaces outside `{...}`
   into implicitly concatenated literals (the value is unchanged);
3. the rest is printed as `path:line` for a hand fix (module docstrings, multi-line strings).

Run from the repository root: `python tools/wrap_long_lines.py [FILE ...]`, then
`ruff check src tests` and the suite. Model docstrings feed docs/scenario.md (their first
line), so `tests/scenario/test_docs_current.py` catches a docstring split mid-sentence.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys

RUFF = shutil.which("ruff") or "ruff"


def _limit() -> int:
    """The configured line length (`line-length` in pyproject.toml's [tool.ruff])."""
    with open("pyproject.toml") as f:
        m = re.search(r"^line-length\s*=\s*(\d+)", f.read(), re.MULTILINE)
    return int(m.group(1)) if m else 88


def _long_lines(path: str) -> list[int]:
    out = subprocess.run([RUFF, "check", "--select", "E501", "--output-format", "concise", path],
                         capture_output=True, text=True).stdout
    return sorted({int(line.split(":")[1]) for line in out.splitlines() if " E501 " in line},
                  reverse=True)


def _split_words(text: str, width: int) -> list[str]:
    """Chunks of at most `width` characters, cut after spaces that are outside `{...}`."""
    tokens, token, depth = [], "", 0
    for ch in text:
        token += ch
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth = max(0, depth - 1)
        elif ch == " " and depth == 0:
            tokens.append(token)
            token = ""
    if token:
        tokens.append(token)
    chunks, current = [], ""
    for token in tokens:
        if current and len(current) + len(token.rstrip()) > width:
            chunks.append(current)
            current = token
        else:
            current += token
    if current:
        chunks.append(current)
    return chunks


_DOCSTRING = re.compile(r'^(\s*)"""(.*)"""$')
_COMMENT = re.compile(r"^(\s*)# (.*)$")
_LITERAL = re.compile(r'^(\s*)(\w+=)?(f?)"((?:[^"\\]|\\.)*)"(,?)(\)?)$')


def _wrap(line: str, limit: int) -> list[str] | None:
    if (m := _DOCSTRING.match(line)) and '"""' not in m.group(2):
        indent, text = m.groups()
        return [indent + c.rstrip() for c in _split_words(f'"""{text}"""', limit - len(indent))]
    if m := _COMMENT.match(line):
        indent, text = m.groups()
        return [indent + "# " + c.rstrip() for c in _split_words(text, limit - len(indent) - 2)]
    if m := _LITERAL.match(line):
        indent, key, f, body, comma, close = m.groups()
        if key and not (comma or close):
            # `name="..."` continued by literals on the next lines: keep that layout.
            chunks = _split_words(body, limit - len(indent) - len(key) - 3)
            if len(chunks) < 2:
                return None
            literals = [("f" if f and "{" in c else "") + f'"{c}"' for c in chunks]
            return [indent + key + literals[0], *(indent + lit for lit in literals[1:])]
        inner = indent + ("    " if key else "")
        chunks = _split_words(body, limit - len(inner) - 4)
        if len(chunks) < 2 and key:
            chunks = _split_words(body, len(body) // 2 + 8)
        if len(chunks) < 2:
            return None
        literals = [inner + ("f" if f and "{" in c else "") + f'"{c}"' for c in chunks]
        if key:
            return [f"{indent}{key}(", *literals, f"{indent}){comma}{close}"]
        literals[-1] += comma + close
        return literals
    return None


def wrap_file(path: str, limit: int) -> list[str]:
    """Wrap `path` in place; returns the `path:line` left for a hand fix."""
    for n in _long_lines(path):
        subprocess.run([RUFF, "format", "--range", f"{n}:1-{n}:{limit * 4}", path],
                       capture_output=True, check=False)
    with open(path) as f:
        lines = f.read().split("\n")
    left = []
    for n in _long_lines(path):
        new = _wrap(lines[n - 1], limit)
        if new is None or any(len(x) > limit for x in new):
            left.append(f"{path}:{n}")
            continue
        lines[n - 1:n] = new
    with open(path, "w") as f:
        f.write("\n".join(lines))
    return sorted(left)


def main(argv: list[str]) -> int:
    limit = _limit()
    files = argv or sorted({line.split(":")[0] for line in subprocess.run(
        [RUFF, "check", "--select", "E501", "--output-format", "concise", "src", "tests"],
        capture_output=True, text=True).stdout.splitlines() if " E501 " in line})
    left = [where for path in files for where in wrap_file(path, limit)]
    for where in left:
        print(f"{where}: over {limit} columns, wrap by hand")
    return 1 if left else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
