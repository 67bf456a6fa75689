"""The expr-lang syntax of KEDA's `scalingModifiers.formula`: tokens and a syntax tree.

KEDA compiles the formula with expr-lang (github.com/expr-lang/expr, the version KEDA vendors;
read at v1.17.8+ `parser/lexer/state.go`, `parser/parser.go`, `parser/operator/operator.go`).
This parser follows that grammar for the subset scaling formulas use and names every other
construct it meets (`FormulaRefused`), so nothing is approximated silently:

- numbers (`12`, `1_000`, `0x1f`, `0b101`, `0o17`, `2.5`, `1e3`, `.5`), `true`, `false`, `nil`,
  identifiers (trigger names and `let` variables);
- unary `-` `+` `!` `not`; binary `**` `^` (right-associative), `*` `/` `%`, `+` `-`,
  `<` `>` `<=` `>=` (chained: `1 < a < 3` is `1 < a && a < 3`), `==` `!=`, `and` `&&`,
  `or` `||`, `??` (binds tightest, and mixing it with another operator without parentheses
  is an error, as in expr-lang); the ternary `c ? a : b` and `c ?: b`;
  `if c { a } else { b }`; `let x = e; body`; `a; b` sequences; parentheses;
- array literals `[a, b]` and calls, with the predicate forms `{# > 1}` of expr-lang's
  builtins (the names the evaluator supports are in formula.py).

Precedences and associativity are expr-lang's table (operator.go): `??` 500, `**`/`^` 100,
unary `-`/`+` 90, `*`/`/`/`%` 60, unary `!`/`not` 50, `+`/`-` 30, comparisons 20, `and` 15,
`or` 10.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, NoReturn

# Binary operators: precedence, right-associative (parser/operator/operator.go).
BINARY: dict[str, tuple[int, bool]] = {
    "or": (10, False), "||": (10, False), "and": (15, False), "&&": (15, False),
    "==": (20, False), "!=": (20, False), "<": (20, False), ">": (20, False),
    ">=": (20, False), "<=": (20, False),
    "+": (30, False), "-": (30, False), "*": (60, False), "/": (60, False), "%": (60, False),
    "**": (100, True), "^": (100, True), "??": (500, False),
}
UNARY = {"not": 50, "!": 50, "-": 90, "+": 90}
COMPARISONS = frozenset({"<", ">", "<=", ">="})
# expr-lang operators and keywords outside the simulated subset, named when met.
REFUSED_OPERATORS = {
    "in": "the `in` operator", "matches": "the `matches` operator",
    "contains": "the `contains` operator", "startsWith": "the `startsWith` operator",
    "endsWith": "the `endsWith` operator", "..": "the range operator `..`",
    "|": "the pipe operator `|`", ".": "member access `.`", "?.": "optional chaining `?.`",
    "::": "the `::` builtin prefix",
}
_KEYWORDS = frozenset({"not", "in", "or", "and", "matches", "contains", "startsWith",
                       "endsWith", "let", "if", "else"})


class FormulaError(ValueError):
    """The formula is invalid as KEDA would find it (a syntax or type error, an unknown name)."""


class FormulaRefused(FormulaError):
    """Valid expr-lang, but a construct outside the simulated subset; the message names it."""


@dataclass(frozen=True)
class Token:
    kind: str  # number, ident, op, bracket, string, eof
    text: str
    pos: int


# --- syntax tree -------------------------------------------------------------------------
@dataclass(frozen=True)
class Num:
    value: int | float


@dataclass(frozen=True)
class Const:
    value: bool | None  # true, false, nil


@dataclass(frozen=True)
class Name:
    name: str


@dataclass(frozen=True)
class Pointer:
    """`#` (the element) or `#index` inside a predicate."""

    name: str


@dataclass(frozen=True)
class Unary:
    op: str
    node: Node


@dataclass(frozen=True)
class Binary:
    op: str
    left: Node
    right: Node


@dataclass(frozen=True)
class Cond:
    cond: Node
    then: Node
    other: Node


@dataclass(frozen=True)
class Call:
    name: str
    args: tuple[Node, ...]


@dataclass(frozen=True)
class Predicate:
    node: Node


@dataclass(frozen=True)
class Array:
    items: tuple[Node, ...]


@dataclass(frozen=True)
class Let:
    name: str
    value: Node
    body: Node


@dataclass(frozen=True)
class Sequence:
    nodes: tuple[Node, ...]


Node = (Num | Const | Name | Pointer | Unary | Binary | Cond | Call | Predicate | Array | Let
        | Sequence)
# Builtins whose second argument is a predicate (parser.go `predicates`); True = optional.
PREDICATE_BUILTINS = {"all": False, "none": False, "any": False, "one": False, "filter": False,
                      "map": False, "count": True, "sum": True, "find": False,
                      "findIndex": False, "findLast": False, "findLastIndex": False,
                      "groupBy": False, "sortBy": False, "reduce": False}


# --- lexer -------------------------------------------------------------------------------
def _is_ident_char(ch: str) -> bool:
    return ch.isalnum() or ch in "_$"


def tokenize(text: str) -> list[Token]:
    """expr-lang's lexer (parser/lexer/state.go) for the tokens a formula may hold."""
    tokens: list[Token] = []
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if ch.isspace():
            i += 1
        elif ch.isdigit() or (ch == "." and i + 1 < n and text[i + 1].isdigit()):
            end = _scan_number(text, i)
            tokens.append(Token("number", text[i:end], i))
            i = end
        elif ch in "'\"`":
            raise FormulaRefused(f"string literal at position {i}: formulas here compute "
                                 "numbers from trigger values")
        elif _is_ident_char(ch):
            end = i
            while end < n and _is_ident_char(text[end]):
                end += 1
            word = text[i:end]
            tokens.append(Token("op" if word in _KEYWORDS else "ident", word, i))
            i = end
        elif ch in "([{)]}":
            tokens.append(Token("bracket", ch, i))
            i += 1
        else:
            i = _operator(text, i, tokens)
    tokens.append(Token("eof", "", n))
    return tokens


def _operator(text: str, i: int, tokens: list[Token]) -> int:
    two = text[i:i + 2]
    if two in ("??", "?.", "**", "==", "!=", "<=", ">=", "&&", "||", "..", "::"):
        tokens.append(Token("op", two, i))
        return i + 2
    if text[i] in "?:,;%+-^*/<>!=#|.&":
        tokens.append(Token("op", text[i], i))
        return i + 1
    raise FormulaError(f"unrecognized character {text[i]!r} at position {i}")


def _scan_number(text: str, i: int) -> int:
    """`scanNumber`: prefix, digits with `_`, a fraction unless `..` follows, an exponent."""
    n, digits, j = len(text), "0123456789_", i
    if text[j] == "0" and j + 1 < n and text[j + 1] in "xXoObB":
        digits = {"x": "0123456789abcdefABCDEF_", "o": "01234567_",
                  "b": "01_"}[text[j + 1].lower()]
        j += 2
    while j < n and text[j] in digits:
        j += 1
    if j < n and text[j] == "." and text[j + 1:j + 2] != ".":
        j += 1
        while j < n and text[j] in digits:
            j += 1
    if j < n and text[j] in "eE":
        j += 1
        if j < n and text[j] in "+-":
            j += 1
        while j < n and text[j] in digits:
            j += 1
    if j < n and _is_ident_char(text[j]):
        raise FormulaError(f"bad number syntax {text[i:j + 1]!r} at position {i}")
    return j


def number_value(text: str) -> int | float:
    """A number token's value: integers are Go int64, anything with `.` or `e` a float64."""
    clean = text.replace("_", "")
    lower = clean.lower()
    try:
        if lower.startswith(("0x", "0b", "0o")):
            value: int | float = int(clean, 0)
        elif "." in lower or "e" in lower:
            value = float(clean)
        else:
            value = int(clean, 10)
    except ValueError:
        raise FormulaError(f"invalid number literal {text!r}") from None
    if isinstance(value, int) and value > 2**63 - 1:
        raise FormulaError(f"integer literal {text} is too large")
    return value


class ScopedVisitor:
    """A walk of the tree by node type (`_num`, `_binary`, ...) with `let` scoping: the checker
    (types) and the evaluator (values) both walk it this way."""

    def __init__(self) -> None:
        self.scope: list[tuple[str, Any]] = []  # let-bound names, innermost last

    def visit(self, node: Node) -> Any:
        return getattr(self, f"_{type(node).__name__.lower()}")(node)

    def bound(self, name: str) -> tuple[bool, Any]:
        """(True, what `let` bound `name` to) in the innermost scope that has it."""
        for bound_name, value in reversed(self.scope):
            if bound_name == name:
                return True, value
        return False, None

    def _let(self, node: Let) -> Any:
        self.scope.append((node.name, self.visit(node.value)))
        try:
            return self.visit(node.body)
        finally:
            self.scope.pop()

    def _sequence(self, node: Sequence) -> Any:
        return [self.visit(n) for n in node.nodes][-1]


# --- parser ------------------------------------------------------------------------------
def parse(text: str) -> Node:
    """The syntax tree of `text` (expr-lang's `Parse`); FormulaError / FormulaRefused if not."""
    return _Parser(tokenize(text)).parse()


class _Parser:
    """`parser.go`'s recursive descent, one method per `parse*` function it mirrors."""

    def __init__(self, tokens: list[Token]):
        self.tokens, self.i, self.depth = tokens, 0, 0

    @property
    def cur(self) -> Token:
        return self.tokens[self.i]

    def advance(self) -> None:
        self.i += 1

    def is_op(self, text: str) -> bool:
        return self.cur.kind == "op" and self.cur.text == text

    def is_bracket(self, text: str) -> bool:
        return self.cur.kind == "bracket" and self.cur.text == text

    def expect(self, kind: str, text: str) -> None:
        if self.cur.kind != kind or self.cur.text != text:
            self.unexpected()
        self.advance()

    def unexpected(self) -> NoReturn:
        tok = self.cur
        shown = "end of formula" if tok.kind == "eof" else repr(tok.text)
        raise FormulaError(f"unexpected token {shown} at position {tok.pos}")

    def parse(self) -> Node:
        node = self.sequence()
        if self.cur.kind != "eof":
            self.unexpected()
        return node

    def sequence(self) -> Node:
        """`parseSequenceExpression`: `a; b; c` evaluates each and yields the last."""
        nodes = [self.expression(0)]
        while self.is_op(";"):
            self.advance()
            if self.cur.kind == "eof":
                break
            nodes.append(self.expression(0))
        return nodes[0] if len(nodes) == 1 else Sequence(tuple(nodes))

    def expression(self, precedence: int) -> Node:
        """`parseExpression`: precedence climbing over BINARY, then the ternary at level 0."""
        if precedence == 0 and self.is_op("let"):
            return self.let()
        if precedence == 0 and self.is_op("if"):
            return self.if_else()
        left, prev = self.primary(), ""
        while self.cur.kind == "op":
            op = self.cur.text
            if op == "not" or op in REFUSED_OPERATORS:
                name = REFUSED_OPERATORS.get(op, "a negated operator (`not in`, ...)")
                raise FormulaRefused(f"{name} at position {self.cur.pos} is not simulated")
            info = BINARY.get(op)
            if info is None or info[0] < precedence:
                break
            self.advance()
            if prev == "??" and op != "??":
                raise FormulaError(f"operator ({op}) and coalesce expressions (??) cannot be "
                                   "mixed; wrap either in parentheses")
            if op in COMPARISONS:
                left = self.comparison(left, op, info[0])
            else:
                right = self.expression(info[0] if info[1] else info[0] + 1)
                left = Binary(op, left, right)
            prev = op
        return self.conditional(left) if precedence == 0 else left

    def comparison(self, left: Node, op: str, precedence: int) -> Node:
        """`parseComparison`: `a < b < c` is `a < b && b < c`."""
        root: Node | None = None
        while True:
            right = self.expression(precedence + 1)
            cmp = Binary(op, left, right)
            root = cmp if root is None else Binary("&&", root, cmp)
            left = right
            if not (self.cur.kind == "op" and self.cur.text in COMPARISONS):
                return root
            op = self.cur.text
            self.advance()

    def conditional(self, node: Node) -> Node:
        """`parseConditional`: `c ? a : b` (right-nested) and the short `c ?: b`."""
        while self.is_op("?"):
            self.advance()
            if self.is_op(":"):
                self.advance()
                node = Cond(node, node, self.expression(0))
            else:
                then = self.expression(0)
                self.expect("op", ":")
                node = Cond(node, then, self.expression(0))
        return node

    def primary(self) -> Node:
        tok = self.cur
        if tok.kind == "op" and tok.text in UNARY:
            self.advance()
            return self.postfix(Unary(tok.text, self.expression(UNARY[tok.text])))
        if self.is_bracket("("):
            self.advance()
            node = self.sequence()
            self.expect("bracket", ")")
            return self.postfix(node)
        if self.depth > 0 and tok.kind == "op" and tok.text == "#":
            self.advance()
            name = ""
            if self.cur.kind == "ident":
                name = self.cur.text
                self.advance()
            return self.postfix(Pointer(name))
        return self.secondary()

    def secondary(self) -> Node:
        tok = self.cur
        if tok.kind == "number":
            self.advance()
            return Num(number_value(tok.text))
        if tok.kind == "ident":
            self.advance()
            if tok.text in ("true", "false", "nil"):
                return Const(None if tok.text == "nil" else tok.text == "true")
            return self.postfix(self.call(tok.text) if self.is_bracket("(") else Name(tok.text))
        if self.is_bracket("["):
            return self.postfix(self.array())
        if self.is_bracket("{"):
            raise FormulaRefused(f"map literal at position {tok.pos} is not simulated")
        if tok.kind == "op" and tok.text in REFUSED_OPERATORS:
            raise FormulaRefused(f"{REFUSED_OPERATORS[tok.text]} at position {tok.pos} is "
                                 "not simulated")
        self.unexpected()

    def postfix(self, node: Node) -> Node:
        """Member access, indexing and slicing follow a value in expr-lang: none is simulated."""
        if self.cur.kind == "op" and self.cur.text in (".", "?."):
            raise FormulaRefused(f"{REFUSED_OPERATORS[self.cur.text]} at position "
                                 f"{self.cur.pos} is not simulated")
        if self.is_bracket("["):
            raise FormulaRefused(f"indexing or slicing `[...]` at position {self.cur.pos} "
                                 "is not simulated")
        return node

    def call(self, name: str) -> Call:
        """`parseCall`: a predicate builtin takes `(array, predicate)`, others plain args."""
        self.expect("bracket", "(")
        args: list[Node] = []
        if name in PREDICATE_BUILTINS:
            args.append(self.expression(0))
            if not (PREDICATE_BUILTINS[name] and self.is_bracket(")")):
                self.expect("op", ",")
                args.append(self.predicate())
            if self.is_op(","):
                self.advance()
        else:
            while not self.is_bracket(")"):
                if args:
                    self.expect("op", ",")
                    if self.is_bracket(")"):
                        break
                args.append(self.expression(0))
        self.expect("bracket", ")")
        return Call(name, tuple(args))

    def predicate(self) -> Predicate:
        """`parsePredicate`: `{ ... }` or a bare expression, where `#` is the element."""
        braced = self.is_bracket("{")
        if braced:
            self.advance()
        self.depth += 1
        node = self.sequence() if braced else self.expression(0)
        self.depth -= 1
        if braced:
            self.expect("bracket", "}")
        return Predicate(node)

    def array(self) -> Array:
        self.expect("bracket", "[")
        items: list[Node] = []
        while not self.is_bracket("]"):
            if items:
                self.expect("op", ",")
                if self.is_bracket("]"):
                    break
            items.append(self.expression(0))
        self.expect("bracket", "]")
        return Array(tuple(items))

    def let(self) -> Let:
        """`parseVariableDeclaration`: `let name = value; body`."""
        self.advance()
        if self.cur.kind != "ident":
            self.unexpected()
        name = self.cur.text
        self.advance()
        self.expect("op", "=")
        value = self.expression(0)
        self.expect("op", ";")
        return Let(name, value, self.sequence())

    def if_else(self) -> Cond:
        """`parseConditionalIf`: `if c { a } else { b }` / `else if ...`."""
        self.advance()
        cond = self.expression(0)
        self.expect("bracket", "{")
        then = self.sequence()
        self.expect("bracket", "}")
        self.expect("op", "else")
        if self.is_op("if"):
            return Cond(cond, then, self.if_else())
        self.expect("bracket", "{")
        other = self.sequence()
        self.expect("bracket", "}")
        return Cond(cond, then, other)
