"""Just enough PromQL reading for audits: metric names, label matchers, one series or many.

Not a parser: queries are scanned with regular expressions and a parenthesis walk. It can be
fooled by unusual spellings; a rule built on it says what it assumed in its message.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

AGGREGATORS = {"sum", "avg", "max", "min", "count", "stddev", "stdvar", "group", "quantile"}
COLLAPSING_CALLS = {"scalar", "vector", "absent", "absent_over_time"}
KEYWORDS = {"by", "without", "on", "ignoring", "group_left", "group_right", "bool", "and", "or",
            "unless", "offset", "inf", "nan", "atan2"}
_STRING_RE = re.compile(r'"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\'|`[^`]*`')
_IDENT_RE = re.compile(r"[A-Za-z_:][A-Za-z0-9_:.]*")
_SELECTOR_RE = re.compile(r"([A-Za-z_:][A-Za-z0-9_:]*)\s*\{([^}]*)\}")
_MATCHER_RE = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)\s*(=~|!~|!=|=)\s*(\"(?:[^\"\\]|\\.)*\"|'[^']*')")


@dataclass(frozen=True)
class Selector:
    metric: str
    labels: dict  # label -> (operator, value)


def selectors(query: str) -> list[Selector]:
    """Every `metric{...}` and bare metric name in the query, in order of appearance."""
    out: list[Selector] = []
    seen_spans: list[tuple[int, int]] = []
    for match in _SELECTOR_RE.finditer(query):
        labels = {m.group(1): (m.group(2), m.group(3)[1:-1]) for m in _MATCHER_RE.finditer(match.group(2))}
        out.append(Selector(match.group(1), labels))
        seen_spans.append(match.span())
    bare = _strip(query)
    for match in _IDENT_RE.finditer(bare):
        name = match.group(0)
        if _is_metric_token(bare, match) and not any(a <= match.start() < b for a, b in seen_spans):
            if not any(s.metric == name for s in out):
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
    rest = text[match.end():].lstrip()
    if rest.startswith("("):  # a function or aggregation call
        return False
    before = text[:match.start()].rstrip()
    # inside a `by (...)` / `without (...)` / `on (...)` label list
    depth_open = before.rfind("(")
    if depth_open >= 0 and ")" not in text[depth_open:match.start()]:
        word = text[:depth_open].rstrip().split()[-1:] or [""]
        if word[0].lower() in ("by", "without", "on", "ignoring", "group_left", "group_right"):
            return False
    if name.lower() in AGGREGATORS and re.match(r"\s*(by|without)\b", text[match.end():]):
        return False
    return True


def _pairs(text: str) -> dict[int, int]:
    stack, pairs = [], {}
    for i, ch in enumerate(text):
        if ch == "(":
            stack.append(i)
        elif ch == ")" and stack:
            pairs[stack.pop()] = i
    return pairs


def _word_before(text: str, pos: int) -> tuple[str, int]:
    match = re.search(r"([A-Za-z_][A-Za-z0-9_]*)\s*$", text[:pos])
    return (match.group(1).lower(), match.start()) if match else ("", pos)


def _grouping(text: str, open_pos: int, close_pos: int, pairs: dict[int, int]) -> tuple[str, set] | None:
    """(`by`|`without`, labels) of the aggregation whose argument parens are given, or None."""
    after = re.match(r"\s*(by|without)\s*\(([^)]*)\)", text[close_pos + 1:])
    if after:
        return after.group(1), {x.strip() for x in after.group(2).split(",") if x.strip()}
    before = re.search(r"(by|without)\s*\(([^)]*)\)\s*$", text[:open_pos])
    if before:
        return before.group(1), {x.strip() for x in before.group(2).split(",") if x.strip()}
    return None


def _caller(text: str, open_pos: int) -> str:
    before = re.search(r"([A-Za-z_][A-Za-z0-9_]*)\s*(?:(?:by|without)\s*\([^)]*\)\s*)?$", text[:open_pos])
    return before.group(1).lower() if before else ""


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
    for pos in metric_positions:
        collapsed = False
        for open_pos, close_pos in pairs.items():
            if not open_pos < pos < close_pos:
                continue
            caller = _caller(text, open_pos)
            if caller in COLLAPSING_CALLS:
                collapsed = True
            elif caller in AGGREGATORS:
                grouping = _grouping(text, open_pos, close_pos, pairs)
                if grouping is None or (grouping[0] == "by" and grouping[1] <= {"le"}):
                    collapsed = True
        if not collapsed:
            return False
    return True


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
