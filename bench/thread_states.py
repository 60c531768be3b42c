"""What each thread of a process is doing, sampled from outside it every few milliseconds.

``python bench/thread_states.py PID GUI_TID OUT STOP [INTERVAL_MS]``: until the file STOP
exists, reads ``/proc/PID/task/*/stat`` (each thread's state: R running or runnable, S
sleeping, D waiting on I/O) and, for the thread GUI_TID, ``syscall`` (the system call it
waits in) and ``wchan``; writes JSON to OUT: ``{"samples": [[monotonic_ns, gui_state,
gui_call, [[tid, comm, state], …]], …]}`` where the list holds the threads other than the
GUI thread that were in state R. A separate process, so it samples while the watched
process's Python threads wait for its interpreter lock (a watcher inside would wait too).
:func:`during` summarizes the samples of one interval. Linux only.
"""

from __future__ import annotations

import json
import sys
import time
from collections import Counter
from pathlib import Path

#: x86-64 system call numbers a waiting GUI thread is usually in
SYSCALLS = {
    "0": "read", "1": "write", "7": "poll", "20": "writev", "23": "select", "35": "nanosleep",
    "44": "sendto", "45": "recvfrom", "46": "sendmsg", "47": "recvmsg", "202": "futex",
    "230": "clock_nanosleep", "232": "epoll_wait", "270": "pselect6", "271": "ppoll",
    "281": "epoll_pwait",
}


def _read(path: Path) -> str:
    try:
        return path.read_text()
    except OSError:
        return ""


def _state(stat: str) -> str:
    """The state letter of a ``stat`` line (after the command name in parentheses)."""
    tail = stat.rpartition(")")[2].split()
    return tail[0] if tail else "?"


def sample(pid: int, gui: int) -> list:
    """One sample: [monotonic ns, the GUI thread's state, its system call, other running threads]."""
    task = Path(f"/proc/{pid}/task")
    now = time.monotonic_ns()
    gui_state, gui_call, running = "?", "?", []
    try:
        tids = [int(t) for t in (p.name for p in task.iterdir()) if t.isdigit()]
    except OSError:
        return [now, "gone", "", []]
    for tid in tids:
        state = _state(_read(task / str(tid) / "stat"))
        if tid == gui:
            gui_state = state
            call = _read(task / str(tid) / "syscall").split()
            if call and call[0] == "running":
                gui_call = "running"
            elif call:
                gui_call = SYSCALLS.get(call[0], f"syscall {call[0]}")
                if gui_call == "futex":
                    gui_call += f" ({_read(task / str(tid) / 'wchan').strip() or '?'})"
        elif state == "R":
            running.append([tid, _read(task / str(tid) / "comm").strip(), state])
    return [now, gui_state, gui_call, running]


def during(samples: list, start_ns: int, end_ns: int, names: dict[int, str] | None = None) -> str:
    """The samples within [start_ns, end_ns] in words: where the GUI thread was (share of the
    samples per state and system call) and which other threads ran most."""
    inside = [s for s in samples if start_ns <= s[0] <= end_ns]
    if not inside:
        return "no sample"
    names = names or {}
    gui = Counter(f"{s[1]} {s[2]}" for s in inside)
    others = Counter(f"{names.get(t, comm)}/{t}" for s in inside for t, comm, _ in s[3])
    n = len(inside)
    gui_words = ", ".join(f"{k} {100 * c / n:.0f} %" for k, c in gui.most_common(3))
    other_words = ", ".join(f"{k} {100 * c / n:.0f} %" for k, c in others.most_common(3)) or "none"
    return f"GUI thread: {gui_words}; other threads running: {other_words} ({n} samples)"


def main(argv: list[str]) -> int:
    pid, gui, out, stop = int(argv[0]), int(argv[1]), Path(argv[2]), Path(argv[3])
    interval = float(argv[4]) / 1000.0 if len(argv) > 4 else 0.002
    samples = []
    while not stop.exists() and Path(f"/proc/{pid}").exists():
        samples.append(sample(pid, gui))
        time.sleep(interval)
    out.write_text(json.dumps({"samples": samples}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
