from __future__ import annotations

import base64
import json

import pytest

import toolbench as tb
from toolbench._core.client import Result, result_from_value
from toolbench._core.ids import ToolId

PNG = base64.b64encode(b"\x89PNG\r\n\x1a\n" + b"\x00" * 16).decode()


def test_text_and_data() -> None:
    r = tb.Result([{"type": "text", "text": "a"}, {"type": "image", "data": PNG,
                   "mimeType": "image/png"}, {"type": "text", "text": "b"}])
    assert r.text == "a\nb"
    assert r.data == "a\nb"
    assert tb.Result([{"type": "text", "text": '{"x": 1}'}]).data == {"x": 1}
    assert tb.Result([{"type": "text", "text": "[1, 2]"}]).data == [1, 2]
    assert tb.Result([{"type": "text", "text": "{}"}], structured={"y": 2}).data == {"y": 2}


def test_spec_parameters() -> None:
    spec = tb.ToolSpec("t", input_schema={"type": "object", "properties": {"a": {}, "b": {}},
                                          "required": ["a"]})
    assert spec.parameters == ["a", "b"] and spec.required == ["a"]
    assert tb.ToolSpec("t", input_schema={"type": "object"}).parameters == []
    renamed = spec.renamed("x-t")
    assert renamed.name == "x-t" and renamed.input_schema is spec.input_schema


HOSTILE = "<script>alert(1)</script><img src=x onerror=alert(2)>"


def test_repr_escapes_untrusted_strings_and_always_has_plain_text() -> None:
    r = tb.Result([{"type": "text", "text": HOSTILE}, {"type": HOSTILE}],
                  tool=tb.ToolId("s", "t"), latency_s=0.01)
    bundle = r._repr_mimebundle_()
    assert "text/plain" in bundle and HOSTILE in bundle["text/plain"]
    html = bundle["text/html"]
    assert "<script>" not in html and "<img src=x" not in html
    assert "&lt;script&gt;" in html


def test_structured_goes_to_escaped_html_and_data_not_to_a_json_bundle() -> None:
    # application/json would make JupyterLab show its JSON viewer instead of the HTML card.
    r = tb.Result([{"type": "text", "text": "{}"}], structured={"k": HOSTILE})
    bundle = r._repr_mimebundle_()
    assert set(bundle) == {"text/plain", "text/html"}
    assert r.data == {"k": HOSTILE}
    assert "<script>" not in bundle["text/html"] and "&lt;script&gt;" in bundle["text/html"]


def test_images_inline_only_for_safe_raster_types() -> None:
    ok = tb.Result([{"type": "image", "data": PNG, "mimeType": "image/png"}])
    assert f"data:image/png;base64,{PNG}" in ok._repr_html_()
    svg = tb.Result([{"type": "image", "data": PNG, "mimeType": "image/svg+xml"}])
    assert "data:image/svg" not in svg._repr_html_()
    sneaky = '"><script>x</script>'
    hostile = tb.Result([{"type": "image", "data": sneaky, "mimeType": "image/png"}])
    assert "<script>" not in hostile._repr_html_()


def test_repr_never_raises_on_garbage() -> None:
    class Boom:
        def __str__(self) -> str:
            raise RuntimeError("no")

    r = tb.Result([{"type": "text", "text": Boom()}, "not a dict"], structured={"x": Boom()})  # type: ignore[list-item]
    bundle = r._repr_mimebundle_()
    assert "text/plain" in bundle
    assert isinstance(repr(r), str)


def test_large_text_is_shortened_in_html() -> None:
    r = tb.Result([{"type": "text", "text": "x" * 5_000_000}])
    assert len(r._repr_html_()) < 50_000
    assert len(repr(r)) < 5_000


@pytest.mark.parametrize(("value", "structured", "text"), [
    ({"a": 1}, {"a": 1}, '{"a": 1}'),
    ([1, 2], {"result": [1, 2]}, "[1, 2]"),
    (3, {"result": 3}, "3"),
    (None, {"result": None}, "null"),
    ("plain", None, "plain"),
])
def test_handler_return_values(value: object, structured: object, text: str) -> None:
    r = result_from_value(value, None, 0.0)
    assert r.structured == structured and r.text == text
    assert json.loads(r.text) == value if not isinstance(value, str) else True


def test_handler_return_value_must_be_json() -> None:
    with pytest.raises(TypeError, match="not JSON"):
        result_from_value({"x": object()}, None, 0.0)


def test_protocol_is_runtime_checkable() -> None:
    assert isinstance(tb.ToolBox(), tb.ToolClient)
    assert not isinstance(object(), tb.ToolClient)


def test_a_result_of_only_a_resource_link_says_what_it_links() -> None:
    """Issue 37, item 10: a link or an embedded resource alone had an empty plain repr."""
    link = {"type": "resource_link", "uri": "file:///notes/a.md", "name": "a.md",
            "mimeType": "text/markdown"}
    shown = repr(Result(content=[link], tool=ToolId("fs", "find")))
    assert "[resource link] file:///notes/a.md · a.md · text/markdown" in shown
    embedded = {"type": "resource", "resource": {"uri": "mem://x/1", "mimeType": "text/plain",
                                                  "text": "hello"}}
    shown = repr(Result(content=[embedded], tool=ToolId("m", "get")))
    assert "[embedded resource] mem://x/1 · text/plain" in shown


def test_structured_content_and_text_both_show_structured_first() -> None:
    """Issue 37, item 11: with structuredContent, a text that says more was hidden."""
    result = Result(content=[{"type": "text", "text": "Paris is 343.6 km away"}],
                    structured={"km": 343.557}, tool=ToolId("geo", "distance"))
    plain = repr(result)
    assert plain.index('"km": 343.557') < plain.index("Paris is 343.6 km away")
    page = result._repr_html_()
    assert page.index("343.557") < page.index("Paris is 343.6 km away")


@pytest.mark.parametrize("text", ['{"km": 343.557}', '{\n  "km": 343.557\n}'])
def test_text_that_only_repeats_the_structured_json_is_not_shown_twice(text: str) -> None:
    result = Result(content=[{"type": "text", "text": text}], structured={"km": 343.557})
    assert repr(result).count("343.557") == 1 and result._repr_html_().count("343.557") == 1
    wrapped = Result(content=[{"type": "text", "text": "343.557"}],
                     structured={"result": 343.557})
    assert repr(wrapped).count("343.557") == 1
