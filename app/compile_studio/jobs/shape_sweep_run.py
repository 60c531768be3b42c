"""Shape sweeps: one worker calls the same compiled variant at each batch size in turn.

Once per dynamic mode, recording the recompiles and compile time each batch
size causes (:class:`ShapeSweepRun`). No Qt, no torch here.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from ..core import protocol
from ..core.config import MAX_BATCH, BenchmarkConfig, ConfigError, ConfigProblem
from ..launchers.supervisor import WorkerLauncher
from ..results.records.shape_record import ShapePoint, ShapeSweepRecord
from ..results.storage.sweep_store import ShapeSweepFolder
from .one_worker import OneWorkerJob, OneWorkerOutcome, checked_request
from .session import compile_host_flags
from .sweep_spec import SweepSpec
from .worker_watch import WatchLimits

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
    axis: str = "",
) -> protocol.ShapeSweepRequest:
    """The worker's request for a shape sweep; ConfigError listing every problem (config included)."""
    request = protocol.ShapeSweepRequest(
        config=config.to_dict(), batches=list(batches), modes=list(modes),
        recompile_limit=recompile_limit, repeats=repeats, axis=axis,
    )
    return checked_request(request, config, "a shape sweep", skip=("batch_size",))


def new_shape_sweep(request: protocol.ShapeSweepRequest, root: Path) -> ShapeSweepFolder:
    """A new shape-sweep folder under ``root`` (nothing run yet); raises OSError."""
    config = BenchmarkConfig.from_dict(request.config)
    record = ShapeSweepRecord(sweep_id="", created="", config=config, **request.settings())
    slug = re.sub(r"_b\d+_", "_", config.slug(), count=1)
    return ShapeSweepFolder.create(Path(root), slug, record)


def shape_request_of(record: ShapeSweepRecord) -> protocol.ShapeSweepRequest:
    """The request a saved shape sweep was made from."""
    return protocol.ShapeSweepRequest(config=record.config.to_dict(), **record.settings())


@dataclass
class ShapeSweepOutcome(OneWorkerOutcome):
    """How a shape sweep ended."""

    record: ShapeSweepRecord


def _add_point(record: ShapeSweepRecord, point: ShapePoint) -> None:
    record.add(point)


class ShapeSweepRun(OneWorkerJob[ShapeSweepOutcome]):
    """Runs a shape sweep in one worker (started by ``launcher``: this machine, SSH or Slurm).

    The worker is started with ``--shape-sweep`` and sent the request; every
    ``shape_point`` it sends is added to the folder's record (saved at once)
    and passed to ``on_point`` with a copy of the record. No Qt, no torch.
    """

    outcome_class = ShapeSweepOutcome
    stop_thread = "shape-sweep-stop"
    folder: ShapeSweepFolder
    on_point: Callable[[ShapeSweepRecord], None] | None

    def __init__(
        self,
        folder: ShapeSweepFolder,
        launcher: WorkerLauncher | None = None,
        on_point: Callable[[ShapeSweepRecord], None] | None = None,
        on_log: Callable[[str], None] | None = None,
        hello_timeout: float | None = None,
        watch_limits: WatchLimits | None = None,
        pin: Callable[[BenchmarkConfig], BenchmarkConfig] | None = None,
    ):
        super().__init__(folder, launcher, on_point, on_log, hello_timeout, watch_limits)
        #: the configuration as it runs (an Agreement's apply: the agreed copies of its code)
        self.pin = pin

    def fraction(self) -> float:
        record = self.folder.record
        total = len(record.batches) * (1 + len(record.modes) * len(record.config.compiled_variants()))
        return min(1.0, len(record.points) / total) if total else 1.0

    def _run(self) -> ShapeSweepOutcome:
        request = shape_request_of(self.folder.record)
        if self.pin is not None:
            request.config = self.pin(BenchmarkConfig.from_dict(request.config)).to_dict()
        self.folder.update(self._start)
        status, message, refused = self._drive(request, (protocol.SHAPE_SWEEP_FLAG, *compile_host_flags(None)))

        def finish(record: ShapeSweepRecord) -> None:
            record.status = status
            record.message = message

        return self._outcome(self.folder.update(finish), refused)

    def _event(self, event: object) -> None:
        if isinstance(event, protocol.ShapePointEvent):
            snapshot = self.folder.update(functools.partial(_add_point, point=ShapePoint.from_event(event)))
            if self.on_point is not None:
                self.on_point(snapshot)
