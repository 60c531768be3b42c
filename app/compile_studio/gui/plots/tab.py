"""The plot-tab interface: a tab registers itself (title, tooltip, export caption) and the panel feeds it.

A tab is a :class:`PlotTab`: the panel calls its hooks for every series
(``add``, ``relabel``), on every refresh (``tick``, and ``redraw`` with the
series whose samples changed), on ``clear`` and when the user switches tabs
(``shown``, ``hidden``). ``current_plot`` is what "Save plot" exports. A new
tab is one module that subclasses :class:`PlotTab` and calls
:func:`register_tab`; the panel, the export menu and the captions follow.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from PySide6.QtGui import QColor
from PySide6.QtWidgets import QWidget

if TYPE_CHECKING:
    from .buffers import Series


class TabHost(Protocol):
    """What a tab may ask of the panel that makes it (the :class:`~.panel.PlotPanel`)."""

    def color_of(self, key: str) -> QColor | None: ...
    def quartiles_of(self, key: str) -> tuple[float, float] | None: ...


class PlotTab(QWidget):
    """One tab of the plot panel; every hook does nothing unless the tab needs it."""

    def add(self, series: Series, run_style: int = 0) -> None:
        """A new series (a run's variant) with its run's line style."""

    def relabel(self, series: Series) -> None:
        """A series' label or failed state changed."""

    def clear(self) -> None:
        """Everything is removed."""

    def tick(self) -> None:
        """Called on every refresh of the panel (a few times a second during a run)."""

    def redraw(self, changed: Iterable[Series]) -> None:
        """The samples of ``changed`` grew since the last refresh."""

    def shown(self) -> None:
        """The user switched to this tab."""

    def hidden(self) -> None:
        """The user switched to another tab (hover marks go away)."""

    def current_plot(self) -> QWidget:
        """What an export of this tab saves: its ``plot`` widget, else the whole tab."""
        plot = vars(self).get("plot")
        return plot if isinstance(plot, QWidget) else self


@dataclass(frozen=True)
class TabSpec:
    """A registered tab: its key, title, how it is made, what an exported image's caption says."""

    key: str
    title: str
    make: Callable[[TabHost], PlotTab]
    #: (what the plot shows, what its marks mean)
    caption: tuple[str, str]
    tooltip: str = ""
    #: tabs are shown left to right by this number
    order: int = 100


_TABS: dict[str, TabSpec] = {}


def register_tab(spec: TabSpec) -> None:
    """Add (or replace) a tab; panels made from now on show it."""
    _TABS[spec.key] = spec


def unregister_tab(key: str) -> None:
    """Remove a registered tab (panels made from now on leave it out)."""
    _TABS.pop(key, None)


def registered_tabs() -> list[TabSpec]:
    """The registered tabs, in the order they are shown."""
    return sorted(_TABS.values(), key=lambda spec: spec.order)
