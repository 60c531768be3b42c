"""Text for a terminal: every control character made visible before it is written.

Run folders, sweeps and targets files may come from someone else; an escape
sequence in a variant name, a message or a path could set the terminal's title,
clear the screen or write the clipboard (OSC 52). The CLI writes all its output
through :class:`TerminalStream`, so no string read from a file reaches the
terminal raw: C0 and C1 controls, DEL, ESC and the bidi overrides become
visible escapes (``\\x1b``, ``\\u202e``); newlines and tabs stay.
"""

from __future__ import annotations

import re
from typing import Any, TextIO

_CONTROLS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


def _visible(match: re.Match[str]) -> str:
    code = ord(match.group(0))
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def escape_controls(text: str) -> str:
    """``text`` with every control and bidi character (but newline and tab) as a visible escape."""
    return _CONTROLS.sub(_visible, text)


class TerminalStream:
    """A text stream that escapes control characters in everything written through it.

    :meth:`write_control` is the one way to send a control sequence on purpose
    (the progress bar's carriage return).
    """

    def __init__(self, stream: TextIO):
        self.stream = stream

    def write(self, text: str) -> int:
        return self.stream.write(escape_controls(text))

    def write_control(self, sequence: str) -> int:
        return self.stream.write(sequence)

    def flush(self) -> None:
        self.stream.flush()

    def isatty(self) -> bool:
        try:
            return self.stream.isatty()
        except (AttributeError, ValueError):
            return False

    def fileno(self) -> int:
        return self.stream.fileno()

    @property
    def encoding(self) -> str:
        return getattr(self.stream, "encoding", None) or "utf-8"

    def __getattr__(self, name: str) -> Any:  # anything else a TextIO has
        return getattr(self.stream, name)


def guarded(stream: TextIO) -> TextIO:
    """``stream`` wrapped in a :class:`TerminalStream` (once)."""
    if isinstance(stream, TerminalStream):
        return stream
    return TerminalStream(stream)  # type: ignore[return-value]
