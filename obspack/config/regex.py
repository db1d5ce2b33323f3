"""Regular expressions in the config, checked with RE2 itself (google-re2), the engine whose syntax
Prometheus' Go regexp shares, and then with the two parsers obspack reads them with (Python's re, for
the shipped tests' label values, and promql-parser's, for every expression).

A refusal names the real problem in words (a lookahead, a backreference, a group never closed, ...) and
never suggests another matcher: a regex stays a regex.
"""

from __future__ import annotations

import functools
import json
import re
import warnings
from typing import Any

import promql_parser

_PROBE = "obspack_probe"
_BACKREFERENCE = re.compile(r"\\[1-9]")
# Unescaped \C (any byte): RE2 in C++ has it, Go's regexp does not.
_ANY_BYTE = re.compile(r"(?<!\\)(?:\\\\)*\\C")
_NAMED_GROUP = re.compile(r"(?<!\\)(?:\\\\)*\(\?<(?![=!])")
_GROUPS = {
    "(?=": "a lookahead (?=...)",
    "(?!": "a negative lookahead (?!...)",
    "(?<=": "a lookbehind (?<=...)",
    "(?<!": "a negative lookbehind (?<!...)",
    "(?>": "an atomic group (?>...)",
    "(?#": "a comment (?#...)",
}
_ENGINE = "RE2, Prometheus' regex engine"
_FLAGS = re.compile(r"\(\?[imsU-]*")


def _repetition(arg: str) -> str:
    numbers = [int(n) for n in re.findall(r"\d+", arg)]
    if len(numbers) == 2 and numbers[0] > numbers[1]:
        return f"the repetition {arg} has its minimum above its maximum"
    if any(n > 1000 for n in numbers):
        return f"the repetition {arg} is over RE2's limit of 1000"
    return f"nested repetitions ({arg} inside another) repeat more than 1000 times in all, over RE2's limit"


def _perl_operator(arg: str) -> str:
    for start, what in _GROUPS.items():
        if arg.startswith(start):
            return f"{what} is not supported by {_ENGINE}"
    if arg.startswith("(?P="):
        return f"a named backreference (?P=...) is not supported by {_ENGINE}"
    if _FLAGS.fullmatch(arg):
        return f"the flag group {arg} is never closed (missing ))"
    return f"{arg} starts a group RE2 does not know (it knows (?:...), (?P<name>...) and the flags i, m, s, U)"


def _escape(arg: str) -> str:
    if _BACKREFERENCE.fullmatch(arg):
        return f"a backreference ({arg}) is not supported by {_ENGINE}"
    if arg == "\\Z":
        return f"\\Z is not supported by {_ENGINE} (leave it out: Prometheus anchors a regex at both ends)"
    return f"{arg} is not an escape RE2 knows"


def _class_range(arg: str) -> str:
    if arg.startswith("[:"):
        return f"{arg} is not a character class RE2 knows (e.g. [:alpha:], [:digit:])"
    if arg.startswith(("\\p", "\\P")):
        return f"{arg} is not a Unicode class RE2 knows (e.g. \\p{{L}}, \\p{{Greek}})"
    return f"the range {arg} in a character class runs backwards"


# RE2's error codes, as its messages start, and the problem in words.
_REASONS = {
    "missing )": lambda arg: "a group is opened with ( and never closed (missing ))",
    "unexpected )": lambda arg: "a ) closes no group (unbalanced parenthesis)",
    "missing ]": lambda arg: f"the character class {arg} is never closed (missing ])",
    "invalid perl operator": _perl_operator,
    "invalid escape sequence": _escape,
    "trailing \\": lambda arg: "it ends with a lone backslash (write \\\\ for a backslash)",
    "no argument for repetition operator": lambda arg: f"{arg} has nothing before it to repeat (for any text write .*)",
    "missing argument to repetition operator": lambda arg: f"{arg} has nothing before it to repeat (for any text write .*)",
    "bad repetition operator": lambda arg: f"{arg} repeats a repetition, which RE2 does not allow (write one operator)",
    "invalid repetition size": _repetition,
    "invalid character class range": _class_range,
    "invalid character class": lambda arg: f"the character class {arg} is not valid",
    "invalid named capture group": lambda arg: f"the group name in {arg} is not valid (letters, digits and _)",
    "pattern too large - compile failed": lambda arg: "it is too large for RE2 once compiled (fewer or smaller repetitions)",
}


def _re2_reason(message: str) -> str:
    code, _, arg = message.partition(": ")
    describe = _REASONS.get(code.strip())
    return describe(arg) if describe else f"RE2 refuses it ({message})"


@functools.cache
def _re2() -> tuple[Any, Any]:
    """The RE2 module and its options, imported on the first regex a config sets (not for the defaults,
    which are not checked again: `obspack render` without a config stays quick)."""
    import re2

    options = re2.Options()
    options.log_errors = False  # RE2 would print every refused pattern on stderr
    options.max_mem = 64 << 20  # near Go's limit on a compiled regexp, well above what 4096 characters need
    return re2, options


def problem(value: str) -> str | None:
    """Why a regex cannot be used, in words, or None. First what Prometheus refuses (RE2, and what Go's
    regexp refuses beyond it), then what obspack's own parsers cannot read."""
    re2, options = _re2()
    try:
        re2.compile(value, options)
    except re2.error as e:
        raw = e.args[0] if e.args else ""
        text = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else str(raw)
        return f"{value!r} is not a regular expression Prometheus accepts: {_re2_reason(text)}"
    if _ANY_BYTE.search(value):
        return f"{value!r} is not a regular expression Prometheus accepts: \\C (any byte) is not supported by Go's regexp"
    if _NAMED_GROUP.search(value):
        return (
            f"{value!r} names a group with (?<name>...), which Prometheus releases built before Go 1.22 refuse "
            "(write (?P<name>...))"
        )
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            re.compile(value)
        promql_parser.parse(f"{_PROBE}{{l=~{json.dumps(value)}}}")
    except Exception as e:  # noqa: BLE001 - both parsers raise plain errors
        reason = " ".join(str(e).split())[:200]
        return (
            f"{value!r} is a regular expression Prometheus accepts, but obspack cannot read it ({reason}); "
            "write it without that construct"
        )
    return None
