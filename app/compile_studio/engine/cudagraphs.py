"""Why Inductor did not use CUDA graphs: its skip messages, captured as they happen.

Inductor counts each CUDA-graph skip (``counters["inductor"]["cudagraph_skips"]``)
and logs its reason on the ``perf_hints`` artifact logger. The run listens to
that logger, so a "reduce-overhead" variant whose graphs were skipped says so
and why instead of silently running without them.
"""

from __future__ import annotations

import logging

#: Loggers Inductor reports CUDA-graph skips on (torch 2.4 – 2.13).
_LOGGERS = (
    "torch._inductor.cudagraph_utils.__perf_hints",
    "torch._inductor.cudagraph_trees.__perf_hints",
    "torch._inductor.compile_fx.__perf_hints",
)


class CudagraphSkipLog(logging.Handler):
    """Collects the reasons Inductor gives for skipping CUDA graphs."""

    def __init__(self) -> None:
        super().__init__(level=logging.DEBUG)
        self.reasons: list[str] = []
        self._loggers = [logging.getLogger(name) for name in _LOGGERS]
        for lg in self._loggers:
            lg.addHandler(self)
            if lg.level == logging.NOTSET or lg.level > logging.WARNING:
                lg.setLevel(logging.WARNING)

    def emit(self, record: logging.LogRecord) -> None:
        message = record.getMessage()
        if "cudagraph" in message.lower():
            self.reasons.append(message.strip().splitlines()[0][:300])

    def count(self) -> int:
        """Skips so far: Inductor's counter, or the reasons heard where it has none."""
        try:
            from torch._dynamo.utils import counters

            return max(int(counters["inductor"].get("cudagraph_skips", 0)), len(self.reasons))
        except Exception:  # noqa: BLE001
            return len(self.reasons)

    def since(self, count: int) -> list[str]:
        """Reasons for the skips after ``count`` (a generic one where none was logged)."""
        new = self.count() - count
        if new <= 0:
            return []
        heard = self.reasons[-new:] if self.reasons else []
        return heard or [f"{new} skip(s) counted by Inductor (no reason logged)"]

    def close(self) -> None:
        for lg in self._loggers:
            lg.removeHandler(self)
        super().close()
