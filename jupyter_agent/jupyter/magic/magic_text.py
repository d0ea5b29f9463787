"""What the ``%agent`` line magic prints: its status, the permission rules, the runs.

Plain text, redacted where it shows what a run or a rule holds (``agent_magic.py`` parses the
line and prints these).
"""

from __future__ import annotations

from pathlib import Path

from IPython.core.error import UsageError

from ...changes import RunChanges, UndoState
from ...policy import PolicyViolation, load_policy
from ...redact import redact
from ..kernel.agent_config import AgentConfig
from ..kernel.agent_session import AgentSession


def rules_text(session: AgentSession) -> str:
    """``%agent rules``: the permission rules of this session, numbered."""
    conv = session._conversation
    permissions = getattr(conv, "permissions", None)
    if permissions is None:
        return "No rules yet (the conversation has not started)."
    lines = ["Permission rules (deny beats ask beats allow):"]
    number = 0
    for label, rules in (("session", permissions.session_allow), ("allow", permissions.allow),
                         ("ask", permissions.ask), ("deny", permissions.deny)):
        for rule in rules:
            if label == "session":
                number += 1
                lines.append(f"  {number}. allow {rule}   (added with Always allow)")
            else:
                lines.append(f"     {label} {rule}")
    if len(lines) == 1:
        lines.append("  (none: every write and cell run asks, as the permission mode says)")
    elif number:
        lines.append("Remove a session rule with `%agent rules --remove N`.")
    return redact("\n".join(lines))


def remove_rule(session: AgentSession, number: int) -> str:
    """Remove session rule ``number`` (1-based, as ``%agent rules`` numbers them)."""
    conv = session._conversation
    rules = getattr(getattr(conv, "permissions", None), "session_allow", [])
    if not 1 <= number <= len(rules):
        raise UsageError(f"There is no session rule {number}: `%agent rules` lists "
                         f"{len(rules)} session rule{'s' if len(rules) != 1 else ''}.")
    rule = rules.pop(number - 1)
    return f"Removed the rule {rule}: such calls ask again."


def provider_text(cfg: AgentConfig) -> str:
    """Where runs go: the provider (the administrator's pin, the setting or the environment)
    and its region, project or resource when set (docs/providers.md)."""
    try:
        policy = load_policy()
        provider = policy.check_provider(cfg.provider or None).value
        settings = policy.provider_settings(cfg.provider_settings())
    except ValueError as exc:  # an unknown $JUPYTER_AGENT_PROVIDER, a refused one: the run says so too
        return f"unusable: {exc}"
    where = [f"{name} {value}" for name, value in (("region", settings.region), ("project", settings.project),
                                                    ("resource", settings.resource)) if value]
    pinned = " (the administrator's policy)" if "provider" in policy.pins else ""
    return provider + pinned + (f", {', '.join(where)}" if where else "")


def status_text(session: AgentSession) -> str:
    """What ``%agent`` prints: the settings and the conversation's state."""
    cfg = session.config
    conv = session._conversation
    model = conv.model_name if conv is not None else (cfg.model or "(default: $JUPYTER_AGENT_MODEL or Sonnet)")
    replay = (conv.replay if conv is not None else None) or cfg.replay
    lines = [
        "jupyter-agent",
        f"  model:           {model}" + (f"  (replaying {replay})" if replay else ""),
        f"  provider:        {provider_text(cfg)}",
        f"  permission mode: {conv.permission_mode if conv is not None else cfg.permission_mode}",
        f"  max turns:       {cfg.max_turns or 'no limit'}",
        f"  spend limit:     {spend_limit_text(cfg.max_budget_usd)}",
        f"  working dir:     {conv.context.cwd if conv is not None else (cfg.cwd or Path.cwd())}",
        f"  notebook:        {session.notebook_path() or 'unknown (set %config AgentConfig.notebook_path)'}",
    ]
    if conv is not None:
        # counted from the streams of this conversation's runs here (a stopped or failed
        # response still cost tokens); the conversation's own count has finished ones only
        from ...loop.usage import Usage
        from ...view.labels import cost_text

        u, offline, known = Usage(), bool(replay), True
        for handle in session.runs:
            if getattr(handle, "conversation", None) is conv:
                u.add(handle.model.total_usage)
                offline = offline or handle.model.offline
                known = known and handle.model.cost_known
        if u.total_tokens < conv.usage.total_tokens:  # runs sent without this session
            u = conv.usage
        lines.append(f"  conversation:    {len(conv.messages)} messages, {len(conv.runs)} runs, "
                     f"{u.input_tokens:,} in / {u.output_tokens:,} out tokens"
                     + (f", {cost}" if (cost := cost_text(u.cost_usd, offline=offline, known=known)) else ""))
        lines.append(f"  saved:           {saved_text(session)}")
    else:
        lines.append("  conversation:    not started")
    lines.append(f"  running:         {'yes' if session.active is not None else 'no'}")
    return "\n".join(lines)


def saved_text(session: AgentSession) -> str:
    """Where the conversation is saved after each turn (what `%agent resume` reads), or why not."""
    if not session.config.save_conversation:
        return "off (%config AgentConfig.save_conversation = True turns it on)"
    from ..persistence.resume import key_of
    from ..persistence.saved_conversation import saved_path

    saver = session.saver
    if saver is not None and saver.error:
        return redact(f"failed: {saver.error}")
    return str(saved_path(key_of(session, session._conversation)))


def spend_limit_text(own: float) -> str:
    """A run's spend limit, and whose it is (the user's, or the administrator's policy file)."""
    try:
        policy = load_policy()
    except PolicyViolation as exc:  # a broken policy file: runs refuse to start, naming it
        return str(exc)
    admin = policy.max_budget_usd
    if admin is not None and (not own or own >= admin):
        return f"${admin:g} per run (administrator's policy: {policy.sources['max_budget_usd']})"
    return f"${own:g} per run" if own else "no limit"


#: ``%agent runs``' undo column, from the run's changes (``RunChanges.undo_state``)
UNDO_WORDS = {UndoState.NOT_UNDONE: "no", UndoState.RUNNING: "undoing", UndoState.DONE: "undone",
              UndoState.FAILED: "failed"}


def undo_word(changes: RunChanges | None) -> str:
    """Whether the run is undone, in a word ("—": it changed nothing, or kept no record)."""
    if changes is None or (changes.empty and changes.undo_state is UndoState.NOT_UNDONE):
        return "—"
    return UNDO_WORDS[changes.undo_state]


def runs_table(session: AgentSession) -> str:
    """What ``%agent runs`` prints: one line per run of this kernel."""
    if not session.runs:
        return "No runs yet."
    from ..outside.outside_run import OutsideRun

    lines = [f"{'#':>3}  {'end reason':<18} {'turns':>5} {'tokens':>9} {'cost':>9} {'undo':<8}  prompt"]
    for i, handle in enumerate(session.runs, 1):
        term = handle.terminal
        reason = term.reason.value if term is not None else "running"
        usage = handle.model.total_usage
        prompt = " ".join(handle.prompt.split())
        prompt = prompt if len(prompt) <= 50 else prompt[:49] + "…"
        cost = "—" if handle.model.offline else f"${usage.cost_usd:.4f}" if handle.model.cost_known else "unknown"
        turns = str(handle.model.turn_count)
        if isinstance(handle, OutsideRun):  # an outside agent's calls
            calls = handle.calls_made
            # as the panel shows it: running during a call, between calls its calls so far
            # (completed); no model, so no turns nor cost of ours: its calls instead
            from ...loop.state import TerminalReason

            reason = "running" if not handle.done else TerminalReason.COMPLETED.value
            turns, cost = "—", "—"
            prompt = f"{calls} call{'' if calls == 1 else 's'} of {' '.join(str(handle.client).split())}"
            prompt = prompt if len(prompt) <= 50 else prompt[:49] + "…"
        lines.append(f"{i:>3}  {reason:<18} {turns:>5} {usage.total_tokens:>9,} "
                     f"{cost:>9} {undo_word(handle.changes):<8}  {prompt}")
    return redact("\n".join(lines))
