"""Extra Dynamo backends from the user's own modules.

A configuration may name modules (``package.module``) or Python files
(``path/to/backends.py``) that register Dynamo backends when imported, with
``torch._dynamo.register_backend``. The worker imports them before it checks
the configuration, so the backends they register can be chosen as variants —
useful to anyone benchmarking a backend of their own.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import re
import sys
from pathlib import Path
from types import ModuleType


class BackendModuleError(ImportError):
    """A backend module could not be imported; the message says which and why."""


#: The folder of an agreed copy (jobs.trust): ``sha256-<hex>``, the hash of the file's bytes.
AGREED_COPY = re.compile(r"sha256-([0-9a-f]{64})")


def import_file(path: Path, prefix: str) -> ModuleType:
    """Import the Python file ``path`` as a module of its own (once per path).

    Raises ImportError when it is not a Python file, or when it is an agreed copy
    (in a ``sha256-<hex>`` folder) whose bytes no longer have that hash; anything the
    file's own code raises propagates. The bytes checked are the bytes run.
    """
    digest = hashlib.sha256(str(path).encode()).hexdigest()[:12]
    name = f"{prefix}_{path.stem}_{digest}"
    if name in sys.modules:
        return sys.modules[name]
    module_spec = importlib.util.spec_from_file_location(name, path)
    if module_spec is None or module_spec.loader is None:
        raise ImportError(f"{path} is not a Python file")
    data = path.read_bytes()  # read once: the bytes checked are the bytes run
    agreed = AGREED_COPY.fullmatch(path.parent.name)
    if agreed is not None and hashlib.sha256(data).hexdigest() != agreed.group(1):
        raise ImportError(
            f"{path} is not the code agreed to (its sha256 is no longer the one in its folder's "
            "name): not run"
        )
    module = importlib.util.module_from_spec(module_spec)
    sys.modules[name] = module
    try:
        exec(compile(data, str(path), "exec", dont_inherit=True), module.__dict__)  # noqa: S102 - the user's agreed code
    except BaseException:
        del sys.modules[name]
        raise
    return module


def load_backend_modules(specs: list[str]) -> list[str]:
    """Import each module or file in ``specs``; returns the backends they registered."""
    import torch._dynamo as dynamo

    before = set(dynamo.list_backends(exclude_tags=()))
    for spec in specs:
        try:
            if spec.endswith(".py") or "/" in spec or "\\" in spec:
                path = Path(spec).expanduser().resolve()
                if not path.is_file():
                    raise BackendModuleError(f"backend module {spec}: no such file")
                import_file(path, "compile_studio_user_backends")
            else:
                importlib.import_module(spec)
        except BackendModuleError:
            raise
        except Exception as exc:  # noqa: BLE001 - any failure of user code is reported as such
            raise BackendModuleError(
                f"backend module {spec} failed to import: {type(exc).__name__}: {exc}"
            ) from exc
    return sorted(set(dynamo.list_backends(exclude_tags=())) - before)
