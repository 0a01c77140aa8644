"""The relay inside a sandbox: ``relay.py [--seccomp FILTER] PORT=SOCKET ... -- COMMAND ...``.

A sandboxed process has a network namespace of its own: nothing outside is
reachable. The relay listens on loopback ports inside it and carries each
connection to a Unix socket that agentdeck serves outside (the allow-list proxy,
or the model endpoint), then runs COMMAND. The listeners are bound before
COMMAND starts, so it can connect at once; the relay lives in a child process
that holds none of COMMAND's stdio and ends when COMMAND does.

Only the relay may open Unix sockets: with ``--seccomp FILTER`` (a classic BPF
program, ``seccomp.unix_only``) COMMAND runs under that filter too, installed
after the relay's process has split off; a filter that cannot be installed
ends the relay before COMMAND runs.

Standard library only (it runs under ``python -S``); nothing of agentdeck's.
"""

import ctypes
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


PR_SET_SECCOMP = 22
SECCOMP_MODE_FILTER = 2


class _Fprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


def install_filter(program: bytes) -> None:
    """Load a seccomp filter onto this process (and what it execs); the sandbox
    has already set ``no_new_privs``. Raises OSError when the kernel refuses."""
    if not program or len(program) % 8:
        raise OSError(0, "a seccomp filter is a non-empty list of 8-byte instructions")
    buffer = ctypes.create_string_buffer(program, len(program))
    fprog = _Fprog(len(program) // 8, ctypes.cast(buffer, ctypes.c_void_p))
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.byref(fprog), 0, 0) != 0:
        number = ctypes.get_errno()
        raise OSError(number, f"seccomp filter refused: {os.strerror(number)}")


def main(argv: list[str]) -> int:
    if "--" not in argv:
        sys.stderr.write("usage: relay.py [--seccomp FILTER] PORT=SOCKET ... -- COMMAND ...\n")
        return 2
    program = b""
    if argv[:1] == ["--seccomp"]:
        fd = os.open(argv[1], os.O_RDONLY)
        try:
            program = os.read(fd, 65536)
        finally:
            os.close(fd)
        argv = argv[2:]
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
    if program:
        try:
            install_filter(program)
        except OSError as exc:
            sys.stderr.write(f"relay: {exc}\n")
            return 126
    os.execvp(command[0], command)
    return 127


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
