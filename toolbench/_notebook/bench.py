"""The public ``Bench``: the bench layer's ``BaseBench`` plus what a notebook shows.

Rendering (the HTML repr, the explorer widget) and the bundled demo servers sit above the
bench layer (DESIGN.md, "Layers"), so the class users hold is assembled here, where both are
in reach, and nothing below this layer imports display code.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Self, TypedDict, Unpack

from toolbench._bench.apps.views import register_view_factory, register_view_warmer
from toolbench._bench.bench import BaseBench
from toolbench._bench.models.run import register_run_display
from toolbench._core.client import register_view_display
from toolbench._notebook.view_warmup import warm_views
from toolbench._notebook.views.run import run_html, show_run

if TYPE_CHECKING:
    import os
    from collections.abc import Iterable

    from toolbench._core.ids import Egress
    from toolbench._notebook.explorer.explorer import Explorer
    from toolbench._transports.notifications import LogLevel
    from toolbench._transports.server_requests import Handler


def _make_view(bridge: Any) -> Any:
    """``result.app`` in a notebook: an ``AppView`` (anywidget is imported only now)."""
    from toolbench._notebook.apps.view import make_view

    return make_view(bridge)


def _show_with_view(result: Any) -> None:
    """A result whose tool has a view, in a notebook: the live view above the result card.

    Never raises (a display): a view that cannot be made leaves the card alone, with the
    reason in the card's place of the view."""
    from IPython.display import display

    try:
        view = result.app
    except Exception as exc:  # the card must still show
        view = None
        display({"text/plain": f"(the view could not be opened: {type(exc).__name__})"},
                raw=True)  # type: ignore[no-untyped-call]
    if view is not None:
        display(view)  # type: ignore[no-untyped-call]
    display(result._repr_mimebundle_(), raw=True)  # type: ignore[no-untyped-call]


register_view_factory(_make_view)
register_view_warmer(warm_views)  # issue 46: the first view's costs, paid before it
register_view_display(_show_with_view)
register_run_display(run_html, show_run)  # a Run's transcript, cards and views


class BenchOptions(TypedDict, total=False):
    """The keywords of ``Bench(...)``, for ``Bench.demo(...)``; see ``Bench.__init__``."""

    journal: str | os.PathLike[str] | None
    separator: str
    egress: Egress | Iterable[str] | None
    timeout: float
    connect_timeout: float
    sampling: Handler
    elicitation: Handler
    roots: Iterable[Any] | None
    log_level: LogLevel | None
    pins: str | os.PathLike[str] | None
    apps: bool
    trace_payloads: bool


class Bench(BaseBench):
    """Connect many servers, browse their tools, call, compare and map them, keep records.

    A bench owns its connections (stdio children end when it closes) and one record of every
    call made through it; ``Bench.demo()`` is one with the bundled offline demo servers.
    Every operation has a blocking face for notebook cells (``call``) and an awaitable one
    (``acall``); both run on toolbench's shared loop, so connections outlive cells.

    Example:
        >>> import toolbench as tb
        >>> with tb.Bench.demo() as bench:                          # doctest: +SKIP
        ...     bench.call("geo-distance", from_city="London", to_city="Paris").data
        {'result': 343.557}
    """

    @classmethod
    def demo(cls, **options: Unpack[BenchOptions]) -> Self:
        """A bench with the bundled offline demo servers connected (concurrently).

        Args:
            **options: the constructor's keywords (``journal``, ``timeout``, ...).

        Returns:
            An open bench with the ``geo``, ``geo_precise`` and ``flaky`` servers.

        Example:
            >>> bench = tb.Bench.demo(journal="demo.sqlite")           # doctest: +SKIP
        """
        from toolbench import demo

        bench = cls(**options)
        try:
            bench.load_config(demo.config())
        except BaseException:
            bench.close()
            raise
        return bench

    def explore(self) -> Explorer:
        """The explorer widget: browse the catalog, fill a form, call, compare (ipywidgets).

        Returns:
            An ``Explorer``; display it as a cell's last expression.
        """
        from toolbench._notebook.explorer.explorer import explorer

        return explorer(self)

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, Any]:
        from toolbench._notebook.views.display import bench_bundle

        return bench_bundle(self)
