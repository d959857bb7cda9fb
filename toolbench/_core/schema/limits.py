"""The stated limits of checking a schema locally (DESIGN.md, "The trust boundary").

A schema past one of the size limits is not checked locally (the server judges the
arguments, and ``schema_problems`` says why); one check past its steps or its time is
stopped. ``toolbench._core.schema.validate`` applies them; the fast path
(``toolbench._core.schema.fast``) counts its steps against the same budget.
"""

MAX_DEPTH = 64
"""Nesting levels of a schema that is still checked locally (pydantic's run to about 20)."""
MAX_NODES = 10_000
"""JSON values (objects, arrays, strings, numbers, ...) in a schema still checked locally."""
MAX_TEXT = 1_000_000
"""Characters, keys and strings together, in a schema still checked locally."""
MAX_STEPS = 100_000
"""Steps (evaluations of a keyword that descends: ``$ref``, ``anyOf``, ``properties``, ...)
one check may make."""
MAX_CHECK_SECONDS = 0.25
"""Time one check may take (the clock is read every 32 steps)."""
SLOW_CHECKS = 3
"""Checks of one schema that may run out of time before it is skipped for good. The step
budget is exact, so running out of steps marks the schema at once; time depends on how busy
the machine is, and one slow check of a harmless schema must not end its local checks."""
