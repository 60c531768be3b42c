"""Every ``compile-studio-cli`` command README.md and docs/*.md show runs, and their sample outputs match the real ones.

The pages are README.md and every docs/*.md (:data:`PAGES`). Each ``$ compile-studio-cli …``
line of a code block in them is run once (a command shown on several pages, once) with small
sizes laid over it (the substitutions below: a few timed calls, aot_eager for the compiled
variants, one or two sweep points), against a temporary data folder
(``COMPILE_STUDIO_DATA_DIR``, set for every test by conftest) and temporary ``--out`` folders,
and must exit 0. Commands that need an SSH host, Slurm or a CUDA GPU, or many whole runs, are
listed in :data:`SKIPPED` with the reason. The commands that start workers run first, a few at
once; those that read what they made (``show``, ``compare``, ``why``, …) run after them, in page
order (README first), in this process.

Then the pages' sample outputs are held against the real ones wherever they now live: the
columns of the sample ``run`` table, the shape-sweep table and the ``advise --try`` table, the
column tables of ``summary.csv``, ``sweep.csv`` and ``shape_sweep.csv``, and the flag list;
every link between the pages leads to a file (and heading) that exists, the README links
every page of docs/, and no transcript shows a machine's own paths.
"""

from __future__ import annotations

import csv
import re
import shlex
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest

from compile_studio.cli import commands as cli
from compile_studio.results.report.formatting import SUMMARY_HEADERS

pytestmark = pytest.mark.long

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
#: The pages whose commands run and whose tables are checked: the README, then docs/ by name.
PAGES = [README, *sorted((ROOT / "docs").glob("*.md"))]
CLI = [sys.executable, "-m", "compile_studio.cli"]

# -- the substitutions ------------------------------------------------------------------------

#: Laid over every ``run`` and ``sweep`` (not ``--resume``): a few timed calls on the CPU, the
#: first call timed in the run (no extra compile process).
SMALL = [
    "--device", "cpu", "--iterations", "4", "--warmup", "1", "--warmup-min-ms", "0",
    "--rounds", "2", "--compile-timing", "in_run",
]
#: Compiled variants the README names run as aot_eager: the same CLI path without a C++ compile.
VARIANT_SWAP = {"default": "aot_eager", "max-autotune": "aot_eager"}
#: A sweep's ``--values``/``--range`` replaced by these, by parameter (one point each).
SWEEP_VALUES = {
    "batch_size": "2", "hidden_width": "16", "layer:2": "16", "seq_len": "8", "dynamic": "true",
    "arg:seq_len": "8",
}
#: A shape sweep: two batch sizes, two timed calls each.
SHAPE = ["--values", "1,2", "--repeats", "2"]
#: Sizes laid over a command that gives none of its own (the seed MLP, the default transformer).
SIZES = {"mlp": ["--layers", "64,64,10", "--batch-size", "8"], "transformer": ["--batch-size", "2"]}
#: Runs that ``why latest`` and ``advise latest`` may read keep their diagnostics; the others
#: (their own ``--out``, sweeps) go without.
#: The pages' placeholders and the command whose folder stands for each.
PLACEHOLDERS = {
    "SWEEP_FOLDER": "sweep --param batch_size --range 1:1024:x2",
    "SWEEP_A": "sweep --param batch_size --range 1:1024:x2",
    "SWEEP_B": "sweep --param batch_size --values 1,4,16,64,256 --layers 256,512,512,10",
    "SHAPE_SWEEP_FOLDER": "sweep --shape --values 1,2,4,8,16 --variants eager,default",
}
#: Commands not run here, by the start of the command, and why.
SKIPPED = {
    "run --layers 4096,4096,4096": "needs a CUDA GPU (--device cuda)",
    "sweep --param dtype --values fp32,bf16 --device cuda": "needs a CUDA GPU (--device cuda)",
    "targets check gpu-box": "needs SSH to the target (tests/test_remote.py checks targets against a local sshd)",
    "targets add gpu-box --kind ssh --host compile-studio-local --ssh-option=-F":
        "needs the local test sshd's ssh config file (tests/test_remote.py)",
    "run --target cluster": "needs Slurm (tests/test_remote.py runs on the local one-node cluster)",
    "coldstart": "starts Inductor compiles from empty caches in several fresh processes (minutes for "
        "the seed MLP on a small CPU); tests/test_coldstart.py runs the same job with --save-cache and "
        "--load-cache on the tiny MLP",
    "sweep --resume latest": "resumes the newest sweep of the data folder, where nothing is left to "
        "run after the pages' sweeps (each writes to its own --out); tests/test_cli_round3.py resumes "
        "latest and latest~N",
    "advise latest --try":
        "makes a whole run of A and of each B in every round, 3 rounds or more (6 runs for one "
        "suggestion), on a run whose advice holds a configuration change such as a larger batch; "
        "tests/test_advice_try.py runs `advise RUN --try … --rounds 3 --trust-code` on such a run",
}


def code_blocks(page: Path) -> list[str]:
    """The fenced code blocks of a page, in order."""
    return re.findall(r"^```[^\n]*\n(.*?)^```", page.read_text(encoding="utf-8"), re.S | re.M)


def readme_commands() -> list[str]:
    """Every ``$ compile-studio-cli …`` line of a code block of the pages (continuations joined,
    comments left out), without the ``$ compile-studio-cli`` itself, in page order, each once."""
    found = []
    for page in PAGES:
        for block in code_blocks(page):
            lines = block.splitlines()
            k = 0
            while k < len(lines):
                line = lines[k]
                if line.startswith("$ compile-studio-cli"):
                    while line.rstrip().endswith("\\"):
                        k += 1
                        line = line.rstrip()[:-1] + " " + lines[k].strip()
                    words = shlex.split(line, comments=True)[2:]
                    found.append(shlex.join(words))
                k += 1
    return list(dict.fromkeys(found))


def skip_reason(command: str) -> str | None:
    return next((why for start, why in SKIPPED.items() if command.startswith(start)), None)


def _option(argv: list[str], name: str) -> str | None:
    return argv[argv.index(name) + 1] if name in argv else None


def _without(argv: list[str], *names: str) -> list[str]:
    out, k = [], 0
    while k < len(argv):
        if argv[k] in names:
            k += 2
            continue
        out.append(argv[k])
        k += 1
    return out


def makes_something(argv: list[str]) -> bool:
    """Whether the command starts a worker (run, sweep, env): run first, a few at once."""
    return argv[0] in ("run", "sweep", "env") and "--resume" not in argv


def small(command: str, out: Path) -> list[str]:
    """The command with the substitutions laid over it; ``out`` is its own folder."""
    argv = shlex.split(command)
    if argv[0] == "why":
        return [VARIANT_SWAP.get(a, a) for a in argv]
    if not makes_something(argv) or argv[0] == "env":
        return argv
    variants = _option(argv, "--variants")
    if variants is not None:
        swapped = ",".join(dict.fromkeys(VARIANT_SWAP.get(v, v) for v in variants.split(",")))
        argv[argv.index("--variants") + 1] = swapped
    else:
        argv += ["--variants", "eager,aot_eager"]
    model = _option(argv, "--model") or "mlp"
    if not any(a in argv for a in ("--layers", "--config", "--factory", "--batch-size")):
        argv += SIZES.get(model, [])
    if argv[0] == "run":
        if _option(argv, "--out") is not None:
            argv[argv.index("--out") + 1] = str(out)
            argv.append("--no-diagnostics")
        return argv + SMALL
    argv = _without(argv, "--values", "--range")
    if "--shape" in argv:
        argv += SHAPE
    else:
        param = _option(argv, "--param")
        assert param is not None, command
        argv += ["--values", SWEEP_VALUES[param], "--no-diagnostics"]
    return argv + ["--out", str(out)] + SMALL


def _start(argv: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*CLI, *argv], capture_output=True, text=True, cwd=ROOT, timeout=240)


@dataclass
class Made:
    """The pages' commands that start workers, after they ran: the data folder they used,
    each command's own ``--out`` folder, and how each ended."""

    data: Path
    folders: dict[str, Path]
    ended: dict[str, subprocess.CompletedProcess[str]]

    def folder_of(self, command: str) -> Path:
        (inside,) = [f for f in self.folders[command].iterdir() if f.is_dir()]
        return inside


@pytest.fixture(scope="module")
def made(tmp_path_factory, worker_fork_server) -> Made:
    """Run the pages' commands that start workers, four at once, into a data folder of their own."""
    if worker_fork_server is not None:
        # their workers fork from the tests' server (tests/support/forkhook) once it has imported torch:
        # a command started before that starts a fresh worker Python instead
        worker_fork_server.ready(120)
    data = tmp_path_factory.mktemp("readme-data")
    base = tmp_path_factory.mktemp("readme-out")
    commands = readme_commands()
    folders = {c: base / f"out{k}" for k, c in enumerate(commands)}
    makers = [c for c in commands if makes_something(shlex.split(c)) and skip_reason(c) is None]
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("COMPILE_STUDIO_DATA_DIR", str(data))
        with ThreadPoolExecutor(max_workers=4) as pool:
            ended = dict(zip(makers, pool.map(lambda c: _start(small(c, folders[c])), makers)))
    return Made(data, folders, ended)


def test_every_readme_command_runs_as_documented(made, monkeypatch, capsys):
    commands = readme_commands()
    assert len(commands) >= 30, "the pages' commands were not found"
    for start in SKIPPED:
        assert any(c.startswith(start) for c in commands), f"SKIPPED names a command the pages lost: {start}"
    for command in PLACEHOLDERS.values():
        assert command in commands, f"PLACEHOLDERS names a command the pages lost: {command}"
    for command, p in made.ended.items():
        argv = small(command, made.folders[command])
        assert p.returncode == 0, f"{command}\n→ {shlex.join(argv)}\n{p.stderr[-3000:]}"
        if argv[0] == "run":
            header = next(line for line in p.stdout.splitlines() if line.startswith("variant "))
            assert re.split(r"\s{2,}", header.strip()) == SUMMARY_HEADERS, command

    # the commands that read what those made, in page order, in this process
    monkeypatch.chdir(ROOT)  # the pages' paths (examples/…) are relative to the checkout
    monkeypatch.setenv("COMPILE_STUDIO_DATA_DIR", str(made.data))
    ran, skipped = list(made.ended), []
    for command in commands:
        if command in made.ended:
            continue
        why = skip_reason(command)
        if why is not None:
            skipped.append((command, why))
            continue
        argv = small(command, made.folders[command])
        argv = [str(made.folder_of(PLACEHOLDERS[a])) if a in PLACEHOLDERS else a for a in argv]
        code = cli.main(argv)
        out = capsys.readouterr()
        assert code == 0, f"{command}\n→ {shlex.join(argv)}\n{out.err[-3000:]}"
        ran.append(command)
    assert len(ran) + len(skipped) == len(commands)
    assert {c for c, _ in skipped} == {c for c in commands if skip_reason(c)}


# -- the sample outputs -----------------------------------------------------------------------

def _page_with(*texts: str) -> str:
    """The text of the one page holding every one of ``texts``."""
    pages = [p for p in PAGES if all(s in p.read_text(encoding="utf-8") for s in texts)]
    assert len(pages) == 1, f"{texts[0]!r} is on {len(pages)} pages, not one: {pages}"
    return pages[0].read_text(encoding="utf-8")


def _readme_section(title: str) -> str:
    """From ``title`` to the next heading, on the page that holds it."""
    text = _page_with(title)
    start = text.index(title)
    end = text.find("\n#", start + len(title))
    return text[start: end if end > 0 else None]


def _table_names(section: str) -> list[str]:
    """The backticked names in the first cell of each row of a README column table (the rows
    below its ``|---|`` line)."""
    rows = section.split("|---|", 1)[1].splitlines()
    names = []
    for line in rows:
        if line.startswith("| `"):
            names += re.findall(r"`([^`]+)`", line.split("|")[1])
    return names


def _sample() -> tuple[str, str]:
    """The pages' sample ``run`` transcript: its command (without ``compile-studio-cli``) and text."""
    pattern = r"^```text\n(\$ compile-studio-cli (run [^\n]*)\n.*?)^```"
    blocks = [b for p in PAGES for b in re.finditer(pattern, p.read_text(encoding="utf-8"), re.S | re.M)]
    assert len(blocks) == 1, "the pages' one sample run output was not found"
    block = blocks[0]
    return shlex.join(shlex.split(block.group(2), comments=True)), block.group(1)


def test_the_sample_run_output_has_the_real_columns(made):
    command, sample = _sample()
    real = made.ended[command].stdout
    readme_header = next(line for line in sample.splitlines() if line.startswith("variant "))
    real_header = next(line for line in real.splitlines() if line.startswith("variant "))
    assert re.split(r"\s{2,}", readme_header.strip()) == re.split(r"\s{2,}", real_header.strip())
    # the lines around the table are there in both (the verdict, the FLOP rate, where it went)
    for start in ("= ", "achieved: ", "saved: "):
        assert any(line.startswith(start) for line in sample.splitlines()), start
        assert any(line.startswith(start) for line in real.splitlines()), start
    for path in ("/work", "/tmp", "/root", "/home"):
        assert path not in sample, "a machine's own path in the sample transcript"


def test_no_transcript_shows_a_machines_own_paths():
    for page in PAGES:
        for block in code_blocks(page):
            for path in ("/work/", "/tmp/pytest", "/tmp/cs", "/root/", "/home/"):
                assert path not in block, f"{page.name}: a machine's own path ({path}) in\n{block[:400]}"


def test_the_summary_csv_table_lists_every_column(made):
    command, _ = _sample()
    with open(made.folder_of(command) / "summary.csv", newline="", encoding="utf-8") as f:
        header = next(csv.reader(f))
    assert _table_names(_readme_section("## `summary.csv`")) == header


def test_the_sweep_csv_table_lists_every_column():
    from compile_studio.results.records.sweep_record import SWEEP_CSV_COLUMNS

    documented = _table_names(_readme_section("| `sweep.csv` column | meaning |"))
    assert documented == list(SWEEP_CSV_COLUMNS)


def test_the_shape_sweep_csv_table_lists_every_column():
    from compile_studio.results.records.shape_record import SHAPE_CSV_COLUMNS

    documented = _table_names(_readme_section("| `shape_sweep.csv` column | meaning |"))
    assert documented == list(SHAPE_CSV_COLUMNS)


def test_the_sample_shape_sweep_table_has_the_real_columns(made):
    from compile_studio.cli.sweep_show import SHAPE_HEADERS
    from compile_studio.results.report.formatting import rough_speedup_header

    def headers(calls: int) -> list[str]:
        return [rough_speedup_header(calls) if h == "speedup" else h for h in SHAPE_HEADERS]

    text = _page_with("| `shape_sweep.csv` column |")
    (block,) = [b for b in re.findall(r"^```text\n(.*?)^```", text, re.S | re.M) if "dynamic=" in b]
    lines = block.splitlines()
    header = next(line for line in lines if line.startswith("batch "))
    assert re.split(r"\s{2,}", header.strip()) == headers(5)
    rows = [line for line in lines[lines.index(header) + 2:] if line.strip()]
    assert rows and all(re.search(r"≈[0-9.]+× \(5 calls, [0-9.]+–[0-9.]+×\)", r) for r in rows), rows
    # the real table of the shape sweep the pages show (two timed calls each, SHAPE)
    real = made.ended[PLACEHOLDERS["SHAPE_SWEEP_FOLDER"]].stdout
    real_header = next(line for line in real.splitlines() if line.startswith("batch "))
    assert re.split(r"\s{2,}", real_header.strip()) == headers(int(SHAPE[SHAPE.index("--repeats") + 1]))


def test_the_sample_trial_table_is_what_advise_try_prints():
    """The README's ``advise --try`` table, printed again from its own figures by the CLI's code."""
    from compile_studio.core.config import BenchmarkConfig
    from compile_studio.results.records.trial_record import (
        RoundFigure,
        TrialRecord,
        TrialSuggestion,
    )
    from compile_studio.results.suggestions.what_to_try import trial_table

    block = next(b for b in code_blocks(README) if "$ compile-studio-cli advise latest --try" in b)
    lines = block.splitlines()
    command = next(k for k, line in enumerate(lines) if line.startswith("$ compile-studio-cli advise latest --try"))
    header, dashes, row = lines[command + 1: command + 4]
    ratios = [float(x) for x in re.findall(r"\s([0-9.]+)×\s", row)]  # each round's, then the interval's
    point, lo, hi = map(float, re.search(r"([0-9.]+)× \[([0-9.]+)–([0-9.]+)\]", row).groups())
    rule, key, value = re.match(r"1\s+([a-z-]+) \((\w+)=(\d+)\)", row).groups()
    suggestion = TrialSuggestion(
        key="B1", index=1, rule=rule, title="", delta={key: int(value)}, figure="per_sample",
        rounds=[RoundFigure(round=k, ratio=r) for k, r in enumerate(ratios[:-1], 1)],
        interval_point=point, interval_lo=lo, interval_hi=hi,
        aa_spread_pct=float(re.search(r"(\d+) %", row).group(1)), verdict=row.split()[-1],
    )
    record = TrialRecord(
        trial_id="t", created="", source_run_id="r", source_path="", source_title="",
        config=BenchmarkConfig(), rounds=len(ratios) - 1, suggestions=[suggestion],
    )
    printed = trial_table(record).splitlines()
    assert printed[:3] == [header, dashes, row]


def test_the_readme_lists_every_configuration_flag():
    from compile_studio.core.config import config_fields

    text = _page_with("Every configuration field is a flag", "`--backend-modules FILE.py`")
    start = text.index("Every configuration field is a flag")
    listed = set(re.findall(r"--[a-z0-9-]+", text[start: text.index("`--backend-modules FILE.py`", start)]))
    assert listed - {"--help"} == {spec.flag for spec in config_fields()}


def _slug(heading: str) -> str:
    """A heading's anchor as GitHub makes it: lower case, punctuation out, spaces to hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def test_every_link_between_the_pages_leads_somewhere():
    def prose(page: Path) -> str:
        return re.sub(r"^```.*?^```", "", page.read_text(encoding="utf-8"), flags=re.S | re.M)

    anchors = {p.resolve(): {_slug(h) for h in re.findall(r"^#+ (.*)$", prose(p), re.M)} for p in PAGES}
    for page in PAGES:
        for link in re.findall(r"\]\(([^)\s]+)\)", prose(page)):
            if re.match(r"[a-z]+:", link):
                continue
            path, _, anchor = link.partition("#")
            target = (page.parent / path).resolve() if path else page.resolve()
            assert target.exists(), f"{page.name}: {link} leads nowhere"
            if anchor and target in anchors:
                assert anchor in anchors[target], f"{page.name}: {link}: no such heading"
    readme = README.read_text(encoding="utf-8")
    for page in PAGES[1:]:
        assert f"](docs/{page.name})" in readme, f"the README does not link docs/{page.name}"
