"""The seccomp filter every sandboxed process runs under: classic BPF, built here.

What a process inside the sandbox is refused, whatever uid it has:

- changing what it sees of the file system: ``mount``, ``umount2``,
  ``pivot_root``, ``chroot`` and the new mount API (``open_tree``,
  ``move_mount``, ``fsopen``, ``fsconfig``, ``fsmount``, ``fspick``,
  ``mount_setattr``);
- new namespaces: ``unshare``, ``setns``, ``clone`` with a ``CLONE_NEW*`` flag
  (``clone3``, whose flags a filter cannot read, answers ``ENOSYS``: the C
  library falls back to ``clone``);
- reaching into other processes or the kernel: ``ptrace``,
  ``process_vm_readv/writev``, ``keyctl``, ``add_key``, ``request_key``,
  ``bpf``, ``perf_event_open``, ``userfaultfd``, module and kexec loading,
  ``reboot``, ``swapon/off``, ``acct``, ``syslog``, ``quotactl``,
  ``open_by_handle_at``;
- ``io_uring``, which performs socket and file operations past any filter;
- another ABI (32-bit or x32 calls on a 64-bit machine), whose numbers differ.

With ``unix_sockets=False`` it also refuses ``socket(AF_UNIX, …)``: no Unix
socket left on the host's file system (or in the abstract namespace) is
reachable; ``socketpair`` still works (pipes between a program and its
children). The in-sandbox relay needs Unix sockets for its own connections
out, so it installs that part itself, just before it runs the command
(``relay.py --seccomp``).

No dependency: the program is a list of ``struct sock_filter`` written out as
bytes, which bubblewrap's ``--seccomp FD`` loads (after ``no_new_privs``).
"""

from __future__ import annotations

import errno
import platform
import struct
from dataclasses import dataclass

# linux/filter.h, linux/seccomp.h, linux/audit.h
_LD_W_ABS = 0x20
_JEQ = 0x15
_JGE = 0x35
_JSET = 0x45
_RET = 0x06
_ALLOW = 0x7FFF0000
_ERRNO = 0x00050000
_NR, _ARCH, _ARG0 = 0, 4, 16  # offsets in struct seccomp_data (little endian)
_X32_BIT = 0x40000000
CLONE_NEW_FLAGS = 0x7E020000  # NEWNS|NEWCGROUP|NEWUTS|NEWIPC|NEWUSER|NEWPID|NEWNET
AF_UNIX = 1


@dataclass(frozen=True)
class Arch:
    audit: int
    x32: bool  # whether numbers with the x32 bit are another ABI to refuse
    numbers: dict[str, int]


_DENIED = (
    "mount", "umount2", "pivot_root", "chroot", "open_tree", "move_mount", "fsopen",
    "fsconfig", "fsmount", "fspick", "mount_setattr", "unshare", "setns", "ptrace",
    "process_vm_readv", "process_vm_writev", "keyctl", "add_key", "request_key", "bpf",
    "perf_event_open", "userfaultfd", "init_module", "finit_module", "delete_module",
    "kexec_load", "kexec_file_load", "reboot", "swapon", "swapoff", "acct", "syslog",
    "quotactl", "open_by_handle_at", "io_uring_setup", "io_uring_enter", "io_uring_register",
)  # fmt: skip
# Numbers shared by both architectures (the newer calls have one number everywhere).
_COMMON = {
    "open_tree": 428, "move_mount": 429, "fsopen": 430, "fsconfig": 431, "fsmount": 432,
    "fspick": 433, "clone3": 435, "mount_setattr": 442, "io_uring_setup": 425,
    "io_uring_enter": 426, "io_uring_register": 427,
}  # fmt: skip
ARCHES = {
    "x86_64": Arch(
        0xC000003E,
        True,
        {
            **_COMMON,
            "mount": 165,
            "umount2": 166,
            "pivot_root": 155,
            "chroot": 161,
            "unshare": 272,
            "setns": 308,
            "ptrace": 101,
            "process_vm_readv": 310,
            "process_vm_writev": 311,
            "keyctl": 250,
            "add_key": 248,
            "request_key": 249,
            "bpf": 321,
            "perf_event_open": 298,
            "userfaultfd": 323,
            "init_module": 175,
            "finit_module": 313,
            "delete_module": 176,
            "kexec_load": 246,
            "kexec_file_load": 320,
            "reboot": 169,
            "swapon": 167,
            "swapoff": 168,
            "acct": 163,
            "syslog": 103,
            "quotactl": 179,
            "open_by_handle_at": 304,
            "clone": 56,
            "socket": 41,
        },  # fmt: skip
    ),
    "aarch64": Arch(
        0xC00000B7,
        False,
        {
            **_COMMON,
            "mount": 40,
            "umount2": 39,
            "pivot_root": 41,
            "chroot": 51,
            "unshare": 97,
            "setns": 268,
            "ptrace": 117,
            "process_vm_readv": 270,
            "process_vm_writev": 271,
            "keyctl": 219,
            "add_key": 217,
            "request_key": 218,
            "bpf": 280,
            "perf_event_open": 241,
            "userfaultfd": 282,
            "init_module": 105,
            "finit_module": 273,
            "delete_module": 106,
            "kexec_load": 104,
            "kexec_file_load": 294,
            "reboot": 142,
            "swapon": 224,
            "swapoff": 225,
            "acct": 89,
            "syslog": 116,
            "quotactl": 60,
            "open_by_handle_at": 265,
            "clone": 220,
            "socket": 198,
        },  # fmt: skip
    ),
}
ARCHES["amd64"] = ARCHES["x86_64"]
ARCHES["arm64"] = ARCHES["aarch64"]


class UnsupportedArch(Exception):
    """No filter is known for this machine's architecture."""


def arch(machine: str | None = None) -> Arch:
    name = (machine or platform.machine()).lower()
    try:
        return ARCHES[name]
    except KeyError:
        raise UnsupportedArch(
            f"no seccomp filter for the {name} architecture (known: x86_64, aarch64)"
        ) from None


def _ins(code: int, k: int, jt: int = 0, jf: int = 0) -> bytes:
    return struct.pack("<HBBI", code, jt, jf, k)


def _errno(number: int) -> bytes:
    return _ins(_RET, _ERRNO | number)


def program(*, unix_sockets: bool = True, machine: str | None = None) -> bytes:
    """The filter for this machine: every call allowed but the ones above."""
    found = arch(machine)
    nums = found.numbers
    out = [_ins(_LD_W_ABS, _ARCH), _ins(_JEQ, found.audit, jt=1), _errno(errno.ENOSYS)]
    out.append(_ins(_LD_W_ABS, _NR))
    if found.x32:
        out += [_ins(_JGE, _X32_BIT, jf=1), _errno(errno.ENOSYS)]
    for name in _DENIED:
        out += [_ins(_JEQ, nums[name], jf=1), _errno(errno.EPERM)]
    out += [_ins(_JEQ, nums["clone3"], jf=1), _errno(errno.ENOSYS)]
    # clone: refuse a new namespace, allow a thread or a process.
    out += _by_first_argument(nums["clone"], _JSET, CLONE_NEW_FLAGS, errno.EPERM)
    if not unix_sockets:
        out += _by_first_argument(nums["socket"], _JEQ, AF_UNIX, errno.EACCES)
    out.append(_ins(_RET, _ALLOW))
    return b"".join(out)


def unix_only(*, machine: str | None = None) -> bytes:
    """Only the refusal of ``socket(AF_UNIX)``: what the relay adds on top of the
    sandbox's filter before it runs the command."""
    found = arch(machine)
    out = [_ins(_LD_W_ABS, _ARCH), _ins(_JEQ, found.audit, jt=1), _errno(errno.ENOSYS)]
    out.append(_ins(_LD_W_ABS, _NR))
    out += _by_first_argument(found.numbers["socket"], _JEQ, AF_UNIX, errno.EACCES)
    out.append(_ins(_RET, _ALLOW))
    return b"".join(out)


def _by_first_argument(number: int, test: int, value: int, refusal: int) -> list[bytes]:
    """For call ``number`` alone: refused with ``refusal`` when its first argument
    passes ``test`` (JEQ, JSET) against ``value``, else allowed. Other calls go on
    to the instruction after these five, with the call's number still loaded."""
    return [
        _ins(_JEQ, number, jf=4),
        _ins(_LD_W_ABS, _ARG0),
        _ins(test, value, jf=1),
        _errno(refusal),
        _ins(_RET, _ALLOW),
    ]
