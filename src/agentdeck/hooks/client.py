"""The hook command Claude Code runs: ``python -S client.py AGENTDECK_HOME``.

A launcher only, so that the logic (``hookclient_impl``) is imported from its
cached bytecode instead of compiled on every hook event.
"""

import sys

if __name__ == "__main__":
    # Our directory goes last on the path: agentdeck modules beside us must not
    # shadow the standard library. Bytecode is written even under
    # PYTHONDONTWRITEBYTECODE, or every event would compile the module again.
    sys.path.append(sys.path.pop(0))
    sys.dont_write_bytecode = False
    import hookclient_impl  # type: ignore[import-not-found]

    hookclient_impl.main()
