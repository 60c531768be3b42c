"""The rule table of :mod:`results.suggestions.advice`: evidence in a run → a suggestion, a delta or a code change, a source.

Each rule is a function of a :class:`~results.suggestions.advice.RunEvidence` that yields
the :class:`~results.suggestions.advice.Suggestion`\\ s it makes (none when its evidence is
not in the run). :data:`RULES` is the table, in the order that breaks ties of
the ranking. docs/advice.md shows the same table in words.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator, Sequence

from ...core.config import MAX_BATCH
from ...core.variants import CUDAGRAPH_MIN_WARMUP, records_cudagraphs
from .advice import (
    TIER_CALL,
    TIER_COMPILE,
    TIER_GRAPH,
    TINY_ELEMENTS,
    CodeChange,
    GraphBreak,
    Rule,
    RunEvidence,
    Suggestion,
    VariantFacts,
    feasible,
    peak_tflops,
    rank,
    user_names,
)

# -- sources: named PyTorch pages --------------------------------------------------------------

DOCS = "https://docs.pytorch.org/docs/stable/"
COMPILE_API = ("torch.compile (API reference)", DOCS + "generated/torch.compile.html")
TROUBLESHOOTING = ("torch.compile Troubleshooting", DOCS + "torch.compiler_troubleshooting.html")
DYNAMIC_SHAPES = ("Dynamic Shapes", DOCS + "torch.compiler_dynamic_shapes.html")
CUDAGRAPH_TREES = ("CUDAGraph Trees", DOCS + "torch.compiler_cudagraph_trees.html")
TUNING_GUIDE = ("Performance Tuning Guide", "https://docs.pytorch.org/tutorials/recipes/recipes/tuning_guide.html")
TF32_NOTE = (
    "CUDA semantics: TensorFloat-32 (TF32) on Ampere (and later) devices",
    DOCS + "notes/cuda.html#tensorfloat-32-tf32-on-ampere-and-later-devices",
)
AMP = ("Automatic Mixed Precision package - torch.amp", DOCS + "amp.html")
CACHING = (
    "Compile Time Caching in torch.compile",
    "https://docs.pytorch.org/tutorials/recipes/torch_compile_caching_tutorial.html",
)

# -- thresholds --------------------------------------------------------------------------------

#: Break-even (calls) from which the compile time dominates: the cache rule fires from here.
CACHE_BREAK_EVEN_CALLS = 1000.0
#: A larger batch is at most this many times the measured one.
MAX_BATCH_FACTOR = 64
#: The compile phase a cache hit does not skip (Dynamo still traces the frame).
TRACE_PHASE = "Dynamo tracing"

_SIZE_GUARD = re.compile(r"size mismatch|stride mismatch|\.size\(\)|\bsize\b.*\bexpected\b", re.IGNORECASE)
_TENSOR_DIM = re.compile(r"tensor '([^']+)' (?:size|stride) mismatch at index (\d+)")
_FRAME_PLACE = re.compile(r"\(([^()]*?)(?::(\d+))?\)\s*$")
_ITEM = re.compile(r"Tensor\.item\(\)|\.item\(\)")


def _compiled(facts: RunEvidence) -> Iterator[VariantFacts]:
    """The compiled variants that have diagnostics."""
    for v in facts.variants.values():
        if v.why is not None and v.why.compiled:
            yield v


def _breaks(v: VariantFacts) -> int:
    return sum(max(b.count, 1) for b in v.why.graph_breaks) if v.why is not None else 0


def _bare(name: str) -> str:
    """``x`` from Dynamo's ``L['x']`` (a source name as the user wrote it)."""
    found = re.fullmatch(r"[LG]\['([^']+)'\]", name)
    return found.group(1) if found else name


def _frame_place(frame: str) -> tuple[str, int | None]:
    """``("/m/model.py", 11)`` from a frame ``forward (/m/model.py:11)``."""
    found = _FRAME_PLACE.search(frame or "")
    if found is None:
        return "", None
    return found.group(1), int(found.group(2)) if found.group(2) else None


# -- tier 0: what compile ran -------------------------------------------------------------------

def _size_recompiles(v: VariantFacts) -> tuple[list[str], bool]:
    """The guard reasons of recompiles for a size change, and whether the recompile limit was hit on one."""
    why = v.why
    if why is None:
        return [], False
    reasons = [user_names(rc.reason, v.name) for rc in why.recompiles if _SIZE_GUARD.search(rc.reason)]
    limit = bool(why.recompile_limit and _SIZE_GUARD.search(why.recompile_limit))
    if limit and why.recompile_limit:
        reasons.append(user_names(why.recompile_limit, v.name))
    return reasons, limit


def _size_effect(v: VariantFacts, n: int, limit: bool) -> tuple[float, str, str]:
    graphs = v.why.compile.graphs if v.why is not None and v.why.compile is not None else None
    if limit:
        return 1.0, "the compiled calls: they ran eager", "the recompile limit was hit on a size guard"
    total = n + (graphs or 1)
    return n / total, f"{v.name}'s compiles ({n} of {total} were size recompiles)", (
        f"{n} recompile{'s' if n != 1 else ''} for a new size"
    )


def rule_dynamic(facts: RunEvidence) -> Iterator[Suggestion]:
    """Size guards recompiled (or hit the recompile limit): compile shape-generic code from the start."""
    if facts.config.get("dynamic") == "true":
        return
    for v in _compiled(facts):
        reasons, limit = _size_recompiles(v)
        if not reasons:
            continue
        effect, basis, what = _size_effect(v, len(reasons) - (1 if limit else 0), limit)
        yield Suggestion(
            rule="dynamic-shapes",
            title="compile with dynamic=True: shape-generic code instead of a recompile per size",
            evidence=f"{what}: {reasons[-1]}",
            tier=TIER_GRAPH, effect=effect, effect_basis=basis,
            source_title=DYNAMIC_SHAPES[0], source_url=DYNAMIC_SHAPES[1],
            variant=v.name, delta={"dynamic": "true"},
        )


def rule_mark_dynamic(facts: RunEvidence) -> Iterator[Suggestion]:
    """The same evidence, as a code change: mark only the dimension that changed as dynamic."""
    for v in _compiled(facts):
        reasons, limit = _size_recompiles(v)
        found = next((m for r in reasons if (m := _TENSOR_DIM.search(r))), None)
        if found is None or v.why is None:
            continue
        tensor, dim = _bare(found.group(1)), found.group(2)
        frame = next((rc.frame for rc in v.why.recompiles if rc.frame), "")
        if not frame and v.why.compile is not None and v.why.compile.frames:
            frame = v.why.compile.frames[0]
        file, line = _frame_place(user_names(frame, v.name))
        effect, basis, what = _size_effect(v, len(reasons) - (1 if limit else 0), limit)
        yield Suggestion(
            rule="mark-dynamic",
            title=f"mark dimension {dim} of {tensor} dynamic before the first compiled call",
            evidence=f"{what}: {reasons[-1]}",
            tier=TIER_GRAPH, effect=effect, effect_basis=basis,
            source_title=DYNAMIC_SHAPES[0], source_url=DYNAMIC_SHAPES[1],
            variant=v.name,
            code=CodeChange(
                file=file, line=line,
                after=f"torch._dynamo.mark_dynamic({tensor}, {dim})  # on the input, before calling the "
                "compiled model",
            ),
        )


#: A guard on a Python value: ``self.calls == 7`` (after a compile id ``0/3:``), not on a tensor.
_VALUE_GUARD = re.compile(r"^(?:\d+/\d+:\s*)?((?:[A-Za-z_]\w*|L\['[^']+'\])(?:\.[A-Za-z_]\w*)+)\s*==\s*([^\s#]+)")
#: Where the value changes: Dynamo's ``# self.calls += 1  # …`` and the user stack's file and line.
_GUARD_SOURCE = re.compile(r"#\s*(.+?)\s+#")
_STACK_PLACE = re.compile(r'File "([^"]+)", line (\d+)')


def _value_guard(reason: str) -> re.Match[str] | None:
    """The guard on a Python value that ``reason`` names (None for size and other guards)."""
    text = reason.split("last guard failure:", 1)[-1].strip()
    return None if _SIZE_GUARD.search(text) else _VALUE_GUARD.search(text)


def rule_python_value(facts: RunEvidence) -> Iterator[Suggestion]:
    """Recompiles (or the recompile limit) on a Python value the forward changes every call."""
    for v in _compiled(facts):
        why = v.why
        if why is None:
            continue
        found = [(user_names(rc.reason, v.name), rc.frame) for rc in why.recompiles if _value_guard(rc.reason)]
        limit = bool(why.recompile_limit and _value_guard(why.recompile_limit))
        if not found and not limit:
            continue
        reason = user_names(why.recompile_limit or "", v.name) if limit else found[-1][0]
        guard = _value_guard(reason)
        assert guard is not None
        name = _bare(guard.group(1))
        text = reason.split("last guard failure:", 1)[-1]
        stmt = _GUARD_SOURCE.search(text)
        place = next((_STACK_PLACE.search(r) for r, _ in found if _STACK_PLACE.search(r)), None)
        file, line = (place.group(1), int(place.group(2))) if place else _frame_place(
            user_names(found[-1][1] if found else "", v.name))
        attr = name.rsplit(".", 1)[-1]
        graphs = why.compile.graphs if why.compile is not None and why.compile.graphs else 1
        effect = 1.0 if limit else len(found) / (len(found) + graphs)
        seen = 'the recompile limit was hit' if limit else plural_recompiles(len(found))
        basis = "the compiled calls: they ran eager" if limit else (
            f"{v.name}'s compiles ({len(found)} of {len(found) + graphs} were recompiles for {name})"
        )
        yield Suggestion(
            rule="python-value-guard",
            title=f"keep {name} out of the compiled code's guards: each new value of it recompiles",
            evidence=f"{seen} on a Python value the model changes every call: {guard.group(0).strip()}",
            tier=TIER_GRAPH, effect=effect,
            effect_basis=basis,
            source_title=TROUBLESHOOTING[0], source_url=TROUBLESHOOTING[1],
            variant=v.name,
            code=CodeChange(
                file=file, line=line, before=stmt.group(1).strip() if stmt else "",
                after=(
                    f"self.register_buffer(\"{attr}\", torch.zeros((), dtype=torch.long))  # in __init__: "
                    "a tensor's value is not guarded\n"
                    "# or count outside the compiled model; for an integer attribute of an nn.Module:\n"
                    "# torch._dynamo.config.allow_unspec_int_on_nn_module = True (triable: --try)"
                ),
            ),
        )
        flag = dynamo_flag_delta(facts, "allow_unspec_int_on_nn_module")
        if flag is not None and "." in name:
            # an attribute of the module (self.calls): the config expresses the same change
            yield Suggestion(
                rule="python-value-flag",
                title=f"set torch._dynamo.config.allow_unspec_int_on_nn_module = True: an integer "
                f"attribute of an nn.Module ({name}) is then not guarded on its value",
                evidence=f"{seen} on {guard.group(0).strip()}",
                tier=TIER_GRAPH, effect=effect,
                effect_basis=basis,
                source_title=TROUBLESHOOTING[0], source_url=TROUBLESHOOTING[1],
                variant=v.name, delta=flag,
            )


def plural_recompiles(n: int) -> str:
    return f"{n} recompile{'s' if n != 1 else ''}"


def _item_breaks(v: VariantFacts) -> list[GraphBreak]:
    if v.why is None:
        return []
    return [b for b in v.why.graph_breaks if _ITEM.search(b.reason) or ".item()" in b.source]


#: A line that branches on its value: ``if``/``elif``/``while``/``assert`` or a conditional expression.
_BRANCH = re.compile(r"^\s*(?:if|elif|while|assert)\b|\bif\b.+\belse\b")
_DATA_BRANCH = re.compile(r"data-dependent branch|jump with TensorVariable|generic_jump", re.IGNORECASE)

#: The code change for a branch on a tensor's value (``.item()`` or not): no config removes that break.
BRANCH_AFTER = (
    "# a branch on a tensor's value breaks the graph, with or without .item():\n"
    "y = torch.where(condition, y_if_true, y_if_false)  # both sides computed, one kept per element\n"
    "# or, for whole different computations: torch.cond(pred, true_fn, false_fn, (h,))"
)


def _is_branch(b: GraphBreak) -> bool:
    return bool(_BRANCH.search(b.source)) or bool(_DATA_BRANCH.search(b.reason))


def rule_item(facts: RunEvidence) -> Iterator[Suggestion]:
    """A graph break at ``.item()``: keep the value a tensor (or capture scalar outputs).

    Where the line branches on the value (``if h.mean().item() > 0:``), dropping ``.item()``
    leaves a data-dependent branch, which breaks the graph too: the change shown is
    ``torch.where`` / ``torch.cond``. Elsewhere ``capture_scalar_outputs`` keeps ``.item()`` in
    the graph, a configuration change ``--try`` can measure.
    """
    for v in _compiled(facts):
        total = _breaks(v)
        for b in _item_breaks(v):
            source = b.source.strip()
            branch = _is_branch(b)
            if branch:
                after = BRANCH_AFTER
            else:
                after = source.replace(".item()", "") if ".item()" in source else ""
                after += ("\n" if after else "") + (
                    "# or, to keep .item() in the graph: torch._dynamo.config.capture_scalar_outputs = True"
                    " (triable: --try)"
                )
            place = CodeChange(b.file, b.line).place or "an unnamed line"
            first = user_names(b.reason, v.name).splitlines()[0] if b.reason else "Tensor.item()"
            basis = f"{v.name}'s graphs ({total} break{'s' if total != 1 else ''}: {total + 1} graphs)"
            yield Suggestion(
                rule="item-break",
                title=(
                    "branch without Python: torch.where or torch.cond instead of an if on a tensor's value"
                    if branch else
                    "keep the value a tensor: .item() copies it to Python and breaks the graph"
                ),
                evidence=f"graph break at {place}: {first}"
                + (" (a branch on the value: capture_scalar_outputs does not remove it)" if branch else ""),
                tier=TIER_GRAPH, effect=max(b.count, 1) / (total + 1),
                effect_basis=basis,
                source_title=TROUBLESHOOTING[0], source_url=TROUBLESHOOTING[1],
                variant=v.name,
                code=CodeChange(file=b.file, line=b.line, before=source, after=after),
            )
            flag = None if branch else dynamo_flag_delta(facts, "capture_scalar_outputs")
            if flag is not None:
                yield Suggestion(
                    rule="item-flag",
                    title="set torch._dynamo.config.capture_scalar_outputs = True: .item() stays in the graph",
                    evidence=f"graph break at {place}: {first}",
                    tier=TIER_GRAPH, effect=max(b.count, 1) / (total + 1), effect_basis=basis,
                    source_title=TROUBLESHOOTING[0], source_url=TROUBLESHOOTING[1],
                    variant=v.name, delta=flag,
                )


def rule_data_branch(facts: RunEvidence) -> Iterator[Suggestion]:
    """A graph break at a branch on a tensor's value (no ``.item()``): torch.where or torch.cond."""
    for v in _compiled(facts):
        if v.why is None:
            continue
        total = _breaks(v)
        item = _item_breaks(v)
        for b in v.why.graph_breaks:
            if b in item or not _DATA_BRANCH.search(b.reason):
                continue
            place = CodeChange(b.file, b.line).place or "an unnamed line"
            yield Suggestion(
                rule="data-branch",
                title="branch without Python: torch.where or torch.cond instead of an if on a tensor's value",
                evidence=f"graph break at {place}"
                + (f" ({b.source.strip()})" if b.source.strip() else "")
                + ": a data-dependent branch; no configuration removes it",
                tier=TIER_GRAPH, effect=max(b.count, 1) / (total + 1),
                effect_basis=f"{v.name}'s graphs ({total} break{'s' if total != 1 else ''}: {total + 1} graphs)",
                source_title=TROUBLESHOOTING[0], source_url=TROUBLESHOOTING[1],
                variant=v.name,
                code=CodeChange(file=b.file, line=b.line, before=b.source.strip(), after=BRANCH_AFTER),
            )


def rule_fullgraph(facts: RunEvidence) -> Iterator[Suggestion]:
    """Graph breaks: compile with fullgraph=True, which fails at the first break and so finds each."""
    if facts.config.get("fullgraph") is True:
        return
    for v in _compiled(facts):
        n = _breaks(v)
        if n == 0 or v.why is None:
            continue
        places = []
        for b in v.why.graph_breaks:
            place = CodeChange(b.file, b.line).place or "an unnamed line"
            first = user_names(b.reason, v.name).splitlines()[0].split(" — ")[0] if b.reason else ""
            places.append(
                place + (f" ({b.source.strip()})" if b.source.strip() else "")
                + (f": {first}" if first else "")
            )
        yield Suggestion(
            rule="fullgraph",
            title="compile with fullgraph=True to find every graph break (each one becomes an error)",
            evidence=f"{n} graph break{'s' if n != 1 else ''}, at " + "; ".join(places),
            tier=TIER_GRAPH, effect=n / (n + 1),
            effect_basis=f"{v.name}'s graphs ({n} break{'s' if n != 1 else ''}: {n + 1} graphs)",
            source_title=COMPILE_API[0], source_url=COMPILE_API[1],
            variant=v.name, delta={"fullgraph": True},
        )
        return


def _dynamo_flags(facts: RunEvidence) -> list[str]:
    items = facts.config.get("dynamo_config")
    return [str(i) for i in items] if isinstance(items, list) else []


def dynamo_flag_delta(facts: RunEvidence, flag: str) -> dict[str, object] | None:
    """The delta that sets ``torch._dynamo.config.<flag> = True``; None when the run already did."""
    have = _dynamo_flags(facts)
    if any(i.replace(" ", "").lower() == f"{flag}=true" for i in have):
        return None
    kept = [i for i in have if i.split("=", 1)[0].strip() != flag]
    return {"dynamo_config": [*kept, f"{flag}=true"]}


def rule_skipped(facts: RunEvidence) -> Iterator[Suggestion]:
    """Dynamo gave up on a function (it ran eager) for want of a flag it names: set that flag."""
    from ...core.config import DYNAMO_FLAGS

    for v in _compiled(facts):
        if v.why is None:
            continue
        graphs = v.why.compile.graphs if v.why.compile is not None else None
        for b in v.why.frames_skipped:
            flag = next((f for f in DYNAMO_FLAGS if f in b.reason), None)
            delta = dynamo_flag_delta(facts, flag) if flag else None
            if flag is None or delta is None:
                continue
            place = CodeChange(b.file, b.line).place
            nothing = not graphs
            yield Suggestion(
                rule="dynamo-flag",
                title=f"set torch._dynamo.config.{flag} = True: Dynamo gave up on "
                + ("your model, so compile captured nothing" if nothing else "part of your model"),
                evidence=("compile captured nothing: " if nothing else "")
                + f"Dynamo skipped the function at {place or 'an unnamed line'}: "
                + user_names(b.reason, v.name).splitlines()[0],
                tier=TIER_GRAPH, effect=None,
                effect_basis=f"{v.name}'s call: " + ("all of it ran eager" if nothing else "the skipped part ran eager"),
                source_title=TROUBLESHOOTING[0], source_url=TROUBLESHOOTING[1],
                variant=v.name, delta=delta,
            )
            break


# -- tier 1: time per call ----------------------------------------------------------------------

def rule_reduce_overhead(facts: RunEvidence) -> Iterator[Suggestion]:
    """A launch-bound model on a CUDA GPU: replay its kernels as a CUDA graph (reduce-overhead)."""
    e = facts.eager
    mode = "reduce-overhead"
    if facts.device_kind != "cuda" or e is None or e.device != "cuda" or e.bound() != "launch":
        return
    if not facts.has_mode(mode) or facts.ran(mode):
        return
    delta: dict[str, object] = {"variants": [mode]}
    if int(facts.config.get("warmup") or 0) < CUDAGRAPH_MIN_WARMUP:
        delta["warmup"] = CUDAGRAPH_MIN_WARMUP
    kernels = f"{e.kernels:.0f} kernels per call" if e.kernels is not None else "many small kernels"
    idle = f", the GPU idle {100 * (1 - e.busy):.0f} % of each call" if e.busy is not None else ""
    yield Suggestion(
        rule="reduce-overhead",
        title="try mode reduce-overhead: CUDA graphs replay the call's kernels with one launch",
        evidence=f"eager is launch-bound: {kernels}{idle}",
        tier=TIER_CALL, effect=(1.0 - e.busy) if e.busy is not None else None,
        effect_basis="eager's call: the time the GPU waits for launches",
        source_title=CUDAGRAPH_TREES[0], source_url=CUDAGRAPH_TREES[1],
        variant="eager", delta=delta,
    )


def rule_batch(facts: RunEvidence) -> Iterator[Suggestion]:
    """A dispatch-bound model on CPU: a larger batch spreads the fixed cost of each call over more samples."""
    e = facts.eager
    batch = facts.batch or facts.config.get("batch_size")
    if facts.device_kind != "cpu" or e is None or e.device != "cpu" or e.bound() != "launch":
        return
    if not isinstance(batch, int) or batch >= MAX_BATCH:
        return
    per_op = e.elements_per_op
    factor = 4
    if per_op:
        wanted = TINY_ELEMENTS["cpu"] / per_op
        # a received figure may be any finite number: a ratio past the cap is the cap, not 2**inf
        factor = (
            2 ** math.ceil(math.log2(max(2.0, wanted))) if wanted < MAX_BATCH_FACTOR else MAX_BATCH_FACTOR
        )
    factor = min(factor, MAX_BATCH_FACTOR)
    new = min(batch * factor, MAX_BATCH)
    delta: dict[str, object] = {}
    if facts.config.get("model") != "custom" or _factory_takes_batch(facts):
        delta = {"batch_size": new}
    ops = f"{e.kernels:.0f} operators per call" if e.kernels is not None else "many operators per call"
    each = f", {per_op:.0f} elements each" if per_op else ""
    yield Suggestion(
        rule="larger-batch",
        title=f"try a larger batch ({batch} → {new}): on CPU each call's dispatch cost stays, "
        "so more samples per call share it" + ("" if delta else " (your factory makes the batch)"),
        evidence=f"eager is dispatch-bound: {ops}{each}",
        tier=TIER_CALL, effect=(1.0 - e.busy) if e.busy is not None else None,
        effect_basis="eager's call: the time outside the operators, the part a larger batch shares "
        "(a bound on that part alone: per sample, larger operators often run faster too)",
        source_title=TUNING_GUIDE[0], source_url=TUNING_GUIDE[1],
        variant="eager", delta=delta,
    )


def _factory_takes_batch(facts: RunEvidence) -> bool:
    """Whether a custom model's factory takes ``batch_size`` (its file read, not run)."""
    from ...core.config import BenchmarkConfig, ConfigError

    try:
        return BenchmarkConfig.from_dict(facts.config).factory_takes("batch_size")
    except (ConfigError, OSError, TypeError, ValueError):
        return False


def rule_fast_dtype(facts: RunEvidence) -> Iterator[Suggestion]:
    """fp32 GEMMs bound a tensor-core GPU's calls: tf32 keeps fp32 storage, bf16 halves it too."""
    e = facts.eager
    if facts.device_kind != "cuda" or e is None or e.device != "cuda" or e.bound() != "gemm":
        return
    if facts.model_dtype != "fp32" or "tf32" not in facts.device_dtypes:
        return  # tf32 listed: compute capability 8 or later, tensor cores for fp32 GEMMs
    share = e.gemm_share if e.gemm_share is not None else (
        e.gemm_of_ops * e.busy if e.gemm_of_ops is not None and e.busy is not None else None
    )
    name = (facts.environment.get("device_names") or {}).get(facts.device)
    base = peak_tflops(name if isinstance(name, str) else None, "fp32")
    chosen = facts.config.get("dtype")
    for dtype, source in (("tf32", TF32_NOTE), ("bf16", AMP)):
        if dtype not in facts.device_dtypes or chosen == dtype:
            continue
        peak = peak_tflops(name if isinstance(name, str) else None, dtype)
        gain = 1.0 - base / peak if base and peak else 1.0
        words = f"{dtype}'s peak is {peak / base:.0f}× fp32's" if base and peak else "peaks not known here"
        yield Suggestion(
            rule=f"dtype-{dtype}",
            title=f"try dtype {dtype}: tensor-core GEMMs" + (
                " (fp32 storage, 10-bit mantissa in the products)" if dtype == "tf32"
                else " (half the bytes; check the accuracy columns)"
            ),
            evidence="eager is compute-bound on fp32 GEMMs"
            + (f": they hold {100 * share:.0f} % of the call" if share is not None else ""),
            tier=TIER_CALL, effect=share * gain if share is not None else None,
            effect_basis=f"eager's call: the GEMMs' time ({words})",
            source_title=source[0], source_url=source[1],
            variant="eager", delta={"dtype": dtype},
        )


def rule_no_cudagraphs(facts: RunEvidence) -> Iterator[Suggestion]:
    """CUDA graphs were skipped: max-autotune-no-cudagraphs gives the tuned kernels without trying to record."""
    mode = "max-autotune-no-cudagraphs"
    if facts.device_kind != "cuda" or not facts.has_mode(mode) or facts.ran(mode):
        return
    for v in facts.variants.values():
        skips = list(v.why.cudagraph_skips) if v.why is not None else []
        if v.why is not None and v.why.compile is not None:
            skips += v.why.compile.cudagraph_skips
        if v.cudagraphs and v.cudagraphs.startswith("skipped: "):
            skips.append(v.cudagraphs[len("skipped: "):])
        if not records_cudagraphs(v.name) or not skips:
            continue
        yield Suggestion(
            rule="no-cudagraphs",
            title=f"try mode {mode}: {v.name}'s CUDA graphs were skipped, it ran without them anyway",
            evidence=f"{v.name}: CUDA graphs skipped: {'; '.join(dict.fromkeys(skips))}",
            tier=TIER_CALL, effect=None,
            effect_basis="not bounded by this run (the skipped variant's time is what it saves)",
            source_title=COMPILE_API[0], source_url=COMPILE_API[1],
            variant=v.name, delta={"variants": [mode]},
        )
        return


# -- tier 2: compile time -----------------------------------------------------------------------

def rule_cache(facts: RunEvidence) -> Iterator[Suggestion]:
    """A cold compile dominates the break-even: keep the FX graph cache, or ship its artifacts."""
    for v in facts.variants.values():
        c = v.why.compile if v.why is not None else None
        if v.break_even_calls is None or v.break_even_calls < CACHE_BREAK_EVEN_CALLS or c is None:
            continue
        cold = facts.config.get("compile_cache") == "cold"
        missed = c.cache.get("fx_graph_misses", 0) > 0 and c.cache.get("fx_graph_hits", 0) == 0
        if not (cold or missed):
            continue
        first = c.first_call_ms / 1000.0 if c.first_call_ms else v.compile_s
        traced = c.phases.get(TRACE_PHASE)
        effect = max(0.0, 1.0 - traced / first) if first and traced is not None else None
        details = [f"first call {first:.1f} s"] if first else []
        if missed:
            details.append(f"{c.cache.get('fx_graph_misses', 0)} FX graph cache miss(es), no hit")
        evidence = f"{v.name} pays off only after {v.break_even_calls:,.0f} calls" + (
            f" ({', '.join(details)})" if details else ""
        )
        basis = "the first call's compile: all but Dynamo tracing"
        if cold:
            yield Suggestion(
                rule="fx-graph-cache",
                title="measure with the compile cache warm: the FX graph cache skips Inductor on a hit",
                evidence=evidence + "; this run used a fresh (cold) cache",
                tier=TIER_COMPILE, effect=effect, effect_basis=basis,
                source_title=CACHING[0], source_url=CACHING[1],
                variant=v.name, delta={"compile_cache": "warm"},
            )
        file, line = _frame_place(user_names(c.frames[0], v.name)) if c.frames else ("", None)
        yield Suggestion(
            rule="cache-artifacts",
            title="save the compile artifacts once and load them in fresh processes (Mega-Cache)",
            evidence=evidence,
            tier=TIER_COMPILE, effect=effect, effect_basis=basis,
            source_title=CACHING[0], source_url=CACHING[1],
            variant=v.name,
            code=CodeChange(
                file=file, line=line,
                after="artifacts = torch.compiler.save_cache_artifacts()  # after the first compiled call\n"
                "torch.compiler.load_cache_artifacts(artifact_bytes)  # in a new process, before it",
            ),
        )
        return


#: The table, in tie-breaking order. docs/advice.md describes each row.
RULES = (
    rule_skipped,
    rule_dynamic,
    rule_mark_dynamic,
    rule_python_value,
    rule_item,
    rule_data_branch,
    rule_fullgraph,
    rule_reduce_overhead,
    rule_batch,
    rule_fast_dtype,
    rule_no_cudagraphs,
    rule_cache,
)


# -- the rules over a run -----------------------------------------------------------------------

def advise(facts: RunEvidence, rules: Sequence[Rule] | None = None) -> list[Suggestion]:
    """Every feasible suggestion the rules make for the run, ranked (:func:`rank`)."""
    if rules is None:
        rules = RULES
    out: list[Suggestion] = []
    seen: set[tuple[str, str, str]] = set()
    for order, rule in enumerate(rules):
        try:
            made = list(rule(facts))
        except (ArithmeticError, ValueError):
            # a received figure out of any rule's range (1e308 operators per call): the rule's
            # evidence does not hold, so it suggests nothing
            continue
        for s in made:
            key = (s.rule, s.delta_text(), s.code.place if s.code else "")
            if key in seen or not feasible(s, facts):
                continue
            seen.add(key)
            out.append(_ordered(s, order))
    return rank(out)


def _ordered(s: Suggestion, order: int) -> Suggestion:
    from dataclasses import replace

    return replace(s, order=order)
