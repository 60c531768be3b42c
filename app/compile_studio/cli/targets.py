"""``compile-studio-cli targets``: list, add, remove and check where runs can go.

``targets`` lists the targets of the targets file (the same the window edits);
``targets add NAME --kind ssh --host HOST …`` adds or replaces one;
``targets remove NAME`` removes one; ``targets check NAME`` asks the target's
Python whether it has torch and copies the worker there. Runs go to a target
with ``run --target NAME``.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from ..jobs.workers import WorkerStartFailed
from ..launchers.target_kinds import describe_target, kind_names, kind_words
from ..launchers.targets import (
    LOCAL,
    SSH_CONFIG_KEYS,
    Targets,
    TargetsFileError,
    check_target,
    load_targets,
    update_targets,
)
from ..results.report.formatting import text_table
from .common import EXIT_BAD_CONFIG as EXIT_BAD
from .common import EXIT_FAILED, EXIT_OK

SSH_OPTION_HELP = (
    "ssh: one more ssh argument (repeatable; write it as --ssh-option=-oKEY=VALUE). Accepted: "
    "-4 -6 -C -q -v -x -a -T, -p PORT, -l USER, -i KEYFILE, -J JUMPHOST, -F /abs/config (checked: "
    "yours, writable only by you, no Include/Match, only the keys below), and -o KEY=VALUE for "
    f"{', '.join(sorted(SSH_CONFIG_KEYS.values(), key=str.lower))}. Refused: anything that runs a "
    "command or loads a library on this machine (ProxyCommand, LocalCommand, KnownHostsCommand, "
    "Match exec, -I, PKCS11Provider), forwards (-A -X -L -R -D) and all else; put those in your "
    "own ~/.ssh/config"
)


def register(sub: Any) -> None:
    """Add the ``targets`` command to the CLI's subparsers."""
    parser = sub.add_parser(
        "targets", help="list or edit where runs can go (this machine, SSH hosts, Slurm)",
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.set_defaults(handler=cmd_targets, targets_command="list")
    actions = parser.add_subparsers(dest="targets_command")
    actions.add_parser("list", help="list the targets (the default)")
    add = actions.add_parser("add", help="add a target, or replace the one of that name")
    add.add_argument("name", metavar="NAME")
    add.add_argument("--kind", choices=kind_names(), required=True)
    add.add_argument("--host", default="", help="ssh: the host as in ~/.ssh/config")
    add.add_argument("--port", type=int, default=None, help="ssh: port")
    add.add_argument("--user", default="", help="ssh: user name")
    add.add_argument("--identity", default="", help="ssh: key file")
    add.add_argument("--ssh-option", action="append", default=[], dest="ssh_options",
                     metavar="ARG", help=SSH_OPTION_HELP)
    add.add_argument("--python", default="", help="the remote Python (a path or command)")
    add.add_argument("--preamble", default="",
                     help="shell lines run before the remote Python (on the host; for Slurm "
                          "without --via, in a shell on this machine)")
    add.add_argument("--via", default="", help="slurm: the SSH target of the login node")
    add.add_argument("--partition", default="", help="slurm: partition")
    add.add_argument("--gpus", type=int, default=0, help="slurm: GPUs per job step (--gres=gpu:N)")
    add.add_argument("--gpu-type", default="", help="slurm: GPU type in --gres (gpu:TYPE:N)")
    add.add_argument("--time", default="", dest="time_limit", help="slurm: time limit (HH:MM:SS)")
    add.add_argument("--account", default="", help="slurm: account")
    add.add_argument("--srun-flag", action="append", default=[], dest="srun_flags",
                     metavar="ARG", help="slurm: one more srun argument (repeatable)")
    add.add_argument("--gpu-ids", default="", help="GPUs to spread sweep workers over, e.g. 0,1,2,3")
    add.add_argument("--workers", type=int, default=0, help="workers at once (0: one per GPU id)")
    remove = actions.add_parser("remove", help="remove a target")
    remove.add_argument("name", metavar="NAME")
    check = actions.add_parser("check", help="check a target's Python and torch, copy the worker")
    check.add_argument("name", metavar="NAME")


class _Refused(Exception):
    """A change the targets file does not take; ``args[0]``: the problems, in words."""


def cmd_targets(args: argparse.Namespace) -> int:
    action = args.targets_command or "list"
    try:
        if action == "add":
            return _add(args)
        if action == "remove":
            return _remove(args.name)
        targets = load_targets()
    except TargetsFileError as exc:
        sys.stderr.write(f"error: {exc}\n")
        return EXIT_BAD
    except _Refused as exc:
        sys.stderr.write("".join(f"{line}\n" for line in exc.args[0]))
        return EXIT_BAD
    except OSError as exc:
        sys.stderr.write(f"error: cannot write the targets file: {exc.strerror or exc}\n")
        return EXIT_FAILED
    if action == "check":
        return _check(args.name, targets)
    rows = [[t.name, kind_words(t.kind), describe_target(t)] for t in targets.items]
    rows += [[b.name, "invalid", "cannot be used (see below)"] for b in targets.invalid]
    where = targets.path if targets.path is not None else "(no file yet)"
    sys.stdout.write(f"{where}\n" + text_table(["name", "kind", "where"], rows, left=3) + "\n")
    for bad in targets.invalid:
        sys.stderr.write(f"warning: target {bad.name!r} cannot be used:\n"
                         + "".join(f"  - {p}\n" for p in bad.problems))
    return EXIT_OK


def _remove(name: str) -> int:
    def change(targets: Targets) -> Targets:
        if name == LOCAL or name not in targets.all_names():
            others = [n for n in targets.all_names() if n != LOCAL]
            raise _Refused([f"error: no target {name!r} to remove; targets: {', '.join(others) or 'none'}"])
        return targets.without(name)

    _, path = update_targets(change)
    sys.stdout.write(f"removed {name} from {path}\n")
    return EXIT_OK


def _add(args: argparse.Namespace) -> int:
    data: dict[str, Any] = {
        k: v for k, v in vars(args).items()
        if k in ("host", "port", "user", "identity", "ssh_options", "python", "preamble", "via",
                 "partition", "gpus", "gpu_type", "time_limit", "account", "srun_flags", "workers")
        and v not in ("", None, [], 0)
    }
    data.update(name=args.name, kind=args.kind)
    if args.gpu_ids:
        try:
            data["gpu_ids"] = [int(x) for x in args.gpu_ids.split(",") if x.strip()]
        except ValueError:
            raise _Refused([f"error: --gpu-ids {args.gpu_ids!r} is not a list of GPU numbers"]) from None
    target, problems = check_target(data)
    if target is None:
        raise _Refused(["The target cannot be used:", *(f"  - {p}" for p in problems)])
    checked = target

    def change(targets: Targets) -> Targets:
        updated = targets.with_target(checked)
        found = updated.problems()
        if found:
            raise _Refused(["The target cannot be used:", *(f"  - {p}" for p in found)])
        return updated

    _, path = update_targets(change)
    sys.stdout.write(f"saved {target.name} ({describe_target(target)}) in {path}\n")
    return EXIT_OK


def _check(name: str, targets: Any) -> int:
    from ..jobs.workers import RemoteLauncher, launcher_for

    try:
        launcher = launcher_for(name, targets)
    except (KeyError, ValueError) as exc:
        sys.stderr.write(f"error: {exc.args[0]}\n")
        return EXIT_BAD
    if not isinstance(launcher, RemoteLauncher):
        sys.stdout.write(f"{name}: this machine\n")
        return EXIT_OK
    try:
        launcher.prepare(lambda line: print(line, file=sys.stderr))
    except WorkerStartFailed as exc:
        sys.stderr.write(f"error: {exc}\n")
        return EXIT_FAILED
    found = launcher.found
    sys.stdout.write(
        f"{name}: host {found.get('host')}, Python {found.get('python')} at "
        f"{found.get('executable')}, torch present, "
        f"worker {launcher.active_bundle().file_name} in place\n"
    )
    return EXIT_OK
