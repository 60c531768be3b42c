"""File-menu exports of the window: screenshots, plot images, the clipboard, run files, a report.

:class:`ExportActions` owns the menu actions and the PNG options, asks for
file names, and turns every failure into a message for the user (never a
crash). The images are made by :mod:`compile_studio.gui.image_export`, the run
files by :mod:`compile_studio.results.report.run_export`.

A plot image carries a caption: what it shows and of which runs (with each
run's line style when several are overlaid), the configuration, and what the
marks mean. The status bar names the files written; the dialogs and the status
say which run an export writes when other runs are ticked.
"""

from __future__ import annotations

from collections.abc import Callable
from html import escape
from pathlib import Path

from PySide6.QtCore import QObject, Qt
from PySide6.QtGui import QAction, QActionGroup, QKeySequence
from PySide6.QtWidgets import QFileDialog, QLabel, QMainWindow, QMenu, QVBoxLayout, QWidget

from ..core.config import BenchmarkConfig
from ..results import RunResult
from ..results.records.run_result import batch_text
from .plots import PlotPanel
from .plots.style import run_dash_name
from .settings import AppSettings

NOTHING_TO_EXPORT = "Nothing to export: run a benchmark or tick one run in the history."

def _run_name(run: RunResult) -> str:
    from .history_panel import run_display_name

    return run_display_name(run)


def config_line(
    config: BenchmarkConfig, device: str | None = None, run: RunResult | None = None
) -> str:
    """The configuration in one line, for a figure's caption (a run's batch and dtype as measured)."""
    try:
        model = config.model_text()
    except Exception:  # noqa: BLE001 - a caption must not fail an export
        model = "model"
    batch = batch_text(config, run.batch()) if run is not None else batch_text(config, read_factory=True)
    dtype = run.dtype_text() if run is not None else config.dtype.replace("_", " ")
    return (
        f"{model} · {batch} · {dtype} · {config.workload} · "
        f"{device or config.device} · {config.iterations} timed + {config.warmup} warm-up calls per variant"
        f" · {config.rounds} round{'s' if config.rounds != 1 else ''}"
    )


def window_action(
    window: QWidget, text: str, slot: Callable[[], object], shortcut: QKeySequence | str | None = None
) -> QAction:
    """An action of ``window`` calling ``slot``; its shortcut works anywhere in the window."""
    act = QAction(text, window)
    if shortcut is not None:
        act.setShortcut(QKeySequence(shortcut))
        act.setShortcutContext(Qt.ShortcutContext.WindowShortcut)
    act.triggered.connect(lambda *_: slot())
    window.addAction(act)
    return act


class ExportActions(QObject):
    """The export actions of ``window`` (shortcuts work anywhere in it).

    ``config`` gives the configuration shown (for file names), ``run_to_export``
    the run an export writes (None: nothing to export), ``show_error`` shows a
    failure to the user.
    """

    def __init__(
        self,
        window: QMainWindow,
        plots: PlotPanel,
        settings: AppSettings,
        config: Callable[[], BenchmarkConfig],
        run_to_export: Callable[[], RunResult | None],
        show_error: Callable[[str], None],
    ) -> None:
        super().__init__(window)
        self._window = window
        self._plots = plots
        self._settings = settings
        self._config = config
        self._run_to_export = run_to_export
        self._show_error = show_error
        #: the last export's status bar message ("" before one)
        self.last_message = ""
        #: a run's short name, distinct among the runs shown (the window's: see run_names)
        self.name_of: Callable[[RunResult], str] = _run_name
        #: the saved runs the plots show, in their order (a caption has a line for each)
        self.runs_shown: Callable[[], list[RunResult]] = lambda: []

        def action(text: str, slot: Callable[[], object], shortcut: str | None = None) -> QAction:
            return window_action(window, text, slot, shortcut)

        self.export_run_action = action("Export run…", self.export_run_dialog, "Ctrl+E")
        self.export_report_action = action("Export report (Markdown)…", self.export_report_dialog)
        self.screenshot_action = action("Save screenshot…", self.save_screenshot_dialog, "Ctrl+Shift+S")
        self.save_plot_png_action = action("Save plot as PNG…", lambda: self.save_plot_dialog("png"))
        self.png_scale_actions: dict[int, QAction] = {}
        scale_group = QActionGroup(self)
        for scale in (1, 2, 4):
            act = QAction(f"PNG at {scale}× size", window, checkable=True)
            act.setChecked(scale == 2)
            scale_group.addAction(act)
            self.png_scale_actions[scale] = act
        self.png_transparent_action = QAction("PNG with transparent background", window, checkable=True)
        self.save_plot_svg_action = action("Save plot as SVG…", lambda: self.save_plot_dialog("svg"))
        self.copy_plot_action = action("Copy plot", self.copy_plot, "Ctrl+Shift+C")

    def add_to_menu(self, menu: QMenu) -> None:
        """Add the export actions and the PNG options to ``menu`` (the File menu)."""
        menu.addAction(self.export_run_action)
        menu.addAction(self.export_report_action)
        menu.addSeparator()
        menu.addAction(self.screenshot_action)
        menu.addAction(self.save_plot_png_action)
        png_menu = menu.addMenu("PNG options")
        for act in self.png_scale_actions.values():
            png_menu.addAction(act)
        png_menu.addSeparator()
        png_menu.addAction(self.png_transparent_action)
        menu.addAction(self.save_plot_svg_action)
        menu.addAction(self.copy_plot_action)

    # -- options and names ----------------------------------------------------------------------
    def png_scale(self) -> int:
        """The PNG scale chosen in File → PNG options (1×, 2× or 4×)."""
        return next((s for s, act in self.png_scale_actions.items() if act.isChecked()), 2)

    def _export_folder(self) -> str:
        folder = self._settings.export_folder()
        return str(folder) if folder is not None else str(Path.home())

    def _default_name(self, suffix: str) -> str:
        try:
            from .image_export import default_file_name

            return default_file_name(self._config(), suffix)
        except Exception:  # noqa: BLE001 - a name is only a suggestion
            return f"compile-studio{suffix}"

    def _exported(self, folder: Path, files: list[Path] | None = None, what: str = "") -> None:
        """Remember ``folder`` and name the ``files`` written in the status bar (``what``: of what)."""
        self._settings.set_export_folder(folder)
        names = ", ".join(Path(f).name for f in files or [])
        message = f"Saved {names} in {folder}" if names else f"Saved in {folder}"
        if what:
            message = f"{what}: {message}"
        self.last_message = message
        self._window.statusBar().showMessage(message, 15000)

    def _other_runs_shown(self, run: RunResult | None) -> list[str]:
        """Names of the runs plotted besides ``run`` (the ticked overlays)."""
        runs = self._plots.runs_shown()
        if len(runs) < 2:
            return []
        own = f"{run.run_id}" if run is not None else None
        return [name or key for key, name, _ in runs if key != own]

    def _run_words(self, run: RunResult) -> str:
        return f"run {self.name_of(run)} ({run.run_id})"

    # -- captions ---------------------------------------------------------------------------------
    def plot_caption_lines(self) -> list[str]:
        """The caption of an exported plot: what and which runs, the configuration, the marks."""
        what, marks = self._plots.current_spec().caption  # each tab registers its caption
        run = self._run_to_export()
        runs = self._plots.runs_shown()
        if len(runs) > 1:
            title = f"{what} — runs: " + ", ".join(
                f"{name or key} ({run_dash_name(style)})" for key, name, style in runs
            )
        elif run is not None:
            title = f"{what} — {self.name_of(run)}"
        else:
            title = what
        shown = [r for r in self.runs_shown() if r.config is not None] if len(runs) > 1 else []
        if len(shown) > 1:
            # each run shown, by the name its legend entries carry
            configs = [f"{self.name_of(r)}: {self._config_line_of(r)}" for r in shown]
        elif run is not None and run.config is not None:
            configs = [self._config_line_of(run)]
            if len(runs) > 1:
                configs = [f"{self.name_of(run)}: {configs[0]}"]
        else:
            configs = [config_line(self._config())]
        return [title, *configs, marks]

    @staticmethod
    def _config_line_of(run: RunResult) -> str:
        assert run.config is not None
        device = run.environment.get("device") if isinstance(run.environment, dict) else None
        return config_line(run.config, str(device) if device else None, run)

    # -- images -------------------------------------------------------------------------------------
    def save_screenshot_dialog(self) -> None:
        path, _ = QFileDialog.getSaveFileName(
            self._window,
            "Save screenshot",
            str(Path(self._export_folder()) / self._default_name("-window.png")),
            "PNG image (*.png)",
        )
        if path:
            self.save_screenshot(Path(path))

    def save_screenshot(self, path: Path) -> bool:
        """Save the whole window as PNG; a failure is shown to the user."""
        try:
            from .image_export import save_widget_png

            save_widget_png(self._window, path)
        except Exception as exc:  # noqa: BLE001 - shown to the user, never a crash
            self._show_error(f"Cannot save the screenshot: {exc}")
            return False
        self._exported(Path(path).parent, [Path(path)], "Screenshot")
        return True

    def save_plot_dialog(self, kind: str) -> None:
        suffix = ".svg" if kind == "svg" else ".png"
        runs = self._plots.runs_shown()
        title = "Save plot"
        if len(runs) > 1:
            title += f" (all {len(runs)} runs shown: " + ", ".join(n or k for k, n, _ in runs) + ")"
        path, _ = QFileDialog.getSaveFileName(
            self._window,
            title,
            str(Path(self._export_folder()) / self._default_name(f"-plot{suffix}")),
            "SVG drawing (*.svg)" if kind == "svg" else "PNG image (*.png)",
        )
        if path:
            self.save_plot(Path(path), self.png_scale(), self.png_transparent_action.isChecked())

    def save_plot(self, path: Path, scale: float = 2.0, transparent: bool = False) -> bool:
        """Save the plot of the current tab (PNG or SVG by the file suffix) with its caption."""
        try:
            from .image_export import caption_html, save_plot_png, save_plot_svg

            plot = self._plots.current_plot()
            lines = self.plot_caption_lines()
            caption = caption_html(lines)
            if Path(path).suffix.lower() == ".svg":
                save_plot_svg(plot, path, title=lines[0], description="\n".join(lines), caption=caption)
            else:
                save_plot_png(plot, path, scale, transparent, caption=caption)
        except Exception as exc:  # noqa: BLE001 - shown to the user, never a crash
            self._show_error(f"Cannot save the plot: {exc}")
            return False
        runs = self._plots.runs_shown()
        what = f"Plot of {len(runs)} runs" if len(runs) > 1 else "Plot"
        self._exported(Path(path).parent, [Path(path)], what)
        return True

    def copy_plot(self) -> bool:
        """Copy the plot of the current tab to the clipboard as an image."""
        try:
            from .image_export import copy_widget_to_clipboard

            copy_widget_to_clipboard(self._plots.current_plot())
        except Exception as exc:  # noqa: BLE001
            self._show_error(f"Cannot copy the plot: {exc}")
            return False
        self._window.statusBar().showMessage("Plot copied to the clipboard", 5000)
        return True

    def report_figure(self, run: RunResult) -> QWidget:
        """A figure of ``run`` alone: its latency plot under its title, verdicts, machine, load and threads.

        Built apart from the window (other runs ticked there are not in it),
        at the size of the window's latency plot; the caller deletes it.
        """
        from ..results.report.formatting import run_context, verdict_lines
        from .plots import PlotPanel

        figure = QWidget()
        figure.setAttribute(Qt.WidgetAttribute.WA_DontShowOnScreen, True)
        figure.setStyleSheet("background: white; color: black;")
        layout = QVBoxLayout(figure)
        layout.setContentsMargins(8, 8, 8, 8)
        caption_lines = [f"<b>{escape(run.title())}</b> · run {escape(run.run_id)} [{escape(str(run.status))}]"]
        caption_lines += [escape(line) for line in verdict_lines(run)]
        caption_lines += [f"{escape(key)}: {escape(value)}" for key, value in run_context(run)]
        caption = QLabel("<br>".join(caption_lines))
        caption.setObjectName("reportCaption")
        caption.setTextFormat(Qt.TextFormat.RichText)
        caption.setWordWrap(True)
        layout.addWidget(caption)
        panel = PlotPanel(figure)
        panel.hide()
        panel.load_run(run, key_prefix=f"{run.run_id}/")
        panel.latency.set_log_scale(self._plots.latency.log_scale())
        panel.latency.set_warmup_shown(self._plots.latency.warmup_shown())
        layout.addWidget(panel.latency, 1)
        panel.latency.show()
        # the figure is a picture, not a control: no check boxes in it
        panel.latency.log_scale_checkbox.hide()
        panel.latency.legend_checkbox.hide()
        shown = self._plots.latency_plot.size()
        width = max(720, shown.width())
        figure.resize(width, max(420, shown.height()) + caption.heightForWidth(width - 16) + 24)
        figure.show()
        panel.refresh()
        return figure

    def report_figure_png(self, run: RunResult, scale: float | None = None) -> bytes:
        """:meth:`report_figure` as PNG bytes at ``scale`` (default: the PNG scale chosen)."""
        from .image_export import encode_png, render_widget_image

        figure = self.report_figure(run)
        try:
            return encode_png(render_widget_image(figure, scale or self.png_scale()))
        finally:
            figure.hide()
            figure.deleteLater()

    def latency_plot_png(self, scale: float = 1.0) -> bytes:
        """The latency plot as PNG bytes (raises ExportError when it cannot be rendered)."""
        from .image_export import encode_png, render_widget_image

        return encode_png(render_widget_image(self._plots.latency_plot, scale))

    # -- run files ------------------------------------------------------------------------------------
    def _ask_export_folder(self, title: str, run: RunResult | None = None) -> Path | None:
        if (run or self._run_to_export()) is None:
            self._show_error(NOTHING_TO_EXPORT)
            return None
        folder = QFileDialog.getExistingDirectory(self._window, title, self._export_folder())
        return Path(folder) if folder else None

    def export_run_dialog(self, run: RunResult | None = None) -> None:
        """File → Export run… (or a run's own Export… in the history): ask for a folder, then export.

        The dialog names the run written, and says so when other runs are ticked.
        """
        target = run or self._run_to_export()
        title = f"Export {self._run_words(target)} to folder" if target is not None else "Export run to folder"
        if target is not None and self._other_runs_shown(target):
            title += " (only this run; the other runs ticked are not exported)"
        folder = self._ask_export_folder(title, run)
        if folder is not None:
            self.export_run_to(folder, run)

    def export_run_to(self, folder: Path, run: RunResult | None = None) -> list[Path]:
        """Write samples.csv, summary.csv and run.json of the run into ``folder``.

        The run is ``run``, else the one shown (or the only ticked one).
        Returns the files written; on failure nothing is written and the user is told why.
        """
        run = run or self._run_to_export()
        if run is None:
            self._show_error(NOTHING_TO_EXPORT)
            return []
        try:
            from ..results.report.run_export import export_run

            written = export_run(run, folder, prefix=f"{run.run_id}_")
        except Exception as exc:  # noqa: BLE001 - shown to the user, never a crash
            self._show_error(f"Cannot export the run to {folder}: {exc}")
            return []
        what = f"Exported {self._run_words(run)}"
        if self._other_runs_shown(run):
            what += " only (other runs ticked)"
        self._exported(Path(folder), list(written), what)
        return list(written)

    def export_report_dialog(self) -> None:
        """File → Export report (Markdown)…: ask for the report's file name, as every export
        does, then :meth:`export_report_file` (its figure goes beside it, named alike)."""
        target = self._run_to_export()
        if target is None:
            self._show_error(NOTHING_TO_EXPORT)
            return
        title = f"Export the report of {self._run_words(target)}"
        if self._other_runs_shown(target):
            title += " (only this run; the other runs ticked are not in it)"
        from ..results.report.run_export import safe_file_stem

        stem = safe_file_stem(f"{target.run_id}_report") if target.run_id else self._default_name("_report")
        path, _ = QFileDialog.getSaveFileName(
            self._window, title, str(Path(self._export_folder()) / f"{stem}.md"), "Markdown (*.md)"
        )
        if path:
            self.export_report_file(Path(path))

    def export_report_file(self, path: Path, run: RunResult | None = None) -> list[Path]:
        """Write the Markdown report of the run shown to ``path`` (``.md`` added when missing)
        and its figure beside it (the same name, ``.png``). Returns the files written."""
        path = Path(path)
        stem = path.name[: -len(".md")] if path.name.lower().endswith(".md") else path.name
        return self.export_report_to(path.parent, run, name=stem, name_given=True)

    def export_report_to(
        self, folder: Path, run: RunResult | None = None, name: str = "", name_given: bool = False
    ) -> list[Path]:
        """Write ``<name>.md`` (default ``<run id>_report``) and beside it ``<name>.png``, the
        figure of that run alone (:meth:`report_figure`) at the PNG scale chosen.

        Returns the files written; on failure nothing is written and the user is told why.
        """
        run = run or self._run_to_export()
        if run is None:
            self._show_error(NOTHING_TO_EXPORT)
            return []
        try:
            from ..results.report.run_export import export_markdown

            png = self.report_figure_png(run)
            written = export_markdown(
                run, folder, png, name=name or f"{run.run_id}_report", name_given=name_given and bool(name)
            )
        except Exception as exc:  # noqa: BLE001 - shown to the user, never a crash
            self._show_error(f"Cannot export the report to {folder}: {exc}")
            return []
        self._exported(Path(folder), list(written), f"Report of {self._run_words(run)}")
        return list(written)
