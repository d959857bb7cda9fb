"""Arguments checked against a tool's input schema before anything is sent.

A refusal here names the field and the rule, so the user can fix the call without reading
the schema; nothing reaches the server.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import jsonschema.exceptions

from toolbench._errors import Refused
from toolbench._ids import ToolId

# Keyed by the schema object's id; the entry holds the schema, so the id cannot be reused.
_cache: dict[int, tuple[Mapping[str, Any], Any]] = {}
_cache_lock = threading.Lock()
_CACHE_LIMIT = 4096


def _validator(schema: Mapping[str, Any]) -> Any | None:
    """A compiled validator for ``schema``, or None when the server's schema is itself broken
    (then the server, not toolbench, gets to judge the arguments)."""
    found = _cache.get(id(schema))
    if found is not None and found[0] is schema:
        return found[1] if found[1] is not False else None
    # Imported on first use: with its optional format checkers installed, importing
    # jsonschema can take seconds, which every stdio demo child would pay at start.
    import jsonschema
    import jsonschema.exceptions
    import jsonschema.validators
    cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    try:
        cls.check_schema(dict(schema))
        validator: Any = cls(schema)
    except jsonschema.exceptions.SchemaError:
        validator = False
    with _cache_lock:
        if len(_cache) >= _CACHE_LIMIT:
            _cache.clear()
        _cache[id(schema)] = (schema, validator)
    return validator if validator is not False else None


def _describe(error: jsonschema.exceptions.ValidationError) -> str:
    where = "/".join(str(p) for p in error.absolute_path)
    field = f"field {where!r}" if where else "the arguments"
    rule = f"{error.validator}={json.dumps(error.validator_value, default=str)[:80]}"
    return f"{field}: {error.message[:200]} (rule {rule})"


def validate_arguments(tool: ToolId, schema: Mapping[str, Any] | None,
                       arguments: Mapping[str, Any]) -> None:
    """Raise Refused naming each broken field and rule (up to three) if ``arguments`` fail."""
    if not isinstance(schema, Mapping) or not schema:
        return
    validator = _validator(schema)
    if validator is None:
        return
    instance = dict(arguments)
    if validator.is_valid(instance):  # the common case; collecting errors costs more
        return
    errors = sorted(validator.iter_errors(instance), key=lambda e: list(e.path))
    if errors:
        shown = "; ".join(_describe(e) for e in errors[:3])
        more = f"; and {len(errors) - 3} more" if len(errors) > 3 else ""
        raise Refused(f"arguments do not match the input schema: {shown}{more}", tool=tool)
