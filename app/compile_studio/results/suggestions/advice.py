"""From why to what to try: suggestions read from a measured run, ranked by the effect its evidence allows.

A run folder holds what the rules read: run.json (:class:`RunResult`: the
configuration, the environment the worker reported, the summary, and the
compact copy of the diagnostics in ``measurement["why"]``) and why.json
(:func:`results.explain.why.load_why`: graph breaks with their reasons and source
lines, recompiles with their guard reasons, a hit recompile limit, CUDA-graph
skips, compile phases and cache hits). :func:`gather` collects them into a
:class:`RunEvidence`; :func:`advise` runs the rules of
:mod:`results.suggestions.advice_rules` over it and returns the :class:`Suggestion`\\ s
ranked.

A suggestion is either a configuration change — a delta on the run's
configuration dict (only fields of :class:`config.BenchmarkConfig`; variants
in a delta are added to the list, never replace it), which
:meth:`Suggestion.apply` applies — or a code change (a file:line and a
snippet, shown, never tried). Each names the PyTorch page recommending it.

Nothing is suggested that the device cannot do: a configuration delta is
checked against the run's environment (:meth:`BenchmarkConfig.problems` with
the worker's device list, dtypes, compile modes and memory) and dropped when
it would make a problem the run did not have; the rules themselves never
offer CUDA graphs off CUDA, nor a dtype the environment does not list.

Ranking (:func:`rank`)
----------------------
1. By **tier** — what the change acts on:

   0. *compile did not run the model as one graph*: a hit recompile limit,
      recompiles on a size change, graph breaks. Until they are gone every
      other figure of the compiled variant describes a model compile ran
      only in part, so they come first.
   1. *the time of every call*.
   2. *the one-off compile time* (it is paid once per process).

2. Within a tier, by **effect**: the largest share of the affected time the
   run's evidence allows the change to remove (an upper bound, 0–1; each
   suggestion says in words what it is a share of). Tier 0: 1 when the
   recompile limit was hit (the timed calls ran eager), else the share of the
   variant's compiles that were size recompiles, or the share of its graphs
   that exist only because of breaks (n breaks: n of n + 1 graphs). Tier 1:
   the share of eager's call its bound leaves idle (launch- or
   dispatch-bound: 1 − busy), or the GEMMs' share of the call times what a
   faster dtype's peak saves (1 − fp32 peak / new peak; the GEMM share
   itself where the device's peaks are not known). Tier 2: the share of the
   first call a cache hit skips (all but Dynamo tracing).
3. A suggestion whose effect the evidence does not bound comes after those it
   does, then by the order of the rule table.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ...core.variants import is_eager
from ..explain.why import user_names
from ..explain.why_files import GraphBreak, VariantWhy, WhyReport, load_why
from ..explain.why_rules import TINY_ELEMENTS, Evidence, evidence, peak_tflops
from ..report.terminal import escape_controls

__all__ = [
    "TIERS", "CodeChange", "Suggestion", "VariantFacts", "RunEvidence", "gather", "feasible", "rank",
    "advice_text", "suggestion_lines", "load_why", "GraphBreak", "TINY_ELEMENTS",
    "peak_tflops", "user_names",
]

#: The tiers, in ranking order (see the module's docstring).
TIERS = ("what compile ran", "time per call", "compile time")
TIER_GRAPH, TIER_CALL, TIER_COMPILE = 0, 1, 2


@dataclass(frozen=True)
class CodeChange:
    """A change to the user's code: where, what it is now, what to try instead (shown, not tried)."""

    file: str = ""
    line: int | None = None
    #: the line as it is (from the run's diagnostics)
    before: str = ""
    #: the line or lines to try instead
    after: str = ""

    @property
    def place(self) -> str:
        """``file.py:16`` (the base name), or "" when the run did not say where."""
        name = re.split(r"[\\/]", self.file)[-1] if self.file else ""
        return name + (f":{self.line}" if name and self.line is not None else "")


@dataclass(frozen=True)
class Suggestion:
    """One thing to try: why (evidence), what (words), how (a config delta or a code change), who says so.

    ``delta`` maps configuration fields (names of :class:`config.BenchmarkConfig`)
    to new values; ``variants`` in it are added to the configuration's list.
    """

    rule: str
    #: what to try, in words
    title: str
    #: what the run showed that makes the rule fire
    evidence: str
    tier: int
    #: the largest share of the affected time the evidence allows the change to remove (0–1)
    effect: float | None
    #: what ``effect`` is a share of, in words
    effect_basis: str
    source_title: str
    source_url: str
    variant: str = ""
    delta: dict[str, Any] = field(default_factory=dict)
    code: CodeChange | None = None
    #: the rule's position in the table (the last tie-breaker)
    order: int = 0

    def apply(self, config: dict[str, Any]) -> dict[str, Any]:
        """A copy of ``config`` with the delta applied (``config`` itself is left as it was)."""
        out = copy.deepcopy(config)
        for key, value in self.delta.items():
            if key == "variants":
                have = list(out.get("variants") or [])
                out["variants"] = have + [v for v in value if v not in have]
            else:
                out[key] = copy.deepcopy(value)
        return out

    def delta_text(self) -> str:
        """``dynamic=true, variants+=reduce-overhead``: the delta in one line ("" for a code change)."""
        parts = []
        for key, value in self.delta.items():
            if key == "variants":
                parts.append(f"variants+={','.join(value)}")
            elif isinstance(value, list):
                parts.append(f"{key}={','.join(str(v) for v in value)}")
            else:
                shown = str(value).lower() if isinstance(value, bool) else str(value)
                parts.append(f"{key}={shown}")
        return ", ".join(parts)


@dataclass(frozen=True)
class VariantFacts:
    """What the rules read about one compiled variant."""

    name: str
    median_ms: float | None = None
    speedup: float | None = None
    break_even_calls: float | None = None
    compile_s: float | None = None
    #: the run's CUDA-graph state: "used", "skipped: …", "not used: …" or None
    cudagraphs: str | None = None
    why: VariantWhy | None = None
    evidence: Evidence | None = None


@dataclass(frozen=True)
class RunEvidence:
    """Everything the rules read from one run."""

    #: the run's configuration as a dict (empty when the run did not keep a readable one)
    config: dict[str, Any] = field(default_factory=dict)
    #: the environment block of the worker's hello (devices, dtypes, compile modes, memory)
    environment: dict[str, Any] = field(default_factory=dict)
    #: the device the run used ("cpu", "cuda:0") and its kind ("cpu", "cuda", "mps")
    device: str = "cpu"
    device_kind: str = "cpu"
    #: the dtypes the environment says the device can run
    device_dtypes: tuple[str, ...] = ()
    compile_modes: tuple[str, ...] = ()
    #: the dtype the model ran in (``measurement["model_dtype"]``, else the configuration's)
    model_dtype: str | None = None
    batch: int | None = None
    eager: Evidence | None = None
    eager_median_ms: float | None = None
    variants: dict[str, VariantFacts] = field(default_factory=dict)

    def has_mode(self, mode: str) -> bool:
        """Whether the installed torch offers compile mode ``mode`` (unknown counts as no)."""
        return mode in self.compile_modes

    def ran(self, variant: str) -> bool:
        """Whether the run already has ``variant``."""
        return variant in (self.config.get("variants") or [])


def _device_kind(device: str) -> str:
    return device.split(":", 1)[0] if device else "cpu"


def gather(run: Any, report: WhyReport, rows: Sequence[Any] | None = None) -> RunEvidence:
    """The rules' evidence from a loaded run, its diagnostics and its summary rows.

    ``rows``: the summary rows (:func:`results.storage.summary_cache.summary_of`); without
    them the run's known summary, else none (the figures are then unknown).
    """
    config = run.config.to_dict() if getattr(run, "config", None) is not None else {}
    env = run.environment if isinstance(run.environment, dict) else {}
    measurement = run.measurement if isinstance(run.measurement, dict) else {}
    device = env.get("device") if isinstance(env.get("device"), str) else None
    if not device:
        chosen = str(config.get("device") or "cpu")
        device = "cuda:0" if chosen == "cuda" else chosen
    dtypes = env.get("device_dtypes") if isinstance(env.get("device_dtypes"), dict) else {}
    found = dtypes.get(device) if isinstance(dtypes, dict) else None
    modes = env.get("compile_modes")
    ran = measurement.get("model_dtype")
    if rows is None:
        rows = run.known_summary() or []
    by_name = {getattr(r, "name", None): r for r in rows}
    variants: dict[str, VariantFacts] = {}
    for name, v in run.variants.items():
        if is_eager(name):
            continue
        row = by_name.get(name)
        variants[name] = VariantFacts(
            name=name,
            median_ms=getattr(row, "median_ms", None),
            speedup=getattr(row, "speedup", None),
            break_even_calls=getattr(row, "break_even_calls", None),
            compile_s=v.compile_s,
            cudagraphs=v.cudagraphs,
            why=report.variants.get(name),
            evidence=evidence(run, name),
        )
    base = by_name.get("eager")
    return RunEvidence(
        config=config,
        environment=env,
        device=device,
        device_kind=_device_kind(device),
        device_dtypes=tuple(str(d) for d in found) if isinstance(found, list | tuple) else (),
        compile_modes=tuple(str(m) for m in modes) if isinstance(modes, list | tuple) else (),
        model_dtype=ran if isinstance(ran, str) else config.get("dtype"),
        batch=run.batch(),
        eager=evidence(run, "eager"),
        eager_median_ms=getattr(base, "median_ms", None),
        variants=variants,
    )


#: A rule: the run's evidence in, its suggestions out (none when it does not apply).
Rule = Callable[[RunEvidence], Iterable[Suggestion]]


def _problems(config: dict[str, Any], env: dict[str, Any]) -> set[tuple[str, str]] | None:
    """The problems of ``config`` on the run's machine; None when it cannot even be read."""
    from ...core.config import BenchmarkConfig, ConfigError, EnvironmentInfo

    try:
        info = EnvironmentInfo.from_hello(env) if env.get("devices") else None
        return {(p.field, p.message) for p in BenchmarkConfig.from_dict(config).problems(info)}
    except (ConfigError, TypeError, ValueError, AttributeError):
        return None


def feasible(s: Suggestion, facts: RunEvidence) -> bool:
    """Whether the suggestion's delta makes no problem the run's configuration did not have.

    A code change (no delta) is always shown. A delta is checked with the
    environment the worker reported, so a mode torch lacks, a dtype the
    device lacks or a batch beyond its memory is never suggested.
    """
    if not s.delta:
        return True
    if not facts.config:
        return False
    before = _problems(facts.config, facts.environment)
    after = _problems(s.apply(facts.config), facts.environment)
    if after is None:
        return False
    return not (after - (before or set()))


def rank(suggestions: Iterable[Suggestion]) -> list[Suggestion]:
    """The suggestions in the order of the module's ranking rule."""
    return sorted(
        suggestions,
        key=lambda s: (s.tier, s.effect is None, -(s.effect or 0.0), s.order),
    )


# -- text --------------------------------------------------------------------------------------

def _pct(x: float) -> str:
    return f"{100.0 * x:.0f} %"


def suggestion_lines(k: int, s: Suggestion) -> list[str]:
    """One suggestion as plain text lines, every string from the run made harmless for a terminal."""
    clean = escape_controls
    where = f" [{clean(s.variant)}]" if s.variant else ""
    out = [f"{k}. {clean(s.title)}{where}"]
    effect = f"up to {_pct(s.effect)} of {s.effect_basis}" if s.effect is not None else s.effect_basis
    out.append(f"   effect: {clean(effect)} ({TIERS[s.tier]})")
    out.append(f"   evidence: {clean(s.evidence)}")
    if s.delta:
        out.append(f"   config: {clean(s.delta_text())}")
    if s.code is not None:
        place = s.code.place or "your code"
        out.append(f"   code ({clean(place)}, shown, not tried):")
        if s.code.before:
            out.append(f"     - {clean(s.code.before)}")
        for line in s.code.after.splitlines():
            out.append(f"     + {clean(line)}")
    out.append(f"   source: {clean(s.source_title)} — {clean(s.source_url)}")
    return out


def advice_text(suggestions: Sequence[Suggestion]) -> str:
    """What ``compile-studio-cli advise`` prints for a run's ranked suggestions."""
    if not suggestions:
        return "nothing to suggest: no rule's evidence is in this run\n"
    lines: list[str] = []
    for k, s in enumerate(suggestions, 1):
        lines += suggestion_lines(k, s)
        lines.append("")
    return "\n".join(lines).rstrip() + "\n"
