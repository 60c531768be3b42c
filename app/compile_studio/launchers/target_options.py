"""Which ``ssh`` options and ``srun`` flags a target may carry, each checked in every spelling.

Nothing accepted here can run a command or load a library on this machine;
see :mod:`targets` for what each field of a target can make happen, and where.
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Iterable
from pathlib import Path

from ..core.plain_file import UnreadableFile, read_regular_file

#: The largest ssh config file a ``-F`` option may name.
MAX_SSH_CONFIG_BYTES = 256 * 1024

#: an ssh destination: no option look-alike, no spaces or shell characters
HOST_NAME = re.compile(r"^[A-Za-z0-9_\[][A-Za-z0-9._:%@\[\]-]{0,254}$")
USER_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9._-]{0,63}$")


# -- ssh options -------------------------------------------------------------------------------

#: ``ssh`` flags without a value that a target may carry.
SSH_FLAGS = frozenset("46Cqvx" "aT")
#: ``ssh`` flags with a value that a target may carry, each value checked.
SSH_VALUE_FLAGS = frozenset("plioJF")
#: Every flag of ``ssh`` (OpenSSH 9), so that bundled flags (``-Co…``) are read as ``ssh`` reads them.
_SSH_ALL_PLAIN = frozenset("1246afgknqstvxACGKMNTVXYy")
_SSH_ALL_VALUE = frozenset("bceilmopBDEFIJLOPQRSwW")
#: Flags refused with a reason of their own.
_SSH_FLAG_REASONS = {
    "A": "it hands the host your ssh agent",
    "X": "it lets the host use your display", "Y": "it lets the host use your display",
    "L": "it opens a port forward", "R": "it opens a port forward", "D": "it opens a port forward",
    "W": "it forwards the connection elsewhere", "w": "it opens a tunnel device",
    "I": "it loads a library into ssh on this machine",
    "E": "it writes a log file on this machine",
    "f": "it leaves ssh running in the background", "N": "it runs no remote command",
    "M": "it starts a shared connection master", "S": "it names a control socket (use -o ControlPath)",
    "G": "it only prints the configuration", "V": "it only prints the version",
}

#: ``ssh`` configuration keys (``-o Key=Value``, or lines of a ``-F`` file) a target may
#: carry, lower case to the usual spelling; keys are case-insensitive in ``ssh``.
SSH_CONFIG_KEYS = {k.lower(): k for k in (
    "AddressFamily", "BatchMode", "CertificateFile", "CheckHostIP", "Ciphers", "Compression",
    "ConnectionAttempts", "ConnectTimeout", "ControlMaster", "ControlPath", "ControlPersist",
    "GSSAPIAuthentication", "HashKnownHosts", "HostKeyAlgorithms", "HostKeyAlias", "HostName",
    "IdentitiesOnly", "IdentityFile", "IPQoS", "KbdInteractiveAuthentication", "KexAlgorithms",
    "LogLevel", "MACs", "NumberOfPasswordPrompts", "PasswordAuthentication", "Port",
    "PreferredAuthentications", "ProxyJump", "PubkeyAcceptedAlgorithms", "PubkeyAcceptedKeyTypes",
    "PubkeyAuthentication", "RekeyLimit", "ServerAliveCountMax", "ServerAliveInterval",
    "StrictHostKeyChecking", "TCPKeepAlive", "UpdateHostKeys", "User", "UserKnownHostsFile",
    "VerifyHostKeyDNS",
)}
#: Keys refused with a reason of their own (any other key not in :data:`SSH_CONFIG_KEYS`
#: is refused too, as not on the list).
_SSH_KEY_REASONS = {
    "proxycommand": "it runs a command on this machine",
    "localcommand": "it runs a command on this machine",
    "permitlocalcommand": "it lets ssh run a command on this machine",
    "knownhostscommand": "it runs a command on this machine",
    "match": "it can run a command on this machine (Match exec)",
    "include": "it reads another config file, which could run a command on this machine",
    "pkcs11provider": "it loads a library into ssh on this machine",
    "securitykeyprovider": "it loads a library into ssh on this machine",
    "smartcarddevice": "it loads a library into ssh on this machine",
    "proxyusefdpass": "it goes with ProxyCommand",
    "forwardagent": "it hands the host your ssh agent",
    "forwardx11": "it lets the host use your display",
    "forwardx11trusted": "it lets the host use your display",
    "localforward": "it opens a port forward", "remoteforward": "it opens a port forward",
    "dynamicforward": "it opens a port forward",
    "sendenv": "it sends your environment variables to the host",
    "setenv": "it sets environment variables on the host",
}
_OWN_CONFIG = "anything else can go in your own ~/.ssh/config, under a Host entry for this host"
#: ``Key=Value``, ``Key Value`` or ``Key = Value``, as ``ssh -o`` and config lines have them
_SSH_KEY_VALUE = re.compile(r"^[ \t]*([A-Za-z][A-Za-z0-9]*)(?:[ \t]*=[ \t]*|[ \t]+)(.*?)[ \t]*$")
#: the first word of an option's text, however quoted or spaced (to name it in a message)
_SSH_FIRST_WORD = re.compile(r"^[\s\"'=]*([A-Za-z0-9]+)")
#: a value: no quotes, backslashes, control characters or spaces (ssh would read them its own way)
_SSH_VALUE = re.compile(r"^[^\s\"'\\\x00-\x1f\x7f]+$")
_JUMP_HOST = re.compile(
    r"^(?:[A-Za-z0-9_][A-Za-z0-9._-]{0,63}@)?"
    r"(?:[A-Za-z0-9_][A-Za-z0-9._-]{0,254}|\[[0-9A-Fa-f:.]{2,45}\])(?::\d{1,5})?$"
)
_HOST_PATTERNS = re.compile(r"^!?[A-Za-z0-9_.*?:%@\[\]-]{1,255}$")
_PORT = re.compile(r"^\d{1,5}$")


def _refused(shown: str, reason: str) -> str:
    return f"ssh option {shown} is not accepted in a target: {reason}; {_OWN_CONFIG}"


def _not_listed(shown: str) -> str:
    return (f"ssh option {shown} is not one a target may carry (it takes -4 -6 -C -q -v -x -a -T, "
            "-p, -l, -i, -J, a checked -F file and -o with the keys listed by "
            f"'compile-studio-cli targets add --help'); {_OWN_CONFIG}")


def _jump_problem(value: str, shown: str) -> str | None:
    if value.lower() == "none":
        return None
    for hop in value.split(","):
        if not _JUMP_HOST.match(hop):
            return (f"ssh option {shown}: {hop[:80]!r} is not a jump host "
                    "([user@]host[:port], not starting with -)")
    return None


def _config_value_problem(key: str, value: str, shown: str) -> str | None:
    """Why ``value`` is not one for the allowed ``key`` (lower case), or None."""
    if not value:
        return f"ssh option {shown} has no value"
    if not _SSH_VALUE.match(value):
        return (f"ssh option {shown}: the value {value[:80]!r} holds spaces, quotes or "
                "backslashes; give one plain word")
    if key == "port" and not (_PORT.match(value) and 1 <= int(value) <= 65535):
        return f"ssh option {shown}: {value[:20]!r} is not a port (1-65535)"
    if key == "user" and not USER_NAME.match(value):
        return f"ssh option {shown}: {value[:80]!r} is not a user name"
    if key == "hostname" and not HOST_NAME.match(value):
        return f"ssh option {shown}: {value[:80]!r} is not an ssh host name"
    if key == "proxyjump":
        return _jump_problem(value, shown)
    return None


def _config_line_problem(text: str, shown_as: str) -> str | None:
    """Why one ``Key=Value`` text (of ``-o``, or a line of a ``-F`` file) is refused, or None."""
    first = _SSH_FIRST_WORD.match(text)
    word = first.group(1) if first else text.strip()[:40]
    shown = f"{shown_as} {word}" if shown_as else word
    key = word.lower()
    if key in _SSH_KEY_REASONS:
        return _refused(shown, _SSH_KEY_REASONS[key])
    if key not in SSH_CONFIG_KEYS:
        return _not_listed(shown)
    found = _SSH_KEY_VALUE.match(text)
    if found is None or found.group(1).lower() != key:
        return (f"ssh option {shown}: write it as {SSH_CONFIG_KEYS[key]}=VALUE "
                "(no quotes or line breaks)")
    return _config_value_problem(key, found.group(2), shown)


def _ssh_config_problems(path_text: str) -> list[str]:
    """Why the ssh config file of ``-F path_text`` cannot be used (empty: it can)."""
    shown = f"-F {path_text[:200]}"
    if path_text.lower() == "none":
        return []
    if not os.path.isabs(path_text):
        return [f"ssh option {shown}: give the config file as an absolute path "
                "(ssh does not expand ~ or read it from a known folder)"]
    try:
        data, st = read_regular_file(Path(path_text), MAX_SSH_CONFIG_BYTES, follow_links=True)
    except UnreadableFile as exc:
        return [f"ssh option {shown}: {exc}"]
    if data is None or st is None:
        return [f"ssh option {shown}: there is no such file"]
    owners = {0, os.getuid()} if hasattr(os, "getuid") else None
    real_folder = Path(os.path.realpath(path_text)).parent
    try:
        folder = os.stat(real_folder)
    except OSError as exc:
        return [f"ssh option {shown}: its folder cannot be examined ({exc.strerror or exc})"]
    if owners is not None and st.st_uid not in owners:
        return [f"ssh option {shown}: the file belongs to another user, who could change it"]
    if st.st_mode & 0o022:
        return [f"ssh option {shown}: others can write the file, and could add a command to it later"]
    if folder.st_mode & 0o022 and not folder.st_mode & stat.S_ISVTX:
        return [f"ssh option {shown}: others can write its folder, and could replace it later"]
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return [f"ssh option {shown}: the file is not UTF-8 text"]
    problems = []
    for number, line in enumerate(text.splitlines(), 1):
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        first = _SSH_FIRST_WORD.match(stripped)
        if first and first.group(1).lower() == "host":
            found = _SSH_KEY_VALUE.match(stripped)
            patterns = found.group(2).split() if found and found.group(1).lower() == "host" else []
            if not patterns or not all(_HOST_PATTERNS.match(p) for p in patterns):
                problems.append(f"ssh option {shown}, line {number}: not a Host line of plain host patterns")
            continue
        problem = _config_line_problem(stripped, "")
        if problem is not None:
            problems.append(f"{shown}, line {number}: {problem}")
        if len(problems) >= 5:
            break
    return problems


def ssh_option_problems(options: Iterable[str]) -> list[str]:
    """What is refused in a target's ``ssh_options`` (empty: all can be used), in words.

    The options are read as ``ssh`` reads them (flags bundled in one item,
    a value in the same item or the next one) and each must be on the lists
    of the module's notes. Every item must be an option: a lone word would be
    taken by ``ssh`` as the host, and what follows as the remote command.
    """
    items = list(options)
    problems: list[str] = []
    k = 0
    while k < len(items):
        item = items[k]
        k += 1
        if item == "--" or not item.startswith("-") or item == "-":
            problems.append(f"ssh argument {item[:80]!r} is not an option (-x or -o Key=Value); "
                            "the host goes in the host field")
            continue
        j = 1
        while j < len(item):
            letter = item[j]
            if letter in _SSH_ALL_VALUE:
                value = item[j + 1:]
                if not value:
                    if k >= len(items):
                        problems.append(f"ssh option -{letter} needs a value after it")
                        break
                    value = items[k]
                    k += 1
                problem = _flag_value_problem(letter, value)
                if problem is not None:
                    problems.append(problem)
                break
            if letter in SSH_FLAGS:
                j += 1
                continue
            if letter in _SSH_FLAG_REASONS:
                problems.append(_refused(f"-{letter}", _SSH_FLAG_REASONS[letter]))
            elif letter in _SSH_ALL_PLAIN:
                problems.append(_not_listed(f"-{letter}"))
            else:
                problems.append(f"ssh argument {item[:80]!r}: -{letter} is not an ssh option")
            break
    return problems


def _flag_value_problem(letter: str, value: str) -> str | None:
    """Why ``-letter value`` is refused, or None."""
    if letter in _SSH_FLAG_REASONS:
        return _refused(f"-{letter}", _SSH_FLAG_REASONS[letter])
    if letter not in SSH_VALUE_FLAGS:
        return _not_listed(f"-{letter}")
    if letter == "o":
        return _config_line_problem(value, "-o")
    if letter == "F":
        found = _ssh_config_problems(value)
        return "; ".join(found) if found else None
    if letter == "J":
        return _jump_problem(value, "-J")
    if not _SSH_VALUE.match(value):
        return f"ssh option -{letter}: {value[:80]!r} holds spaces, quotes or control characters"
    if letter == "p" and not (_PORT.match(value) and 1 <= int(value) <= 65535):
        return f"ssh option -p: {value[:20]!r} is not a port (1-65535)"
    if letter == "l" and not USER_NAME.match(value):
        return f"ssh option -l: {value[:80]!r} is not a user name"
    return None


#: ``srun`` options that run a program where ``srun`` runs (``--prolog``, ``--epilog``), and
#: their abbreviations, which ``srun`` accepts too.
_SRUN_REFUSED = ("--prolog", "--epilog")


def srun_flag_problems(flags: Iterable[str]) -> list[str]:
    """What is refused in a target's ``srun_flags`` (empty: all can be used)."""
    problems = []
    for flag in flags:
        name = flag.split("=", 1)[0].lower()
        if len(name) >= 3 and name.startswith("--") and any(r.startswith(name) for r in _SRUN_REFUSED):
            problems.append(f"srun flag {flag[:80]!r} is not accepted in a target: "
                            "it runs a program where srun runs")
    return problems
