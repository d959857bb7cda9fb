"""How the ``flaky`` demo server is told to misbehave: flags, environment variables, checks.

Kept free of the ``mcp`` import so ``toolbench.demo.config()`` can validate the same values
cheaply in the notebook process, before any child starts.
"""

from __future__ import annotations

import argparse
import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

ENV_LATENCY = "TOOLBENCH_DEMO_LATENCY_MS"
ENV_JITTER = "TOOLBENCH_DEMO_JITTER_MS"
ENV_FAILURE_RATE = "TOOLBENCH_DEMO_FAILURE_RATE"
ENV_SEED = "TOOLBENCH_DEMO_SEED"
ENV_VARS = (ENV_LATENCY, ENV_JITTER, ENV_FAILURE_RATE, ENV_SEED)

MAX_LATENCY_MS = 60_000.0


def check_latency(value: object, what: str = "latency_ms") -> float:
    """A delay in milliseconds: a finite number from 0 to 60000."""
    number = _number(value, what)
    if not 0.0 <= number <= MAX_LATENCY_MS:
        raise ValueError(f"{what} must be between 0 and {MAX_LATENCY_MS:g} ms, got {value!r}")
    return number


def check_failure_rate(value: object, what: str = "failure_rate") -> float:
    """A probability: a finite number from 0 (never fail) to 1 (always fail)."""
    number = _number(value, what)
    if not 0.0 <= number <= 1.0:
        raise ValueError(f"{what} must be between 0 and 1 (a probability), got {value!r}")
    return number


def check_seed(value: object, what: str = "seed") -> int:
    """A whole number that makes the failure pattern repeatable."""
    if isinstance(value, bool):
        raise ValueError(f"{what} must be a whole number, got {value!r}")
    if isinstance(value, int):
        return value
    if isinstance(value, str):
        try:
            return int(value.strip())
        except ValueError:
            pass
    raise ValueError(f"{what} must be a whole number, got {value!r}")


def _number(value: object, what: str) -> float:
    if isinstance(value, bool):
        raise ValueError(f"{what} must be a number, got {value!r}")
    try:
        number = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise ValueError(f"{what} must be a number, got {value!r}") from None
    if not math.isfinite(number):
        raise ValueError(f"{what} must be a finite number, got {value!r}")
    return number


@dataclass(frozen=True)
class FlakySettings:
    """What the flaky server does on each call: wait, then maybe fail on purpose."""

    latency_ms: float = 100.0
    jitter_ms: float = 0.0
    failure_rate: float = 0.2
    seed: int | None = None

    def __post_init__(self) -> None:
        check_latency(self.latency_ms)
        check_latency(self.jitter_ms, "jitter_ms")
        check_failure_rate(self.failure_rate)
        if self.seed is not None:
            check_seed(self.seed)

    @classmethod
    def parse(
        cls, argv: Sequence[str] | None = None, environ: Mapping[str, str] | None = None
    ) -> FlakySettings:
        """Flags win over environment variables, which win over the defaults.

        A bad value exits like any command-line error (status 2), with a message naming the
        value, the flag or variable it came from, and the rule.
        """
        environ = os.environ if environ is None else environ
        parser = argparse.ArgumentParser(
            prog="python -m toolbench.demo.flaky",
            description="A deliberately slow and unreliable demo MCP server (stdio).",
        )
        defaults = cls()
        parser.add_argument(
            "--latency-ms", help=f"delay before every answer (env {ENV_LATENCY}; "
            f"default {defaults.latency_ms:g})",
        )
        parser.add_argument(
            "--jitter-ms", help=f"extra random delay, 0..N ms (env {ENV_JITTER}; default 0)"
        )
        parser.add_argument(
            "--failure-rate", help=f"probability that a call fails on purpose (env "
            f"{ENV_FAILURE_RATE}; default {defaults.failure_rate:g})",
        )
        parser.add_argument(
            "--seed", help=f"make the random failures repeatable (env {ENV_SEED})"
        )
        args = parser.parse_args(argv)

        def pick(flag: str | None, env: str) -> tuple[str | None, str]:
            if flag is not None:
                return flag, "--" + env.removeprefix("TOOLBENCH_DEMO_").lower().replace("_", "-")
            return environ.get(env), env

        try:
            latency, where = pick(args.latency_ms, ENV_LATENCY)
            latency_ms = defaults.latency_ms if latency is None else check_latency(latency, where)
            jitter, where = pick(args.jitter_ms, ENV_JITTER)
            jitter_ms = defaults.jitter_ms if jitter is None else check_latency(jitter, where)
            rate, where = pick(args.failure_rate, ENV_FAILURE_RATE)
            failure_rate = (
                defaults.failure_rate if rate is None else check_failure_rate(rate, where)
            )
            seed_text, where = pick(args.seed, ENV_SEED)
            seed = None if seed_text is None else check_seed(seed_text, where)
        except ValueError as exc:
            parser.error(str(exc))
        return cls(latency_ms=latency_ms, jitter_ms=jitter_ms, failure_rate=failure_rate, seed=seed)
