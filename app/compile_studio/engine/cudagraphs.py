"""Why Inductor did not use CUDA graphs: its skip messages, captured as they happen.

Inductor counts each CUDA-graph skip (``counters["inductor"]["cudagraph_skips"]``)
and logs its reason: on the ``cudagraphs`` artifact logger of
``torch._inductor.cudagraph_utils`` (``log_cudagraph_skip_and_bump_counter``,
torch 2.5 and later), on ``perf_hints`` loggers before that. It also stores the
reason in the compile's metrics record (``cudagraph_skip_reason``) while a
compile is in progress. The run listens to those loggers, reads the records
and the counter, so a "reduce-overhead" variant whose graphs were skipped says
so and why instead of silently running without them.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Any

#: Loggers Inductor reports CUDA-graph skips on: the ``cudagraphs`` artifact
#: (``log_cudagraph_skip_and_bump_counter``), then older torch's ``perf_hints``.
_LOGGERS = (
    "torch._inductor.cudagraph_utils.__cudagraphs",
    "torch._inductor.cudagraph_trees.__cudagraphs",
    "torch._inductor.cudagraph_utils.__perf_hints",
    "torch._inductor.cudagraph_trees.__perf_hints",
    "torch._inductor.compile_fx.__perf_hints",
)

#: Where a skip message points at the code that caused it (a stack follows).
_STACK_MARKERS = (". Found from", "Found from")
REASON_CHARS = 300


def skip_reason(message: str) -> str:
    """The reason a skip message gives: its first line, without the pointer to the stack."""
    text = str(message).strip()
    line = text.splitlines()[0].strip() if text else ""
    for marker in _STACK_MARKERS:
        cut = line.find(marker)
        if cut > 0:
            line = line[:cut].rstrip(" .:")
            break
    return line[:REASON_CHARS]


def is_skip_message(message: str) -> bool:
    """Whether a log message (at warning level) reports a CUDA-graph skip."""
    return "cudagraph" in message.lower()


def metrics_reasons(records: Iterable[Any]) -> list[str]:
    """The ``cudagraph_skip_reason`` of each compile metrics record that has one."""
    out = []
    for record in records:
        reason = getattr(record, "cudagraph_skip_reason", None)
        if reason is None and isinstance(record, dict):
            reason = record.get("cudagraph_skip_reason")
        if reason:
            out.append(skip_reason(reason))
    return out


def _skip_counter() -> int | None:
    try:
        from torch._dynamo.utils import counters

        return int(counters["inductor"].get("cudagraph_skips", 0))
    except Exception:  # noqa: BLE001 - a torch without the counter
        return None


def _compilation_metrics() -> list[Any]:
    try:
        from torch._dynamo.utils import get_compilation_metrics

        return list(get_compilation_metrics())
    except Exception:  # noqa: BLE001 - a torch without compile metrics
        return []


class CudagraphSkipLog(logging.Handler):
    """Collects the reasons Inductor gives for skipping CUDA graphs.

    ``reasons`` holds one entry per skip heard or found in a metrics record
    (a record of a skip already heard is not counted twice); :meth:`count`
    is monotonic even where torch's counter is cleared.
    """

    def __init__(self) -> None:
        super().__init__(level=logging.WARNING)
        self.reasons: list[str] = []
        self._unmatched: list[str] = []
        self._seen_records: list[Any] = list(_compilation_metrics())
        self._counter_last = _skip_counter() or 0
        self._counted = 0
        #: len(reasons) when count() first returned each value
        self._marks: dict[int, int] = {}
        self._loggers = [logging.getLogger(name) for name in _LOGGERS]
        for lg in self._loggers:
            lg.addHandler(self)
            if lg.getEffectiveLevel() > logging.WARNING:
                lg.setLevel(logging.WARNING)

    def emit(self, record: logging.LogRecord) -> None:
        try:
            message = record.getMessage()
        except Exception:  # noqa: BLE001 - a malformed record is no reason
            return
        if is_skip_message(message):
            reason = skip_reason(message)
            self.reasons.append(reason)
            self._unmatched.append(reason)

    def _read_metrics(self) -> None:
        """Add the skip reasons of compile metrics records that are new since the last read."""
        records = _compilation_metrics()
        new = [r for r in records if not any(r is s for s in self._seen_records)]
        self._seen_records = records
        for reason in metrics_reasons(new):
            if reason in self._unmatched:
                self._unmatched.remove(reason)
            else:
                self.reasons.append(reason)

    def _read_counter(self) -> int:
        """Skips Inductor counted since this log began (a cleared counter starts again from 0)."""
        now = _skip_counter()
        if now is None:
            return self._counted
        self._counted += now - self._counter_last if now >= self._counter_last else now
        self._counter_last = now
        return self._counted

    def count(self) -> int:
        """Skips so far: Inductor's counter, or the reasons found where it counted fewer."""
        self._read_metrics()
        value = max(self._read_counter(), len(self.reasons))
        self._marks.setdefault(value, len(self.reasons))
        return value

    def since(self, count: int) -> list[str]:
        """Reasons for the skips after ``count`` (a generic one for each none was given for)."""
        new = self.count() - count
        if new <= 0:
            return []
        first = self._marks.get(count, min(count, len(self.reasons)))
        heard = self.reasons[first:]
        if len(heard) < new:
            heard.append(f"{new - len(heard)} skip(s) counted by Inductor (no reason logged)")
        return heard

    def in_window(self, count: int) -> list[str]:
        """Skips after ``count`` (taken before a timed window), read again after it."""
        return [f"in the timed window: {r}" for r in self.since(count)]

    def close(self) -> None:
        for lg in self._loggers:
            lg.removeHandler(self)
        super().close()
