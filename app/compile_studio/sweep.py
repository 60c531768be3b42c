"""Sweeps: one configuration parameter over a list or a range of values, a run per point.

A sweep answers "where does torch.compile pay off?" with a curve: each point
is a whole run (eager plus the chosen variants, under the same rules as a
single run) driven by a :class:`~compile_studio.session.RunSession` into its
own run folder inside the sweep folder (see :mod:`results.sweep_store`).

:class:`SweepRunner` runs the missing points, ``concurrency`` at a time
(threads, each supervising one session). How a point's session is made is
its ``session_factory``: the default runs the worker on this machine; another
factory may start it elsewhere (a launcher over SSH or Slurm). No Qt, no
torch here.

A shape sweep (:class:`ShapeSweepRun`) is another kind: one worker calls the
same compiled variant at each batch size in turn, once per dynamic mode, and
records the recompiles and compile time each batch size causes.

Longer than most modules, on purpose: what can be swept (parameters, values,
ranges, each point's configuration) and how the points are run sit together,
so a new kind of parameter is added in one place.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import os
import queue
import re
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, Protocol

from . import protocol
from .config import MAX_BATCH, BenchmarkConfig, ConfigError, ConfigProblem, FieldSpec, config_fields
from .model_specs import LayerSpecError, factory_signature, parse_layer_spec, parse_transformer_spec
from .protocol import RunStatus, VariantStatus
from .results.run_result import summarize
from .results.store import RunStore
from .results.sweep_store import (
    COMPLETE,
    FAILED,
    MAX_POINTS,
    PENDING,
    RUNNING,
    STOPPED,
    PointValue,
    PointVariant,
    RecordBusy,
    ShapePoint,
    ShapeSweepFolder,
    ShapeSweepRecord,
    SweepFolder,
    SweepPoint,
    SweepRecord,
    this_owner,
)
from .session import (
    STOPPED_BY_USER,
    RunOutcome,
    RunSession,
    hello_timeout_s,
    without_early_compile_host,
)
from .supervisor import WorkerLauncher, WorkerProcess

#: Parameters made from a part of a field: each hidden width of the MLP, one layer's
#: width (``layer:K``, K counted from 0 = the input width), the transformer's sequence length.
HIDDEN_WIDTH = "hidden_width"
SEQ_LEN = "seq_len"
_LAYER = re.compile(r"^layer:(\d{1,3})$")
DERIVED_PARAMS = {
    HIDDEN_WIDTH: "every hidden width of the MLP (model mlp / mlp_ln_residual)",
    "layer:K": "the K-th number of --layers (0 = input width)",
    SEQ_LEN: "the transformer's sequence length",
}
#: Fields a sweep does not vary (names, lists, where files come from).
_NOT_SWEPT = {"label", "variants", "backend_modules", "factory", "model_path"}
#: Fields that size a built-in model: a custom model's factory sees them only as keyword
#: parameters it declares.
FACTORY_MODEL_FIELDS = ("batch_size", "layers", "activation", "transformer", "cnn")
#: Most characters of a --values or --range text.
MAX_VALUES_TEXT = 10_000


def swept_fields() -> dict[str, FieldSpec]:
    """The configuration fields a sweep can vary, by name."""
    return {s.name: s for s in config_fields() if s.name not in _NOT_SWEPT and s.kind != "list"}


def sweepable_params() -> list[str]:
    """Every parameter name a sweep accepts (``layer:K`` stands for ``layer:0``, ``layer:1``, …)."""
    return [*DERIVED_PARAMS, *swept_fields()]


def _param_kind(param: str) -> str:
    """int, bool, choice or text: how the values of ``param`` are read."""
    if param in (HIDDEN_WIDTH, SEQ_LEN) or _LAYER.match(param):
        return "int"
    spec = swept_fields().get(param)
    if spec is None:
        raise ConfigError(
            [
                ConfigProblem(
                    "--param",
                    f"{param[:60]!r} cannot be swept; choose one of "
                    + ", ".join(sweepable_params()),
                )
            ]
        )
    return spec.kind


_TRUE = {"true", "yes", "on", "1"}
_FALSE = {"false", "no", "off", "0"}


def _read_value(param: str, kind: str, text: str) -> PointValue:
    text = text.strip()
    if kind == "int":
        if not re.fullmatch(r"[+]?\d{1,18}", text):
            raise ValueError(f"{text[:30]!r} is not a whole number")
        return int(text)
    if kind == "bool":
        low = text.lower()
        if low in _TRUE:
            return True
        if low in _FALSE:
            return False
        raise ValueError(f"{text[:30]!r} is not true or false")
    if kind == "choice":
        choices = swept_fields()[param].choices
        if text not in choices:
            raise ValueError(f"{text[:30]!r} is not one of {', '.join(choices)}")
    if not text:
        raise ValueError("an empty value")
    return text


def parse_values(param: str, text: str) -> list[PointValue]:
    """The values of ``--values``: comma-separated; ``;``-separated for a field that holds commas
    (``layers``, ``transformer``, ``cnn``)."""
    kind = _param_kind(param)
    if len(text) > MAX_VALUES_TEXT:
        raise ConfigError([ConfigProblem("--values", f"is longer than {MAX_VALUES_TEXT:,} characters")])
    separator = ";" if kind == "text" and (";" in text or param in ("layers", "transformer", "cnn")) else ","
    items = [t for t in text.split(separator) if t.strip()]
    if not items:
        raise ConfigError([ConfigProblem("--values", "give at least one value")])
    values, problems = [], []
    for item in items:
        try:
            values.append(_read_value(param, kind, item))
        except ValueError as exc:
            problems.append(ConfigProblem("--values", str(exc)))
    if problems:
        raise ConfigError(problems)
    return values


_RANGE = re.compile(r"^\s*(\d{1,18})\s*:\s*(\d{1,18})\s*(?::\s*([x*+]?)\s*(\d{1,18}(?:\.\d{1,6})?)\s*)?$")


def parse_range(param: str, text: str) -> list[PointValue]:
    """The values of ``--range START:STOP[:STEP]``: ``1:1024:x2`` doubles from 1 up to 1024,
    ``64:512:+64`` (or ``64:512:64``) adds 64 each time; both ends included when reached."""
    if _param_kind(param) != "int":
        raise ConfigError([ConfigProblem("--range", f"{param} takes --values, not a range of numbers")])
    m = _RANGE.match(text[:200])
    if not m:
        raise ConfigError(
            [ConfigProblem("--range", f"{text[:40]!r} is not START:STOP[:xFACTOR or :+STEP], e.g. 1:1024:x2")]
        )
    start, stop = int(m.group(1)), int(m.group(2))
    op, step_text = m.group(3) or "+", m.group(4) or "1"
    step = float(step_text)
    if stop < start:
        raise ConfigError([ConfigProblem("--range", f"STOP ({stop}) is below START ({start})")])
    values: list[int] = []
    if op in ("x", "*"):
        if step <= 1 or start < 1:
            raise ConfigError([ConfigProblem("--range", "a factor range needs START ≥ 1 and a factor above 1")])
        v = float(start)
        while round(v) <= stop and len(values) <= MAX_POINTS:
            if not values or round(v) != values[-1]:
                values.append(round(v))
            v *= step
    else:
        if step < 1 or step != int(step):
            raise ConfigError([ConfigProblem("--range", "a step range needs a whole step of at least 1")])
        steps = range(start, stop + 1, int(step))  # counted, never materialised past the cap
        if len(steps) > MAX_POINTS:
            raise ConfigError(
                [ConfigProblem("--range", f"gives {len(steps):,} points; at most {MAX_POINTS:,}")]
            )
        values = list(steps)
    if len(values) > MAX_POINTS:
        raise ConfigError([ConfigProblem("--range", f"gives more than {MAX_POINTS:,} points")])
    return list(values)


@dataclass(frozen=True)
class SweepSpec:
    """What a sweep varies: one parameter and its values, in the order they run."""

    param: str
    values: tuple[PointValue, ...]
    #: how the values were written (for titles): ``1:1024:x2`` or ``1,4,16``
    values_text: str = ""

    @classmethod
    def parse(cls, param: str, values: str | None = None, range_text: str | None = None) -> SweepSpec:
        """From the CLI's or the dialog's text; raises :class:`ConfigError` saying what is wrong."""
        param = (param or "").strip()
        if not param:
            raise ConfigError([ConfigProblem("--param", "name the parameter to sweep")])
        if (values is None) == (range_text is None):
            raise ConfigError([ConfigProblem("--values", "give the values (--values A,B,…) or a --range, one of them")])
        if range_text is not None:
            parsed = parse_range(param, range_text)
            text = range_text.strip()
        else:
            assert values is not None
            parsed = parse_values(param, values)
            text = values.strip()
        return cls(param, tuple(parsed), text[:200])

    def problems(self, base: BenchmarkConfig) -> list[ConfigProblem]:
        """Everything wrong with this sweep from ``base``: every point's configuration checked."""
        out: list[ConfigProblem] = []
        try:
            _param_kind(self.param)
        except ConfigError as exc:
            return list(exc.problems)
        if not self.values:
            return [ConfigProblem("--values", "give at least one value")]
        if len(self.values) > MAX_POINTS:
            out.append(ConfigProblem("--values", f"at most {MAX_POINTS:,} points"))
        seen: set[PointValue] = set()
        for value in self.values:
            key = (type(value).__name__, value)
            if key in seen:  # type: ignore[comparison-overlap]
                out.append(ConfigProblem("--values", f"{value!s:.30} is listed twice"))
                continue
            seen.add(key)  # type: ignore[arg-type]
        swept = self.field()
        refused = self.factory_problem(base)
        if refused is not None:
            out.append(refused)
        base_problems = [p for p in base.problems() if p.field != swept]
        out.extend(base_problems)
        known = {str(p) for p in base_problems}
        for value in self.values:
            try:
                config = self.point_config(base, value)
            except ConfigError as exc:
                out.extend(ConfigProblem(p.field, f"{self.param}={value!s:.30}: {p.message}") for p in exc.problems)
                continue
            for problem in config.problems():
                if str(problem) not in known:
                    out.append(ConfigProblem(problem.field, f"{self.param}={value!s:.30}: {problem.message}"))
        return out

    def factory_problem(self, base: BenchmarkConfig) -> ConfigProblem | None:
        """Why a custom model cannot be swept over this parameter; None when it can.

        A factory makes its own model and inputs: the built-in models' sizes
        (batch, layers, activation, transformer, CNN) reach it only through a
        keyword parameter of the same name (``def make_model(batch_size=8)``),
        read from the file's source without running it.
        """
        if base.model != "custom" or self.field() not in FACTORY_MODEL_FIELDS:
            return None
        if self.param != self.field():
            return ConfigProblem(
                "--param",
                f"{self.param} changes a built-in model's sizes; a custom model's factory makes its "
                f"own model (sweep a keyword parameter of the factory, such as batch_size)",
            )
        sig = factory_signature(base.factory, base.model_path)
        if isinstance(sig, str):
            return ConfigProblem(
                "--param", f"cannot tell whether the factory takes {self.param}: {sig}"
            )
        if not sig.takes(self.param):
            return ConfigProblem(
                "--param",
                f"the factory {sig.function}() does not take {self.param}, so every point would "
                f"run the same model; give it a keyword parameter named {self.param} "
                f"(def {sig.function}({self.param}=…)) to sweep it",
            )
        return None

    def field(self) -> str:
        """The configuration field the parameter changes (``layers`` for ``hidden_width``)."""
        if self.param == HIDDEN_WIDTH or _LAYER.match(self.param):
            return "layers"
        if self.param == SEQ_LEN:
            return "transformer"
        return self.param

    def point_config(self, base: BenchmarkConfig, value: PointValue) -> BenchmarkConfig:
        """``base`` with the parameter set to ``value``, labelled ``param=value``."""
        label = f"{base.label.strip()} · " if base.label.strip() else ""
        label += f"{self.param}={value}"
        changes: dict[str, object] = {"label": label[:200]}
        if self.param in (HIDDEN_WIDTH,) or _LAYER.match(self.param):
            changes["layers"] = _replace_layers(base, self.param, value)
        elif self.param == SEQ_LEN:
            changes["transformer"] = _replace_seq_len(base, value)
        else:
            changes[self.param] = value
        return dataclasses.replace(base, **changes)  # type: ignore[arg-type]

    def validate(self, base: BenchmarkConfig) -> SweepSpec:
        problems = self.problems(base)
        if problems:
            raise ConfigError(problems)
        return self

    def numeric(self) -> bool:
        return all(isinstance(v, int) and not isinstance(v, bool) for v in self.values)


def _replace_layers(base: BenchmarkConfig, param: str, value: PointValue) -> str:
    try:
        sizes = parse_layer_spec(base.layers)
    except LayerSpecError as exc:
        raise ConfigError([ConfigProblem("layers", str(exc))]) from None
    m = _LAYER.match(param)
    if m:
        k = int(m.group(1))
        if k >= len(sizes):
            raise ConfigError(
                [ConfigProblem("--param", f"{param}: --layers {base.layers} has {len(sizes)} numbers (0–{len(sizes) - 1})")]
            )
        sizes[k] = int(value)
    else:
        hidden = range(1, len(sizes)) if base.model == "mlp_ln_residual" else range(1, len(sizes) - 1)
        if not hidden:
            raise ConfigError(
                [ConfigProblem("--param", f"{HIDDEN_WIDTH}: --layers {base.layers} has no hidden layer")]
            )
        for k in hidden:
            sizes[k] = int(value)
    return ",".join(str(s) for s in sizes)


def _replace_seq_len(base: BenchmarkConfig, value: PointValue) -> str:
    try:
        sizes = list(parse_transformer_spec(base.transformer))
    except LayerSpecError as exc:
        raise ConfigError([ConfigProblem("transformer", str(exc))]) from None
    sizes[3] = int(value)
    return ",".join(str(s) for s in sizes)


def x_positions(values: Sequence[PointValue]) -> tuple[list[float], bool]:
    """Where each value sits on a plot's x axis, and whether the axis is logarithmic.

    Whole numbers spanning a factor of 8 or more: log10 of the value (log x);
    other whole numbers: the value; anything else (dtypes, true/false): 0, 1, 2, …
    """
    numbers = [v for v in values if isinstance(v, int) and not isinstance(v, bool)]
    if values and len(numbers) == len(values):
        if min(numbers) >= 1 and max(numbers) >= 8 * min(numbers):
            return [math.log10(v) for v in numbers], True
        return [float(v) for v in numbers], False
    return [float(k) for k in range(len(values))], False


# -- running ----------------------------------------------------------------------------------


class SessionFactory(Protocol):
    """Makes the session that runs one point (e.g. with a launcher for a remote machine)."""

    def __call__(
        self,
        config: BenchmarkConfig,
        store: RunStore,
        on_event: Callable[[protocol.Event], None],
        on_log: Callable[[str], None],
    ) -> RunSession: ...


def local_session(
    config: BenchmarkConfig,
    store: RunStore,
    on_event: Callable[[protocol.Event], None],
    on_log: Callable[[str], None],
) -> RunSession:
    """A point run by a worker on this machine (the same session as a single run)."""
    return RunSession(config, store, on_event=on_event, on_log=on_log)


def local_worker_limit() -> int:
    """The most sweep points run at once on this machine: one per core it may use."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def new_sweep(spec: SweepSpec, base: BenchmarkConfig, root: Path) -> SweepFolder:
    """A new sweep folder under ``root`` with every point pending; raises ConfigError or OSError."""
    spec.validate(base)
    base = dataclasses.replace(base, label=base.label.strip())
    record = SweepRecord(
        sweep_id="",
        created="",
        param=spec.param,
        config=base,
        points=[SweepPoint(index=k, value=v) for k, v in enumerate(spec.values)],
        values_text=spec.values_text,
        status=PENDING,
    )
    slug = base.slug(read_factory=True)
    if spec.param == "batch_size":
        slug = re.sub(r"_b\d+_", "_", slug, count=1)
    slug = f"{spec.param.replace(':', '')}_{slug}"
    return SweepFolder.create(Path(root), slug, record)


def spec_of(record: SweepRecord) -> SweepSpec:
    """The spec a saved sweep was made from."""
    return SweepSpec(record.param, tuple(record.values), record.values_text)


@dataclass
class SweepOutcome:
    """How a sweep (or the part of it this runner ran) ended."""

    record: SweepRecord
    folder: Path
    #: indices of the points this runner ran (started), in the order they started
    ran: list[int]
    stop_requested: bool = False
    write_error: str | None = None
    #: the worker refused the base configuration (the same for every point): what is wrong
    refused: list[ConfigProblem] | None = None

    @property
    def failed(self) -> list[SweepPoint]:
        return [p for p in self.record.points if p.status == FAILED]

    @property
    def missing(self) -> list[SweepPoint]:
        return [p for p in self.record.points if p.missing]


def _now() -> str:
    return datetime.now().isoformat(timespec="seconds")


def _point_rows(outcome: RunOutcome, config: BenchmarkConfig) -> list[PointVariant]:
    """The point's variants from its run's summary; every planned variant has a row."""
    try:
        rows = [PointVariant.from_summary(r) for r in summarize(outcome.run)]
    except Exception as exc:  # noqa: BLE001 - a summary that cannot be made fails this point only
        rows = []
        outcome.run.message = outcome.run.message or f"no summary: {type(exc).__name__}: {exc}"
    names = {r.variant for r in rows}
    for name in config.variants:
        if name not in names:
            rows.append(PointVariant(variant=name, status=str(VariantStatus.NOT_RUN)))
    return rows


def _point_result(outcome: RunOutcome) -> tuple[str, str]:
    """(status, message) of a point from its session's outcome."""
    run = outcome.run
    if outcome.stop_requested:
        # a stop that reached the worker before its configuration reads as a refused one
        return STOPPED, run.message or "stopped"
    if outcome.config_problems is not None:
        return FAILED, "the worker refused the configuration: " + "; ".join(
            str(p) for p in outcome.config_problems
        )
    if outcome.write_error:
        return FAILED, outcome.write_error
    status = outcome.status
    if status == RunStatus.FAILED:
        return FAILED, run.message or "the run failed"
    if outcome.stop_requested or status in (RunStatus.STOPPED, RunStatus.INCOMPLETE):
        return STOPPED, run.message or "stopped"
    failed = [v for v in run.variants.values() if v.status == VariantStatus.FAILED]
    if failed:
        first = failed[0]
        return FAILED, f"{first.name} failed: {first.error or 'no reason given'}"
    return COMPLETE, ""


class SweepRunner:
    """Runs the missing points of a sweep folder and keeps its files up to date.

    ``concurrency`` points run at once, each in a thread supervising one
    session made by ``session_factory`` (default: a local worker). After
    every change of a point the folder's sweep.json and sweep.csv are
    rewritten and ``on_point`` gets a copy of the record and the point's index
    (called from the point's thread). ``on_event(index, event)`` and
    ``on_log(index, line)`` relay each session's events and log lines.
    ``retry_failed`` runs failed points again too.
    """

    def __init__(
        self,
        sweep: SweepFolder,
        concurrency: int = 1,
        session_factory: SessionFactory | None = None,
        on_point: Callable[[SweepRecord, int], None] | None = None,
        on_event: Callable[[int, protocol.Event], None] | None = None,
        on_log: Callable[[int, str], None] | None = None,
        retry_failed: bool = False,
    ):
        if not 1 <= concurrency <= 64:
            raise ValueError("concurrency must be 1–64")
        self.sweep = sweep
        #: what was asked, and what runs: local workers are capped at this machine's cores
        self.asked_concurrency = concurrency
        self.concurrency = concurrency if session_factory is not None else min(concurrency, local_worker_limit())
        self.session_factory: SessionFactory = session_factory or local_session
        self.on_point = on_point
        self.on_event = on_event
        self.on_log = on_log
        self.retry_failed = retry_failed
        self.spec = spec_of(sweep.record)
        self._stop = threading.Event()
        self._stop_message = STOPPED_BY_USER
        self._lock = threading.Lock()
        self._sessions: dict[int, RunSession] = {}
        self._ran: list[int] = []
        #: per point index: the progress (0–1) of its session
        self._fractions: dict[int, float] = {}
        self._refused: list[ConfigProblem] | None = None

    # -- control --------------------------------------------------------------------------
    @property
    def stop_requested(self) -> bool:
        return self._stop.is_set()

    def request_stop(self, message: str = STOPPED_BY_USER) -> None:
        """Stop: no further point starts, the running ones stop (their samples kept); returns at once."""
        with self._lock:
            if self._stop.is_set():
                return
            self._stop_message = message
            self._stop.set()
            sessions = list(self._sessions.values())
        for session in sessions:
            session.request_stop(message)

    def to_run(self) -> list[int]:
        """The indices of the points this runner will run."""
        wanted = (PENDING, RUNNING, STOPPED, FAILED) if self.retry_failed else (PENDING, RUNNING, STOPPED)
        return [p.index for p in self.sweep.record.points if p.status in wanted]

    def fraction(self) -> float:
        """How far the sweep is (0–1): points finished plus the running points' progress."""
        record = self.sweep.record
        total = len(record.points)
        if not total:
            return 1.0
        with self._lock:
            running = dict(self._fractions)
            sessions = dict(self._sessions)
        for index, session in sessions.items():
            running[index] = session.progress.fraction()
        done = sum(1 for p in record.points if p.status in (COMPLETE, FAILED) and p.index not in running)
        return min(1.0, (done + sum(running.values())) / total)

    # -- the run ------------------------------------------------------------------------------
    def run(self) -> SweepOutcome:
        """Run every missing point (blocking) and return how the sweep ended.

        The folder's owner lock is held throughout: a sweep another live
        process runs is refused (``refused`` says so), never run twice.
        """
        try:
            self.sweep.claim()
        except RecordBusy as exc:
            return SweepOutcome(
                record=self.sweep.snapshot(), folder=self.sweep.path, ran=[], stop_requested=False,
                write_error=None, refused=[ConfigProblem("sweep", str(exc))],
            )
        try:
            return self._run()
        finally:
            self.sweep.release()

    def _run(self) -> SweepOutcome:
        todo = self.to_run()
        jobs: queue.Queue[int] = queue.Queue()
        for index in todo:
            jobs.put(index)

        def start(record: SweepRecord) -> None:
            record.owner_pid, record.owner_host = this_owner()
            record.status = RUNNING
            record.message = ""
            record.concurrency = self.concurrency

        self.sweep.update(start)
        threads = [
            threading.Thread(target=self._work, args=(jobs,), name=f"sweep-point-{k}", daemon=True)
            for k in range(min(self.concurrency, max(1, len(todo))))
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join()

        def finish(record: SweepRecord) -> None:
            missing = [p for p in record.points if p.missing]
            if not missing:
                record.status = COMPLETE
                failed = sum(1 for p in record.points if p.status == FAILED)
                record.message = f"{failed} of {len(record.points)} points failed" if failed else ""
            elif self._stop.is_set():
                record.status = STOPPED
                record.message = f"{self._stop_message}; {len(missing)} points not run (resume runs them)"
            else:
                record.status = "incomplete"
                record.message = f"{len(missing)} points not run"

        final = self.sweep.update(finish)
        return SweepOutcome(
            record=final,
            folder=self.sweep.path,
            ran=list(self._ran),
            stop_requested=self._stop.is_set(),
            write_error=self.sweep.write_error,
            refused=self._refused,
        )

    def _work(self, jobs: queue.Queue[int]) -> None:
        while not self._stop.is_set():
            try:
                index = jobs.get_nowait()
            except queue.Empty:
                return
            try:
                self._run_point(index)
            except Exception as exc:  # noqa: BLE001 - one point never ends the sweep
                self._set_point(index, status=FAILED, message=f"{type(exc).__name__}: {exc}", finished=_now())
            if self.sweep.write_error is not None:
                self.request_stop(self.sweep.write_error)

    def _set_point(self, index: int, **changes: object) -> SweepRecord:
        def change(record: SweepRecord) -> None:
            point = next(p for p in record.points if p.index == index)
            for key, value in changes.items():
                setattr(point, key, value)

        snapshot = self.sweep.update(change)
        if self.on_point is not None:
            self.on_point(snapshot, index)
        return snapshot

    def _environment(self, event: protocol.Event) -> None:
        if isinstance(event, protocol.HelloEvent) and not self.sweep.record.environment:
            env = dict(event.environment)

            def keep(record: SweepRecord) -> None:
                if not record.environment:
                    record.environment = env

            self.sweep.update(keep)

    def _run_point(self, index: int) -> None:
        point = next(p for p in self.sweep.record.points if p.index == index)
        config = self.spec.point_config(self.sweep.record.config, point.value)

        def on_event(event: protocol.Event) -> None:
            self._environment(event)
            if self.on_event is not None:
                self.on_event(index, event)

        def on_log(line: str) -> None:
            if self.on_log is not None:
                self.on_log(index, line)

        with self._lock:
            if self._stop.is_set():
                return
            self._ran.append(index)
        try:
            session = self.session_factory(config, RunStore(self.sweep.path), on_event, on_log)
        except OSError as exc:
            self._set_point(
                index, status=FAILED, message=f"cannot create the point's run folder: {exc}", finished=_now()
            )
            return
        with self._lock:
            self._sessions[index] = session
            stop_now = self._stop.is_set()
        if stop_now:
            session.request_stop(self._stop_message)
        earlier = list(point.earlier_runs)
        if point.run and point.run != session.run_id:
            earlier.append(point.run)
        self._set_point(
            index, status=RUNNING, run=session.run_id, message="", started=_now(), finished="",
            earlier_runs=earlier, variants=[],
        )
        try:
            outcome = session.run()
        finally:
            with self._lock:
                self._sessions.pop(index, None)
        status, message = _point_result(outcome)
        if outcome.config_problems and not outcome.stop_requested:
            swept = self.spec.field()
            if all(p.field != swept for p in outcome.config_problems):
                # not this point's value: every other point would be refused the same way
                self._refused = list(outcome.config_problems)
                self.request_stop("the worker refused the configuration")
        rows = _point_rows(outcome, config) if status != STOPPED or outcome.run.variants else []
        run_name = outcome.folder.name if outcome.folder is not None else ""
        # a stopped point keeps its run folder; a resume starts it afresh and lists this one as earlier
        self._set_point(index, status=status, message=message, finished=_now(), variants=rows, run=run_name)


def value_text(value: PointValue) -> str:
    """A point's value as the tables show it (``true``/``false`` for a flag)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def describe_points(record: SweepRecord) -> str:
    """``5 points: 3 complete, 1 failed, 1 pending``."""
    counts = record.counts()
    parts = [f"{n} {status}" for status, n in counts.items() if n]
    return f"{len(record.points)} points: " + ", ".join(parts)


# -- shape sweeps ------------------------------------------------------------------------------

#: Timed calls per point of a shape sweep (their median is the point's time).
SHAPE_REPEATS = 5


def parse_batches(values: str | None = None, range_text: str | None = None) -> list[int]:
    """The batch sizes of a shape sweep from ``--values`` or ``--range``; ConfigError saying what is wrong."""
    spec = SweepSpec.parse("batch_size", values, range_text)
    batches = [int(v) for v in spec.values]
    problems = []
    if len(batches) > protocol.MAX_SHAPE_BATCHES:
        problems.append(ConfigProblem("--values", f"at most {protocol.MAX_SHAPE_BATCHES} batch sizes"))
    if len(set(batches)) != len(batches):
        problems.append(ConfigProblem("--values", "a batch size is listed twice"))
    bad = [b for b in batches if not 1 <= b <= MAX_BATCH]
    if bad:
        problems.append(ConfigProblem("--values", f"batch {bad[0]} is outside 1–{MAX_BATCH:,}"))
    if problems:
        raise ConfigError(problems)
    return batches


def shape_request(
    config: BenchmarkConfig,
    batches: Sequence[int],
    modes: Sequence[str] = protocol.SHAPE_MODES,
    recompile_limit: int = 0,
    repeats: int = SHAPE_REPEATS,
) -> protocol.ShapeSweepRequest:
    """The worker's request for a shape sweep; ConfigError listing every problem (config included)."""
    request = protocol.ShapeSweepRequest(
        config=config.to_dict(), batches=list(batches), modes=list(modes),
        recompile_limit=recompile_limit, repeats=repeats,
    )
    problems = [ConfigProblem(f"--{f.replace('_', '-')}", m) for f, m in request.problems()]
    problems += [p for p in config.problems() if p.field != "batch_size"]
    if not config.compiled_variants():
        problems.append(ConfigProblem("variants", "a shape sweep needs a compiled variant besides eager"))
    if problems:
        raise ConfigError(problems)
    return request


def new_shape_sweep(request: protocol.ShapeSweepRequest, root: Path) -> ShapeSweepFolder:
    """A new shape-sweep folder under ``root`` (nothing run yet); raises OSError."""
    config = BenchmarkConfig.from_dict(request.config)
    record = ShapeSweepRecord(
        sweep_id="", created="", config=config, batches=list(request.batches), modes=list(request.modes),
        recompile_limit=request.recompile_limit, repeats=request.repeats,
    )
    slug = re.sub(r"_b\d+_", "_", config.slug(), count=1)
    return ShapeSweepFolder.create(Path(root), slug, record)


def shape_request_of(record: ShapeSweepRecord) -> protocol.ShapeSweepRequest:
    """The request a saved shape sweep was made from."""
    return protocol.ShapeSweepRequest(
        config=record.config.to_dict(), batches=list(record.batches), modes=list(record.modes),
        recompile_limit=record.recompile_limit, repeats=record.repeats,
    )


@dataclass
class ShapeSweepOutcome:
    """How a shape sweep ended."""

    record: ShapeSweepRecord
    folder: Path
    stop_requested: bool = False
    #: the worker refused the configuration: what is wrong with it
    refused: list[ConfigProblem] | None = None
    write_error: str | None = None

    @property
    def failed(self) -> bool:
        return self.record.status == FAILED or any(p.error for p in self.record.points)


def _set_environment(record: ShapeSweepRecord, env: dict[str, Any]) -> None:
    record.environment = env


def _add_point(record: ShapeSweepRecord, point: ShapePoint) -> None:
    record.add(point)


class ShapeSweepRun:
    """Runs a shape sweep in one worker (started by ``launcher``: this machine, SSH or Slurm).

    The worker is started with ``--shape-sweep`` and sent the request; every
    ``shape_point`` it sends is added to the folder's record (saved at once)
    and passed to ``on_point`` with a copy of the record. No Qt, no torch.
    """

    def __init__(
        self,
        folder: ShapeSweepFolder,
        launcher: WorkerLauncher | None = None,
        on_point: Callable[[ShapeSweepRecord], None] | None = None,
        on_log: Callable[[str], None] | None = None,
        hello_timeout: float | None = None,
    ):
        self.folder = folder
        self.launcher = launcher or WorkerLauncher.local()
        self.on_point = on_point
        self.on_log = on_log
        self.hello_timeout = hello_timeout if hello_timeout is not None else hello_timeout_s()
        self.hello: protocol.HelloEvent | None = None
        self._worker: WorkerProcess | None = None
        self._stop = threading.Event()
        self._stop_message = STOPPED_BY_USER
        self._lock = threading.Lock()

    @property
    def stop_requested(self) -> bool:
        return self._stop.is_set()

    def request_stop(self, message: str = STOPPED_BY_USER) -> None:
        """Stop the worker (its points so far are kept); returns at once."""
        with self._lock:
            if self._stop.is_set():
                return
            self._stop_message = message
            self._stop.set()
            worker = self._worker
        if worker is not None:
            self._stopper(worker)

    def _stopper(self, worker: WorkerProcess) -> None:
        threading.Thread(
            target=lambda: self.launcher.stop_worker(worker, self.hello), name="shape-sweep-stop", daemon=True
        ).start()

    def _log(self, line: str) -> None:
        if self.on_log is not None:
            self.on_log(line)

    def fraction(self) -> float:
        record = self.folder.record
        total = len(record.batches) * (1 + len(record.modes) * len(record.config.compiled_variants()))
        return min(1.0, len(record.points) / total) if total else 1.0

    def run(self) -> ShapeSweepOutcome:
        """Run the sweep to its end (blocking) and return how it ended (refused while another
        live process runs it)."""
        try:
            self.folder.claim()
        except RecordBusy as exc:
            return ShapeSweepOutcome(
                record=self.folder.snapshot(), folder=self.folder.path, stop_requested=False,
                refused=[ConfigProblem("shape sweep", str(exc))], write_error=None,
            )
        try:
            return self._run()
        finally:
            self.folder.release()

    def _run(self) -> ShapeSweepOutcome:
        request = shape_request_of(self.folder.record)

        def start(record: ShapeSweepRecord) -> None:
            record.owner_pid, record.owner_host = this_owner()
            record.status = RUNNING
            record.message = ""
            record.points = []

        self.folder.update(start)
        refused: list[ConfigProblem] | None = None
        status, message = FAILED, ""
        worker: WorkerProcess | None = None
        silent = threading.Event()
        timer: threading.Timer | None = None
        try:
            self.launcher.prepare(self._log)
            worker = WorkerProcess(
                on_log=self.on_log, launcher=without_early_compile_host(self.launcher),
                args=(protocol.SHAPE_SWEEP_FLAG,),
            )

            def expire() -> None:
                silent.set()
                assert worker is not None
                worker.kill()

            timer = threading.Timer(self.hello_timeout, expire)
            timer.daemon = True
            timer.start()
            with self._lock:
                self._worker = worker
                stop_now = self._stop.is_set()
            if stop_now:
                self._stopper(worker)
            done: protocol.DoneEvent | None = None
            errors: list[str] = []
            for event in worker.events():
                event = self.launcher.explain(event)
                if isinstance(event, protocol.HelloEvent):
                    timer.cancel()
                    self.hello = protocol.check_hello(event, f"the worker on {self.launcher.describe()}")
                    self.folder.update(functools.partial(_set_environment, env=dict(event.environment)))
                    if not self._stop.is_set():
                        sent = dataclasses.replace(request, config=self.launcher.worker_config(request.config))
                        worker.send_config(sent.to_json())
                elif isinstance(event, protocol.ShapePointEvent):
                    snapshot = self.folder.update(functools.partial(_add_point, point=ShapePoint.from_event(event)))
                    if self.on_point is not None:
                        self.on_point(snapshot)
                elif isinstance(event, protocol.ErrorEvent):
                    if event.is_config_error and event.problems:
                        refused = [ConfigProblem(p.get("field", "?"), p.get("message", "")) for p in event.problems]
                    errors.append(event.message)
                elif isinstance(event, protocol.DoneEvent):
                    done = event
            worker.wait(30)
            if self._stop.is_set():
                status, message = STOPPED, self._stop_message
            elif done is None:
                why = "did not say hello in time" if silent.is_set() else worker.exit_description()
                status, message = FAILED, f"the worker ended without finishing ({why})"
            elif done.status == RunStatus.COMPLETE:
                status, message = COMPLETE, ""
            elif done.status == RunStatus.STOPPED:
                status, message = STOPPED, done.reason or "stopped"
            else:
                status, message = FAILED, "; ".join(errors)[:1000] or (done.reason or "the worker failed")
        except (OSError, protocol.ProtocolMismatch) as exc:
            status, message = FAILED, str(exc)
        finally:
            if timer is not None:
                timer.cancel()
            if worker is not None:
                worker.stop(grace_s=1.0, term_s=1.0)
            try:
                self.launcher.cleanup(self.hello)
            except Exception as exc:  # noqa: BLE001 - reported; the points are kept
                self._log(f"[compile studio] cleaning up after the worker failed: {exc}")

        def finish(record: ShapeSweepRecord) -> None:
            record.status = status
            record.message = message

        final = self.folder.update(finish)
        return ShapeSweepOutcome(
            record=final, folder=self.folder.path, stop_requested=self._stop.is_set(),
            refused=refused, write_error=self.folder.write_error,
        )
