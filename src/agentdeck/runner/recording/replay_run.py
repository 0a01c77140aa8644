"""``agentdeck replay ID``: the recorded start state restored into a fresh workspace,
the real Claude Code run through the normal runner against the replay server.

The start state is the cassette's ``start`` line: checkpoint 1 of the recorded agent
(its files as the agent found them), read out of the agent's checkpoint repository
with ``git archive`` (read only: the recorded agent's timeline is left alone).
The agent is run with the recorded agent's spec (its prompt, tools, allow and deny;
``profile`` if given), or as ``template`` would run the recorded task
(``replay_template``), its model traffic on the replay server, with a key that is
no one's: nothing of the user's credentials goes to it.

Approvals: the replay runs the governor again, so a call the profile asks about is
asked again (a pending approval, answered as any: the inbox, ``agentdeck approve``,
or the caller through ``runner.governor``); the recorded answer is not reused, since
the profile, or who answers, may be what the replay is testing. Unanswered, it
expires as the profile says and the call is denied, which shows as a divergence.
"""

from __future__ import annotations

import asyncio
import io
import re
import secrets
import shutil
import tarfile
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from agentdeck.core.agent import Agent, AgentSpec
from agentdeck.errors import NotFound, UsageError
from agentdeck.runner.endpoints import WITHHELD
from agentdeck.runner.recording.cassette import offers_tools
from agentdeck.runner.recording.replay import (
    ReplayApp,
    ReplayReport,
    ReplayServer,
    recorded_exchanges,
)
from agentdeck.runner.recording.replay_template import (
    TemplateSource,
    recorded_model,
    spec_as_template,
)
from agentdeck.runner.recording.seam import RecordedExtension
from agentdeck.runner.recording.store import Recordings, refuse_live
from agentdeck.runner.runner import Runner
from agentdeck.store.store import Store

REPLAY_KEY = "sk-agentdeck-replay"
_COMMIT = re.compile(r"[0-9a-f]{40}")
WAIT_SECONDS = 300.0


class ReplayExtension(RecordedExtension):
    """The agent's model traffic on the replay server, with a key that is no one's."""

    def env(self, agent: Agent) -> dict[str, str]:
        return {
            **super().env(agent),
            "ANTHROPIC_API_KEY": REPLAY_KEY,
            # as for the scripted model: only the agent's own requests (no title)
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
            **dict.fromkeys(WITHHELD, ""),
        }


def start_of(records: list[dict[str, Any]], recorded_id: str) -> dict[str, Any]:
    start = next((r for r in records if r.get("kind") == "start"), None)
    commit = str(((start or {}).get("checkpoint") or {}).get("commit") or "")
    if start is None or not _COMMIT.fullmatch(commit):
        raise UsageError(
            f"the recording of {recorded_id} kept no start checkpoint to restore",
            hint="record with checkpoints on (AGENTDECK_CHECKPOINTS)",
        )
    return start


async def restore(shadow: Path, commit: str, into: Path, recorded_id: str) -> None:
    """Checkpoint ``commit`` of the shadow repository's files written into ``into``."""
    if not (shadow / "HEAD").is_file():
        raise NotFound(
            "checkpoint store of agent",
            recorded_id,
            hint=f"its start state (checkpoint 1) was kept in {shadow}, which is gone",
        )
    proc = await asyncio.create_subprocess_exec(
        "git", f"--git-dir={shadow}", "archive", "--format=tar", commit,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    out, err = await proc.communicate()
    if proc.returncode != 0:
        raise NotFound(
            f"start checkpoint of agent {recorded_id}",
            commit,
            hint=f"{shadow} does not have it: {err.decode(errors='replace').strip()[:200]}",
        )

    def extract() -> None:
        with tarfile.open(fileobj=io.BytesIO(out), mode="r:") as tar:
            tar.extractall(into, filter="data")

    try:
        await asyncio.to_thread(extract)
    except tarfile.ReadError:
        # An empty workspace (a fresh one): git's archive of an empty tree is only
        # its header, which tarfile refuses; anything else is a damaged checkpoint.
        if await _files_in(shadow, commit):
            raise NotFound(
                f"start checkpoint of agent {recorded_id}",
                commit,
                hint=f"{shadow} holds it, but not as a readable archive",
            ) from None


async def _files_in(shadow: Path, commit: str) -> bool:
    proc = await asyncio.create_subprocess_exec(
        "git", f"--git-dir={shadow}", "ls-tree", "--name-only", commit,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.DEVNULL,
    )  # fmt: skip
    out, _ = await proc.communicate()
    return proc.returncode != 0 or bool(out.strip())


async def clone_at(repo: Path, head: str, into: Path) -> str | None:
    """``into`` a clone of the recorded workspace's repository at ``head`` (its
    files then overlaid by the start checkpoint); what was not done, if anything."""
    proc = await asyncio.create_subprocess_exec(
        "git", "-c", "core.hooksPath=/dev/null", "clone", "-q", "-n", "--", str(repo), str(into),
        stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    _, err = await proc.communicate()
    if proc.returncode == 0:
        proc = await asyncio.create_subprocess_exec(
            "git", "-C", str(into), "-c", "core.hooksPath=/dev/null",
            "checkout", "-q", "--detach", head,
            stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE,
        )  # fmt: skip
        _, err = await proc.communicate()
        if proc.returncode == 0:
            return None
    shutil.rmtree(into, ignore_errors=True)
    why = err.decode(errors="replace").strip().splitlines()[-1:] or ["git failed"]
    return f"git HEAD {head[:12]} not restored (from {repo}): {why[0][:200]}"


def cut_note(records: list[dict[str, Any]]) -> list[str]:
    """A note when the cassette holds a request whose exchange never ended (a
    crash while it was written, or a file cut by hand): it is not answered."""
    ended = {r["n"] for r in records if r.get("kind") == "end"}
    cut = [r["n"] for r in records if r.get("kind") == "request" and r["n"] not in ended]
    if not cut:
        return []
    return [
        f"the cassette was cut short: exchange {', '.join(map(str, cut[:5]))} has no end "
        "(a crash while it was written, or the file was cut), so it is not replayed"
    ]


async def _prompt(store: Store, recorded_id: str, records: list[dict[str, Any]]) -> AgentSpec:
    try:
        return (await store.get_agent(recorded_id)).spec
    except NotFound:
        pass
    first = next((r for r in records if r.get("kind") == "request"), {})
    body = (first.get("body") or {}).get("json") or {}
    messages = body.get("messages") or [{}]
    content = messages[0].get("content")
    text = content if isinstance(content, str) else ""
    if isinstance(content, list):
        texts = [str(c.get("text", "")) for c in content if isinstance(c, dict)]
        text = next((t for t in reversed(texts) if t and not t.startswith("<")), "")
    if not text:
        raise UsageError(f"the recording of {recorded_id} has no first prompt to replay")
    return AgentSpec(prompt=text)


async def replay(
    store: Store,
    runner: Runner,
    recorded_id: str,
    *,
    strict: bool = False,
    profile: str | None = None,
    template: TemplateSource | None = None,
    prepared: Callable[[Path], None] | None = None,
) -> ReplayReport:
    """Replay the recording of ``recorded_id`` (see the module); its report.
    ``template`` gives the template to replay it as, seen from the recorded
    project (``replay_template``). ``prepared`` is called with the restored
    workspace before the agent starts (a test changes the start state there)."""
    settings = runner.settings
    recordings = Recordings.of(settings)
    recordings.existing(recorded_id)
    await refuse_live(store, recorded_id, "replay its recording")
    records = recordings.records(recorded_id)
    start = start_of(records, recorded_id)
    if any(r.get("kind") == "capped" for r in records):
        raise UsageError(
            f"the recording of {recorded_id} was capped: past AGENTDECK_RECORDING_MAX_BYTES "
            "its exchanges kept no body, so there is nothing to answer them with",
            hint="record the run again with a larger AGENTDECK_RECORDING_MAX_BYTES",
        )
    if profile is not None:  # a bad name or file: before a workspace is made
        runner.governor.profile_named(profile)
    exchanges = recorded_exchanges(records)
    recorded_spec = await _prompt(store, recorded_id, records)
    notes: list[str] = []
    if template is not None:  # before anything is made: a bad template runs nothing
        # The spec's project (else its cwd), as run and spawn find templates; never
        # the recorded agent's own workspace (start's cwd), which it could write.
        project = recorded_spec.project or recorded_spec.cwd
        found = await asyncio.to_thread(template, project or None)
        model = recorded_model([e.body for e in exchanges if offers_tools(e.body)])
        recorded_spec, notes = spec_as_template(
            found, recorded_spec, profile=profile, recorded_model=model
        )
    root = settings.home_dir / "replays"
    root.mkdir(parents=True, exist_ok=True, mode=0o700)
    cwd = root / f"{recorded_id}-{int(time.time())}-{secrets.token_hex(3)}"
    report = ReplayReport(recorded_id, strict=strict, recorded=len(exchanges))
    report.notes.extend(notes)
    report.notes.extend(cut_note(records))
    closed = [r for r in records if r.get("kind") == "closed"]
    report.recorded_state = closed[-1].get("state") if closed else None
    report.template = recorded_spec.template if template is not None else None
    try:  # what fails before the agent starts leaves no half-made workspace behind
        head = str(start.get("git_head") or "")
        if _COMMIT.fullmatch(head):
            note = await clone_at(Path(str(start.get("cwd") or "")), head, cwd)
            if note:
                report.notes.append(note)
        if not cwd.exists():
            cwd.mkdir(mode=0o700)
        await restore(
            settings.checkpoints_dir / recorded_id, start["checkpoint"]["commit"], cwd, recorded_id
        )
        if prepared is not None:
            prepared(cwd)
    except BaseException:
        await asyncio.to_thread(shutil.rmtree, cwd, True)
        raise
    app = ReplayApp(
        secrets.token_urlsafe(24), exchanges, report, str(start.get("cwd") or ""), str(cwd)
    )
    report.recorded = len(app.exchanges)
    server = ReplayServer(app)
    url = await server.start()
    try:
        runner.attach(ReplayExtension(runner.extension, url))
        spec = replace(
            recorded_spec,
            name=f"replay of {recorded_id}",
            cwd=str(cwd),
            workspace=None,
            scenario=None,
            record=False,
            profile=profile or recorded_spec.profile,
            resume_on_restart=False,
        )
        session = await runner.start(spec)
        report.agent_id = session.agent.id
        await session.wait_finished(timeout=WAIT_SECONDS)
        report.state = str(session.agent.state)
    finally:
        await server.close()
    return report
