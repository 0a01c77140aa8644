"""The relay inside a sandbox: ``python -S relay.py PORT=SOCKET ... -- COMMAND ...``.

A sandboxed process has a network namespace of its own: nothing outside is
reachable. The relay listens on loopback ports inside it and carries each
connection to a Unix socket that agentdeck serves outside (the allow-list proxy,
or the model endpoint), then runs COMMAND. The listeners are bound before
COMMAND starts, so it can connect at once; the relay lives in a child process
that holds none of COMMAND's stdio and ends when COMMAND does.

Standard library only (it runs under ``python -S``); nothing of agentdeck's.
"""

import os
import select
import socket
import sys
import threading
import time

CHUNK = 65536
PARENT_POLL = 0.5  # seconds between checks that the command still runs (no pidfd)


def pump(source: socket.socket, sink: socket.socket) -> None:
    try:
        while True:
            data = source.recv(CHUNK)
            if not data:
                break
            sink.sendall(data)
    except OSError:
        pass
    for sock, how in ((sink, socket.SHUT_WR), (source, socket.SHUT_RD)):
        try:  # noqa: SIM105 - contextlib would cost this -S program its start-up
            sock.shutdown(how)
        except OSError:
            pass


def carry(conn: socket.socket, path: str) -> None:
    upstream = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        upstream.connect(path)
    except OSError:
        conn.close()
        upstream.close()
        return
    back = threading.Thread(target=pump, args=(upstream, conn), daemon=True)
    back.start()
    pump(conn, upstream)
    back.join()
    conn.close()
    upstream.close()


def accept(listener: socket.socket, path: str) -> None:
    while True:
        try:
            conn, _ = listener.accept()
        except OSError:
            return
        threading.Thread(target=carry, args=(conn, path), daemon=True).start()


def serve(listeners: "list[tuple[socket.socket, str]]", parent: int) -> None:
    """The relay's process: let go of the command's stdio (its reader must see
    it end when the command does), carry connections, and end with the command."""
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    os.close(null)
    for pair in listeners:
        threading.Thread(target=accept, args=pair, daemon=True).start()
    ended(parent)
    os._exit(0)


def ended(parent: int) -> None:
    """Returns once the command (the relay's parent, which became it) has ended:
    at once through a pidfd, which is readable from its exit on (Linux 5.3), else
    by polling (its process, still running, keeps the sandbox up meanwhile)."""
    try:
        pidfd = os.pidfd_open(parent)
    except (AttributeError, OSError):
        pidfd = -1
    if pidfd >= 0 and os.getppid() == parent:  # the pidfd is our parent's, not a reused pid's
        select.select([pidfd], [], [])
        return
    while os.getppid() == parent:
        time.sleep(PARENT_POLL)


def main(argv: list[str]) -> int:
    if "--" not in argv:
        sys.stderr.write("usage: relay.py PORT=SOCKET ... -- COMMAND ...\n")
        return 2
    cut = argv.index("--")
    specs, command = argv[:cut], argv[cut + 1 :]
    listeners = []
    for spec in specs:
        port, path = spec.split("=", 1)
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", int(port)))
        listener.listen(128)
        listeners.append((listener, path))
    parent = os.getpid()
    if listeners and os.fork() == 0:
        serve(listeners, parent)
    for listener, _ in listeners:
        listener.close()
    os.execvp(command[0], command)
    return 127


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
