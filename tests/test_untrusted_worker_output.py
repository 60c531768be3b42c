"""A worker's output is input: a stand-in worker speaking the real protocol (started through
COMPILE_STUDIO_WORKER_PREFIX) sends numbers no timing can be and lines without end; the run keeps
only what the loader would keep, says what it refused, and the supervisor's memory stays bounded."""

from __future__ import annotations

import json
import math
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from compile_studio.core import protocol
from compile_studio.results import load_run

CLI = [sys.executable, "-m", "compile_studio.cli"]

#: The stand-in: says hello (also to ``--hello``), reads the config, then writes the lines of the
#: JSON list in $STANDIN_LINES; an item {"huge": N, "newline": false} is N bytes of garbage (on stderr
#: with "stderr": true), an item {"sleep": S} waits S seconds.
STANDIN = textwrap.dedent("""
    import json, os, sys, time
    out = sys.stdout.buffer
    hello = {"type": "hello", "protocol": %d, "environment": {"torch": "2.x", "devices": ["cpu"],
             "device": "cpu", "device_names": {"cpu": "stand-in"}}}
    out.write(json.dumps(hello).encode() + b"\\n"); out.flush()
    if "--hello" in sys.argv:
        sys.exit(0)
    sys.stdin.readline()
    for item in json.load(open(os.environ["STANDIN_LINES"])):
        if isinstance(item, dict) and "huge" in item:
            to = sys.stderr.buffer if item.get("stderr") else out
            chunk = b"x" * (1 << 20)
            for _ in range(item["huge"] // len(chunk)):
                to.write(chunk)
            if item.get("newline", True):
                to.write(b"\\n")
            to.flush()
            continue
        if isinstance(item, dict) and "sleep" in item:
            time.sleep(item["sleep"])
            continue
        out.write((item if isinstance(item, str) else json.dumps(item)).encode() + b"\\n")
        out.flush()
""") % protocol.PROTOCOL_VERSION


def standin_env(tmp_path: Path, lines: list) -> dict[str, str]:
    script = tmp_path / "standin.py"
    script.write_text(STANDIN)
    (tmp_path / "lines.json").write_text(json.dumps(lines, allow_nan=True))
    return {
        **os.environ,
        "COMPILE_STUDIO_WORKER_PREFIX": f"{sys.executable} {script}",
        "STANDIN_LINES": str(tmp_path / "lines.json"),
    }


def samples(variant: str, phase: str, first: int, wall: list) -> str:
    """A samples line as a worker writes it (NaN and Infinity as Python's json writes them)."""
    return json.dumps({"type": "samples", "variant": variant, "phase": phase, "first_iteration": first,
                       "wall_ms": wall, "device_ms": None}, allow_nan=True)


def a_run(bad_walls: list) -> list:
    good = [2.0 + 0.01 * i for i in range(20)]
    lines: list = [{"type": "phase", "variant": "eager", "phase": "measure", "iterations": 20}]
    lines.append(samples("eager", "measure", 0, good[:10]))
    for k, wall in enumerate(bad_walls):
        lines.append(samples("eager", "measure", 10 + k, [wall]))
    lines.append(samples("eager", "measure", 10, good[10:]))
    lines.append({"type": "variant_done", "variant": "eager", "status": "done"})
    lines.append({"type": "done", "status": "complete"})
    return lines


def run_cli(tmp_path: Path, lines: list, *extra: str, timeout: float = 120, **kw) -> subprocess.CompletedProcess:
    return subprocess.run(
        [*CLI, "run", "--out", str(tmp_path / "runs"), "--device", "cpu", "--variants", "eager",
         "--iterations", "20", "--warmup", "0", *extra],
        capture_output=True, text=True, timeout=timeout, env=standin_env(tmp_path, lines), **kw,
    )


def test_timings_that_are_not_timings_are_refused_and_the_run_says_so(tmp_path):
    bad = [math.nan, math.inf, -math.inf, -1.0, -2.0, 1e308]
    p = run_cli(tmp_path, a_run(bad))
    assert "Traceback" not in p.stderr
    (folder,) = (tmp_path / "runs").iterdir()
    text = (folder / "samples.csv").read_text()
    assert "nan" not in text.lower() and "inf" not in text.lower() and ",-" not in text and "e+308" not in text
    run = load_run(folder)
    walls = run.variants["eager"].samples.measured_wall_ms()
    assert len(walls) == 20 and walls.min() >= 2.0
    assert run.variants["eager"].stats().median > 0
    refused = run.measurement["worker_refused"]
    assert refused["events"] == len(bad)
    assert any("wall_ms" in why for why in refused["first"])
    assert "refused a 'samples' event" in p.stderr + p.stdout
    shown = subprocess.run([*CLI, "show", str(folder)], capture_output=True, text=True, timeout=60)
    assert f"note: {len(bad)} events from the worker were refused" in shown.stdout


def test_every_field_of_every_event_type_with_bad_values_never_raises(tmp_path):
    """The session's boundary, fed every field of every event type × bad values, in a real run."""
    import dataclasses

    from compile_studio.core.config import BenchmarkConfig
    from compile_studio.jobs.session import RunSession
    from compile_studio.launchers.supervisor import WorkerLauncher
    from compile_studio.results import RunStore

    bad_values = [math.nan, math.inf, -1, 1e308, -1e308, "x" * 300, None, True, [], {}, [math.nan],
                  {"a": math.nan}, 2**70, "", [[[[]]]]]
    lines: list = []
    for cls in dict.fromkeys(protocol.EVENT_CLASSES.values()):
        if cls in (protocol.HelloEvent, protocol.DoneEvent):
            continue
        for f in dataclasses.fields(cls):
            for bad in bad_values:
                doc = {"type": cls.TYPE, "variant": "eager", "phase": "measure", "first_iteration": 0,
                       "wall_ms": [1.0], "kind": "internal", "message": "m", "compile_s": 1.0,
                       "first_call_ms": 1.0, "harness_floor_ms": 0.01, "gpu": 0, "t_s": [0.0],
                       "iteration": [0], "sm_clock_mhz": [1.0], "temperature_c": [1.0], "power_w": [1.0],
                       "block": 0, "mode": "false", "batch": 1}
                if cls is protocol.GpuStateEvent:
                    doc["variant"] = ["eager"]
                doc[f.name] = bad
                lines.append(json.dumps(doc, allow_nan=True))
    lines.append({"type": "done", "status": "complete"})
    env = standin_env(tmp_path, lines)
    script = [sys.executable, str(tmp_path / "standin.py")]
    config = BenchmarkConfig.from_dict({"layers": "8,8", "device": "cpu", "variants": ["eager"],
                                        "iterations": 20, "warmup": 0})
    events, log = [], []
    session = RunSession(config, RunStore(tmp_path / "runs"), launcher=WorkerLauncher(command=tuple(script), env=env),
                         on_event=events.append, on_log=log.append)
    outcome = session.run()
    assert outcome.status in ("complete", "failed")
    assert outcome.run.measurement["worker_refused"]["events"] > 100
    assert not any("Traceback" in line for line in log)
    crashes = [e.message for e in events if isinstance(e, protocol.ErrorEvent)
               and re.match(r"\w+(Error|Exception): ", e.message)]
    assert not crashes, crashes[:3]
    run = load_run(outcome.folder)
    assert all(w >= 0 and math.isfinite(w) for v in run.variants.values() for w in v.samples.wall_ms)


def _memory_cap(mib: int):
    def apply() -> None:
        import resource

        resource.setrlimit(resource.RLIMIT_AS, (mib << 20, mib << 20))

    return apply


def test_a_300_mib_line_is_cut_and_the_worker_ended_within_a_memory_cap(tmp_path):
    """With 400 MiB of address space the CLI cannot hold the line (it used to die of MemoryError)."""
    p = run_cli(tmp_path, [{"huge": 300 << 20, "newline": False}, {"sleep": 60}],
                preexec_fn=_memory_cap(400), timeout=100)
    assert "MemoryError" not in p.stdout + p.stderr and "Traceback" not in p.stderr
    assert "not the protocol" in p.stdout + p.stderr and "so Compile Studio stopped it" in p.stdout + p.stderr
    (folder,) = (tmp_path / "runs").iterdir()
    run = load_run(folder)
    assert run.status == "failed"
    cut = run.measurement["worker_output_cut"]
    assert cut["protocol_lines"] == 1 and cut["protocol_bytes"] > 32 << 20


def test_a_200_mib_log_line_reaches_the_terminal_cut(tmp_path):
    lines = [{"huge": 200 << 20, "stderr": True}, *a_run([])]
    p = run_cli(tmp_path, lines, preexec_fn=_memory_cap(400), timeout=200)
    assert p.returncode == 0, p.stderr[-2000:]
    assert len(p.stderr) + len(p.stdout) < 64 * 1024
    (folder,) = (tmp_path / "runs").iterdir()
    cut = load_run(folder).measurement["worker_output_cut"]
    assert cut["log_lines"] == 1 and cut["log_bytes"] >= (200 << 20) - 4096


def test_a_worker_that_keeps_sending_garbage_is_ended(tmp_path):
    """Short lines that are no event, a malformed one, refused ones: past the limit the run ends."""
    garbage = ["not json"] * 400 + ['{"type": "samples"}'] * 300 + [samples("eager", "measure", 0, [-1.0])] * 400
    p = run_cli(tmp_path, [*garbage, {"sleep": 60}], timeout=50)
    assert "Traceback" not in p.stderr
    assert "so Compile Studio stopped it" in p.stdout + p.stderr
    (folder,) = (tmp_path / "runs").iterdir()
    assert load_run(folder).status == "failed"


def _any_json():
    scalars = st.one_of(st.none(), st.booleans(), st.integers(min_value=-(2**70), max_value=2**70),
                        st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=20))
    return st.recursive(scalars, lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=8), inner, max_size=4)), max_leaves=10)


@st.composite
def _event_docs(draw):
    import dataclasses

    cls = draw(st.sampled_from(list(dict.fromkeys(protocol.EVENT_CLASSES.values()))))
    doc = {"type": cls.TYPE}
    for f in dataclasses.fields(cls):
        if draw(st.booleans()):
            doc[f.name] = draw(_any_json())
    if draw(st.booleans()):  # a valid samples body with some bad numbers in it
        doc.update(type="samples", variant="eager", phase="measure", first_iteration=0,
                   wall_ms=draw(st.lists(st.floats(allow_nan=True, allow_infinity=True), max_size=5)))
    return doc


@settings(max_examples=60, deadline=None)
@given(docs=st.lists(_event_docs(), min_size=1, max_size=8))
def test_fuzz_a_workers_event_stream_is_kept_or_refused_never_raises(docs):
    """Every event type with any values in any field: checked at the boundary, then recorded and
    summarised, and nothing but a refusal comes of it."""
    from compile_studio.launchers.event_checks import Refused, check_event
    from compile_studio.results.analysis.summary import summarize
    from compile_studio.results.report.run_export import markdown_report
    from compile_studio.results.storage.recorder import RunRecorder

    rec = RunRecorder({"layers": "8,8", "device": "cpu", "variants": ["eager"]}, None)
    for doc in docs:
        event = protocol.from_dict(json.loads(json.dumps(doc, allow_nan=True)))
        if event is None:
            continue
        try:
            event = check_event(event)
        except Refused as exc:
            assert str(exc)
            continue
        rec.handle(event)
        for v in rec.run.variants.values():
            assert all(0 <= w <= 1e9 for w in v.samples.wall_ms)
    rec.finish()
    summarize(rec.run)
    markdown_report(rec.run)
