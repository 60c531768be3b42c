"""Dynamo's and Inductor's logs, heard while a variant compiles: graph breaks, output code, limits."""

from __future__ import annotations

import linecache
import logging
import os
import re
from typing import Any

_GRAPH_BREAK_LOGGERS = (
    "torch._dynamo.symbolic_convert.__graph_breaks",
    "torch._dynamo.convert_frame.__graph_breaks",
)
_OUTPUT_CODE_LOGGERS = (
    "torch._inductor.graph.__output_code",
    "torch._inductor.codecache.__output_code",
)
_LIMIT_LOGGER = "torch._dynamo.convert_frame"
_BREAK_AT = re.compile(r"[Gg]raph break.*? in user code at (.+):(\d+)\s*$", re.MULTILINE)


class LogTap(logging.Handler):
    """Listens to Dynamo's and Inductor's own logs for graph breaks, output code and limits.

    Loggers that the user did not switch on (``TORCH_LOGS``) are raised to
    DEBUG for this handler only: their lines are not passed on to stderr.
    """

    def __init__(self) -> None:
        super().__init__(level=logging.DEBUG)
        self.breaks: list[dict[str, Any]] = []
        self.code_paths: list[str] = []
        self.limits: list[str] = []
        self._restore: list[tuple[logging.Logger, int, bool]] = []
        for name in (*_GRAPH_BREAK_LOGGERS, *_OUTPUT_CODE_LOGGERS):
            lg = logging.getLogger(name)
            self._restore.append((lg, lg.level, lg.propagate))
            if not lg.isEnabledFor(logging.DEBUG):
                lg.setLevel(logging.DEBUG)
                lg.propagate = False
            lg.addHandler(self)
        limit = logging.getLogger(_LIMIT_LOGGER)
        self._restore.append((limit, limit.level, limit.propagate))
        limit.addHandler(self)

    def emit(self, record: logging.LogRecord) -> None:
        try:
            fmt = record.msg if isinstance(record.msg, str) else ""
            if record.name in _OUTPUT_CODE_LOGGERS:
                if fmt.startswith("Output code written to"):
                    args = record.args if isinstance(record.args, tuple) else ()
                    path = str(args[0]) if args else record.getMessage().split(": ", 1)[-1]
                    if path not in self.code_paths:
                        self.code_paths.append(path)
            elif record.name in _GRAPH_BREAK_LOGGERS:
                found = parse_graph_break(record.getMessage())
                if found is not None:
                    self.breaks.append(found)
            elif fmt.startswith("torch._dynamo hit config."):
                lines = record.getMessage().splitlines()
                self.limits.append(" ".join(ln.strip() for ln in lines[:3])[:400])
        except Exception:  # noqa: BLE001 - a log line never fails a run
            pass

    def close(self) -> None:
        for lg, level, propagate in self._restore:
            lg.removeHandler(self)
            lg.setLevel(level)
            lg.propagate = propagate
        super().close()


def parse_graph_break(message: str) -> dict[str, Any] | None:
    """Reason, file, line and source text of one ``graph_breaks`` log message."""
    at = _BREAK_AT.search(message)
    if at is None:
        return None
    file, line = at.group(1).strip(), int(at.group(2))
    text = message.split("Graph Break Reason:", 1)[-1]
    skipped = _SKIPPED in text
    if skipped:
        # "Failed to handle graph break gracefully. Skipping the function … encountered:" + the cause
        text = text.split("encountered:", 1)[-1]
    reason = short_reason(text)
    source = linecache.getline(file, line).strip() if os.path.isfile(file) else ""
    found: dict[str, Any] = {"reason": reason, "file": file, "line": line, "source": source[:300]}
    if skipped:
        found["skipped"] = True
    return found


#: Dynamo gave up on the whole function (no graph kept): it runs eagerly, which is not a break.
_SKIPPED = "Skipping the function"


class BreakCount:
    """Graph breaks and skipped functions heard on Dynamo's ``graph_breaks`` log meanwhile.

    ``with BreakCount() as heard: …`` then ``heard.breaks``, ``heard.skipped`` (parsed
    records). Every torch that logs graph breaks (2.1 on) is heard alike, whichever of
    its counters (``graph_break``, ``unimplemented``) the break went to.
    """

    def __init__(self) -> None:
        self.breaks: list[dict[str, Any]] = []
        self.skipped: list[dict[str, Any]] = []
        self._tap: LogTap | None = None

    def __enter__(self) -> BreakCount:
        self._tap = LogTap()
        return self

    def __exit__(self, *exc: object) -> None:
        tap, self._tap = self._tap, None
        if tap is None:
            return
        tap.close()
        for found in tap.breaks:
            (self.skipped if found.get("skipped") else self.breaks).append(found)


def short_reason(text: str) -> str:
    """A graph break's reason in a line: what Dynamo could not trace, and its explanation."""
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    lines = [ln for ln in lines if not ln.startswith("Encountered graph break when attempting")]
    head = lines[0] if lines else text.strip()
    expl = next((ln for ln in lines if ln.startswith("Explanation:")), "")
    hint = next((ln for ln in lines if ln.startswith("Hint:")), "")
    out = head
    if expl:
        out += " — " + expl[len("Explanation:"):].strip()
    if hint:
        out += " (hint: " + hint[len("Hint:"):].strip() + ")"
    return out[:600]

