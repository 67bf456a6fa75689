"""Just enough PromQL reading for audits: metric names, label matchers, one series or many.

Not a parser: queries are scanned with regular expressions and a parenthesis walk. It can be
fooled by unusual spellings; a rule built on it says what it assumed in its message.
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass

AGGREGATORS = {"sum", "avg", "max", "min", "count", "stddev", "stdvar", "group", "quantile"}
COLLAPSING_CALLS = {"scalar", "vector", "absent", "absent_over_time"}
KEYWORDS = {"by", "without", "on", "ignoring", "group_left", "group_right", "bool", "and", "or",
            "unless", "offset", "inf", "nan", "atan2"}
_STRING_RE = re.compile(r'"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\'|`[^`]*`')
_IDENT_RE = re.compile(r"[A-Za-z_:][A-Za-z0-9_:.]*")
# Every pattern that starts with an identifier may only start where one starts (the
# lookbehind): otherwise a failed match is retried from each of its characters, quadratic in
# its length (a 100k-character identifier hung the audit).
_SELECTOR_RE = re.compile(r"(?<![A-Za-z0-9_:])([A-Za-z_:][A-Za-z0-9_:]*)\s*\{([^}]*)\}")
_MATCHER_RE = re.compile(r"(?<![A-Za-z0-9_])([A-Za-z_][A-Za-z0-9_]*)\s*(=~|!~|!=|=)\s*"
                         r"(\"(?:[^\"\\]|\\.)*\"|'[^']*')")
_WORD_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_")


@dataclass(frozen=True)
class Selector:
    metric: str
    labels: dict  # label -> (operator, value)


def selectors(query: str) -> list[Selector]:
    """Every `metric{...}` and bare metric name in the query, in order of appearance."""
    out: list[Selector] = []
    seen_spans: list[tuple[int, int]] = []
    for match in _SELECTOR_RE.finditer(query):
        labels = {
            m.group(1): (m.group(2), m.group(3)[1:-1]) for m in _MATCHER_RE.finditer(match.group(2))
        }
        out.append(Selector(match.group(1), labels))
        seen_spans.append(match.span())
    bare = _strip(query)
    starts = [a for a, _ in seen_spans]  # in order: finditer yields spans left to right
    names = {s.metric for s in out}
    for match in _IDENT_RE.finditer(bare):
        name = match.group(0)
        index = bisect.bisect_right(starts, match.start()) - 1
        inside = index >= 0 and match.start() < seen_spans[index][1]
        if not inside and name not in names and _is_metric_token(bare, match):
            names.add(name)
            out.append(Selector(name, {}))
    return out


def metric_names(query: str) -> list[str]:
    return [s.metric for s in selectors(query)]


def _strip(query: str) -> str:
    """Blank out strings, label matchers and range/offset brackets, keeping offsets stable."""
    text = _STRING_RE.sub(lambda m: " " * len(m.group(0)), query)
    text = re.sub(r"\{[^}]*\}", lambda m: " " * len(m.group(0)), text)
    return re.sub(r"\[[^\]]*\]", lambda m: " " * len(m.group(0)), text)


def _is_metric_token(text: str, match: re.Match) -> bool:
    name = match.group(0)
    if name.lower() in KEYWORDS or re.fullmatch(r"\d.*", name):
        return False
    after = _skip_space(text, match.end())
    if text.startswith("(", after):  # a function or aggregation call
        return False
    # inside a `by (...)` / `without (...)` / `on (...)` label list
    depth_open = text.rfind("(", 0, match.start())
    if depth_open >= 0 and text.find(")", depth_open, match.start()) < 0:
        word, _ = _word_before(text, depth_open)
        if word in ("by", "without", "on", "ignoring", "group_left", "group_right"):
            return False
    return not (name.lower() in AGGREGATORS and _GROUPING_WORD_RE.match(text, after))


_GROUPING_WORD_RE = re.compile(r"(by|without)\b")
_GROUPING_RE = re.compile(r"\s*(by|without)\s*\(([^)]*)\)")


def _skip_space(text: str, pos: int) -> int:
    while pos < len(text) and text[pos].isspace():
        pos += 1
    return pos


def _skip_space_back(text: str, pos: int) -> int:
    """Index just past the last non-space character before `pos`."""
    while pos > 0 and text[pos - 1].isspace():
        pos -= 1
    return pos


def _pairs(text: str) -> dict[int, int]:
    stack, pairs = [], {}
    for i, ch in enumerate(text):
        if ch == "(":
            stack.append(i)
        elif ch == ")" and stack:
            pairs[stack.pop()] = i
    return pairs


def _word_before(text: str, pos: int) -> tuple[str, int]:
    """The identifier (lower-cased) ending just before `pos`, blanks skipped, and its start;
    a backward scan, linear in the word (an end-anchored regex search is quadratic)."""
    end = _skip_space_back(text, pos)
    start = end
    while start > 0 and text[start - 1] in _WORD_CHARS:
        start -= 1
    while start < end and text[start].isdigit():  # an identifier does not start with a digit
        start += 1
    return (text[start:end].lower(), start) if start < end else ("", pos)


def _grouping_before(text: str, pos: int) -> tuple[str, str, int] | None:
    """(`by`|`without`, label list text, start) of a `by (...)` ending just before `pos`."""
    end = _skip_space_back(text, pos)
    if end == 0 or text[end - 1] != ")":
        return None
    open_pos = text.rfind("(", 0, end - 1)
    if open_pos < 0 or text.find(")", open_pos, end - 1) >= 0:
        return None
    word, start = _word_before(text, open_pos)
    return (word, text[open_pos + 1:end - 1], start) if word in ("by", "without") else None


def _grouping(
    text: str, open_pos: int, close_pos: int, pairs: dict[int, int]
) -> tuple[str, set] | None:
    """(`by`|`without`, labels) of the aggregation whose argument parens are given, or None."""
    after = _GROUPING_RE.match(text, close_pos + 1)
    if after:
        return after.group(1), {x.strip() for x in after.group(2).split(",") if x.strip()}
    before = _grouping_before(text, open_pos)
    if before:
        return before[0], {x.strip() for x in before[1].split(",") if x.strip()}
    return None


def _caller(text: str, open_pos: int) -> str:
    """The function or aggregation whose argument list opens at `open_pos` (`sum` in
    `sum by (x) (...)`), or ''."""
    grouping = _grouping_before(text, open_pos)
    return _word_before(text, grouping[2] if grouping else open_pos)[0]


def returns_one_series(query: str) -> bool:
    """True when every selector sits inside an aggregation that keeps no per-pod label.

    `sum(x)`, `max(rate(x[1m]))`, `histogram_quantile(0.9, sum by (le) (rate(x[5m])))` and
    `sum(a) / sum(b)` return one series; `x`, `avg by (pod) (x)` and `rate(x[1m])` do not.
    """
    text = _strip(query)
    pairs = _pairs(text)
    metric_positions = [m.start() for m in _IDENT_RE.finditer(text) if _is_metric_token(text, m)]
    if not metric_positions:
        return True  # a constant
    # Which argument lists collapse to one series: decided once per pair, not per metric.
    collapsing = []
    for open_pos, close_pos in pairs.items():
        caller = _caller(text, open_pos)
        if caller in COLLAPSING_CALLS:
            collapsing.append((open_pos, close_pos))
        elif caller in AGGREGATORS:
            grouping = _grouping(text, open_pos, close_pos, pairs)
            if grouping is None or (grouping[0] == "by" and grouping[1] <= {"le"}):
                collapsing.append((open_pos, close_pos))
    return all(any(a < pos < b for a, b in collapsing) for pos in metric_positions)


def top_level_aggregator(query: str) -> str:
    """The aggregation applied last (`avg` in `avg(x)`), or '' when there is none."""
    text = _strip(query).strip()
    match = re.match(r"([A-Za-z_]+)\s*(?:(?:by|without)\s*\([^)]*\)\s*)?\(", text)
    if not match:
        return ""
    pairs = _pairs(text)
    open_pos = match.end() - 1
    if pairs.get(open_pos, -1) < len(text.rstrip()) - 1 and not re.fullmatch(
            r"\s*(by|without)\s*\([^)]*\)\s*", text[pairs.get(open_pos, 0) + 1:]):
        return ""  # something follows the call, e.g. `sum(a) / sum(b)`
    return match.group(1).lower()
