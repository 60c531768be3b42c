"""Compile processes started ahead: one per compiled variant, imported beside the worker rather
than after it (a flag for a worker started for a run; ``hosts N`` for one started ahead)."""

from __future__ import annotations

import io
import threading

import pytest

from compile_studio import worker
from compile_studio.core import protocol
from compile_studio.core.config import BenchmarkConfig
from compile_studio.gui.standby import STANDBY_ENV
from compile_studio.jobs.session import compile_host_flags


def _config(**changes) -> BenchmarkConfig:
    base = dict(layers="8,8,4", batch_size=2, device="cpu", iterations=3, warmup=0,
                variants=["eager", "aot_eager"], compile_timing="isolated")
    base.update(changes)
    return BenchmarkConfig(**base)


def test_a_worker_for_a_run_starts_one_compile_process_ahead_per_compiled_variant():
    assert compile_host_flags(_config()) == ()  # one: the worker's default
    two = compile_host_flags(_config(variants=["eager", "aot_eager", "default"]))
    assert two == (protocol.compile_hosts_flag(2),) and protocol.compile_hosts_ahead(list(two)) == 2
    many = ["eager", "aot_eager", "default", "max-autotune-no-cudagraphs", "lite", "reduce-overhead"]
    assert protocol.compile_hosts_ahead(list(compile_host_flags(_config(variants=many)))) == 4  # at most
    for none in (_config(variants=["eager"]), _config(compile_timing="in_run"), None):
        assert protocol.compile_hosts_ahead(list(compile_host_flags(none))) == 0


def test_the_flag_and_the_line_are_read_strictly():
    assert protocol.compile_hosts_ahead([]) == 1
    assert protocol.compile_hosts_ahead(["--compile-hosts-ahead=3"]) == 3
    assert protocol.compile_hosts_ahead(["--compile-hosts-ahead=99"]) == protocol.MAX_COMPILE_HOSTS_AHEAD
    assert protocol.compile_hosts_ahead(["--compile-hosts-ahead=-2"]) == 0
    assert protocol.compile_hosts_ahead(["--compile-hosts-ahead=x"]) == 1
    assert protocol.compile_hosts_ahead(["--compile-hosts-ahead=3", protocol.NO_COMPILE_HOST_AHEAD_FLAG]) == 0
    assert protocol.parse_hosts_line(protocol.hosts_line(2)) == 2
    assert protocol.parse_hosts_line("hosts 1000\n") == protocol.MAX_COMPILE_HOSTS_AHEAD
    for other in ('{"layers": "8,8"}', "hosts", "hosts two", "stop", "drawn 3", ""):
        assert protocol.parse_hosts_line(other) is None
    # the pause's answer is read by the same rule
    assert protocol.parse_drawn_line(protocol.drawn_line(7)) == 7
    for other in ("drawn -1", "drawn", "drawn x", "hosts 2", "drawn7", ""):
        assert protocol.parse_drawn_line(other) is None


def test_a_waiting_worker_starts_more_on_a_hosts_line_never_fewer_and_then_reads_its_config(monkeypatch):
    started: list[int] = []

    class Host:
        def __init__(self) -> None:
            started.append(len(started))

    monkeypatch.setattr(worker.IsolatedCompile, "start_host", staticmethod(lambda stop: Host()))
    monkeypatch.setattr(worker.sys, "stdin", io.StringIO("hosts 3\nhosts 2\nhosts 99\n{\"layers\": \"8,4\"}\n"))
    hosts: list = [Host()]  # the one its flags started
    line = worker._config_line(hosts, threading.Event())
    assert line.strip() == '{"layers": "8,4"}'
    assert len(hosts) == protocol.MAX_COMPILE_HOSTS_AHEAD == len(started)


@pytest.mark.long
def test_the_worker_started_ahead_gets_a_process_ahead_per_compiled_variant_of_the_form(qtbot, monkeypatch, tiny_config):
    """The window asks the worker it started ahead for more compile processes as the form's
    compiled variants grow; that worker reads the line, and a run with fewer closes the rest."""
    from support.gui_helpers import RUN_TIMEOUT_MS, open_window

    monkeypatch.setenv(STANDBY_ENV, "1")
    window = open_window(qtbot)
    keeper = window.live.standby
    qtbot.waitUntil(lambda: keeper.standby is not None and keeper.standby.state == "ready", timeout=60_000)
    standby = keeper.standby
    assert standby.hosts == protocol.compile_hosts_ahead(list(compile_host_flags(window.config_panel.config())))
    isolated = {**tiny_config, "compile_timing": "isolated"}
    window.config_panel.set_config(BenchmarkConfig(**{**isolated, "variants": ["eager", "aot_eager", "default"]}))
    assert standby.hosts == 2, "asked for one per compiled variant of the form"
    window.config_panel.set_config(BenchmarkConfig(**isolated))
    assert standby.hosts == 2, "never fewer"
    config = BenchmarkConfig(**isolated)
    with qtbot.waitSignal(window.run_finished, timeout=RUN_TIMEOUT_MS) as blocker:
        window.start_run(config)
    run = blocker.args[0]
    assert run.status == "complete", run.message
    assert run.measurement["worker_prestarted"] is True
    assert run.variants["aot_eager"].compile_timing == "isolated"
    assert run.variants["aot_eager"].compile_s is not None and run.variants["aot_eager"].compile_s > 0
