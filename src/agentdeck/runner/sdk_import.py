"""The SDK's submodules before its package's ``__init__``, for a quicker spawn.

``import claude_agent_sdk`` imports ``mcp.types``, and with it the whole of
``mcp`` (its package imports mcp's client, server and FastMCP): ~0.6 s, most of
what an embedded ``agentdeck run`` imported before it could spawn Claude Code.
The spawn itself needs only the options (``claude_agent_sdk.types``) and the
subprocess transport, which import none of it.

``defer()`` puts the package in ``sys.modules`` without running its ``__init__``
(``importlib.util.module_from_spec``), so that those submodules load alone;
``finish()`` runs the ``__init__`` in it, as the first import would have. Until
then, the first name asked of the package itself (``from claude_agent_sdk import
X``) runs it too, so nothing reads a half-made package: a submodule that imports
names from the package (``claude_agent_sdk.client``) must wait for ``finish()``.
"""

from __future__ import annotations

import importlib.util
import sys
from typing import Any

PACKAGE = "claude_agent_sdk"
_deferred: set[str] = set()  # packages whose __init__ waits for ``finish``


def defer(package: str = PACKAGE) -> None:
    """The package importable by its submodules alone, its ``__init__`` not run yet.
    Does nothing when it is imported already."""
    if package in sys.modules:
        return
    spec = importlib.util.find_spec(package)
    if spec is None or spec.loader is None:  # not installed: the import says so later
        return
    module = importlib.util.module_from_spec(spec)

    def __getattr__(name: str) -> Any:  # only for a name not there (yet)
        finish(package)
        try:
            return module.__dict__[name]
        except KeyError:
            raise AttributeError(f"module {package!r} has no attribute {name!r}") from None

    module.__dict__["__getattr__"] = __getattr__
    sys.modules[package] = module
    _deferred.add(package)


def finish(package: str = PACKAGE) -> None:
    """The package's ``__init__`` run, if ``defer`` postponed it (once: a name
    missing while it runs is missing, as in any import)."""
    module = sys.modules.get(package)
    if module is None:
        importlib.import_module(package)
        return
    if package not in _deferred:
        return  # never deferred, or run already
    _deferred.discard(package)
    del module.__dict__["__getattr__"]
    spec = module.__spec__
    assert spec is not None and spec.loader is not None
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[package]  # the next import starts afresh, and says what failed
        raise
