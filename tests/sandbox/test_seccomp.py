"""The seccomp filter as a program: built for each known architecture, every
jump inside it, every path ending in a return (what the kernel's checker
demands; the escape tests prove what it refuses)."""

from __future__ import annotations

import struct

import pytest

from agentdeck.sandbox import seccomp

RET, JMP_CLASS = 0x06, 0x05


def _instructions(program: bytes) -> list[tuple[int, int, int, int]]:
    assert program and len(program) % 8 == 0
    return [struct.unpack("<HBBI", program[i : i + 8]) for i in range(0, len(program), 8)]


@pytest.mark.parametrize("machine", ["x86_64", "aarch64"])
@pytest.mark.parametrize("build", ["plain", "no_unix", "unix_only"])
def test_every_jump_lands_inside_and_the_program_ends_in_a_return(machine: str, build: str) -> None:
    program = (
        seccomp.unix_only(machine=machine)
        if build == "unix_only"
        else seccomp.program(unix_sockets=build == "plain", machine=machine)
    )
    code = _instructions(program)
    for index, (op, jt, jf, _) in enumerate(code):
        if op & 0x07 == JMP_CLASS:
            assert index + 1 + max(jt, jf) < len(code), (index, op)
    assert code[-1][0] == RET and code[-1][3] == 0x7FFF0000  # the default: allowed
    assert code[0][0] == 0x20 and code[0][3] == 4  # the architecture is checked first


def test_unix_sockets_are_refused_only_when_asked() -> None:
    assert len(seccomp.program(unix_sockets=False)) > len(seccomp.program())


def test_an_unknown_architecture_is_named() -> None:
    with pytest.raises(seccomp.UnsupportedArch, match="riscv64"):
        seccomp.program(machine="riscv64")
