"""A unified diff scrubbed as the files it shows. Pure.

``scrub`` knows some secrets by what starts their line (``machine`` in a
``.netrc``) or by a word boundary before them (a URL's scheme), which a diff's
column hides: ``+mongodb+srv://admin:<password>@…``, ``+machine h login u
password p``. So each run of added, removed or context lines is scrubbed
without its column, which is then given back to every line of the result; the
whole is scrubbed once more as it reads (the headers, a secret met across runs).
"""

from __future__ import annotations

from agentdeck.core.redact import scrub

_BODY = ("+", "-", " ", "\\")  # a hunk's lines (``\\ No newline at end of file``)


def scrub_patch(patch: str) -> str:
    """``patch`` (``git diff`` output) as a viewer may see it: no secret, in any line."""
    if not patch:
        return patch
    out: list[str] = []
    run: list[str] = []
    mark = ""
    in_hunk = False

    def flush() -> None:
        if run:
            out.extend(mark + line for line in scrub("\n".join(run)).split("\n"))
            run.clear()

    for line in patch.split("\n"):
        if line.startswith("@@"):
            in_hunk = True
        elif not line.startswith(_BODY):
            in_hunk = False  # ``diff --git``, ``index``, or the end
        if in_hunk and line.startswith(_BODY):
            if line[0] != mark:
                flush()
                mark = line[0]
            run.append(line[1:])
            continue
        flush()
        mark = ""
        out.append(line)
    flush()
    return scrub("\n".join(out))
