"""The rules that options share, written once: every door refuses the same values.

A timeout is a positive, finite number of seconds; a cap or a count is a whole number with a
floor. ``bool`` is refused although it is an ``int``: ``timeout=True`` is a mistake, never
one second. The predicates serve callers that raise their own error type (a config file's
``ConfigError`` names the JSON path); the checkers raise ``ValueError`` naming the option,
the value and the rule.
"""

from __future__ import annotations

import math
from typing import TypeGuard


def is_seconds(value: object) -> TypeGuard[int | float]:
    """A positive, finite number (NaN and infinity are not)."""
    return (not isinstance(value, bool) and isinstance(value, int | float)
            and value > 0 and math.isfinite(value))


def is_whole(value: object, minimum: int = 1) -> TypeGuard[int]:
    """An ``int`` (not a ``bool``, not ``2.0``) of at least ``minimum``."""
    return not isinstance(value, bool) and isinstance(value, int) and value >= minimum


def seconds(value: object, what: str) -> float:
    """``value`` as seconds, or ``ValueError`` naming ``what``, the value and the rule."""
    if not is_seconds(value):
        raise ValueError(f"invalid {what} {value!r}: a positive number of seconds (finite)")
    return float(value)


def whole(value: object, what: str, *, minimum: int = 1, unit: str = "") -> int:
    """``value`` as a whole number of at least ``minimum`` (``unit``: "bytes", "tools")."""
    if not is_whole(value, minimum):
        of = f" of {unit}" if unit else ""
        rule = (f"a positive whole number{of}" if minimum == 1
                else f"a whole number{of}, at least {minimum}")
        raise ValueError(f"invalid {what} {value!r}: {rule}")
    return value
