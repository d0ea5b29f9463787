"""A finished run as a picture: model streaming, tool executions, approvals, turns.

Built from a :class:`~.recording.Recording` (events with arrival times). Displayed in a
notebook it is ``image/svg+xml`` plus the same SVG as an HTML ``<img>`` (which JupyterLab
still shows in an untrusted notebook), so it saves with the notebook and renders there
without a kernel.

Reading it: each ``request N`` row is one streamed response, from the request to the
complete assistant message; a dashed line marks where that response ended. Each tool
row is one ``tool_use``: the bar is its execution (started by the
``StreamingToolExecutor`` as soon as its block was complete, so a bar that begins left
of the dashed line ran while the model was still talking); a diamond is a call that got
its ``tool_result`` without running (unknown tool, invalid input, denied, aborted).
Amber bars are approvals waited on. Shaded bands are turns.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass, field
from html import escape

from ..loop.events import (
    AssistantMessage, ModelFallback, ModelRetry, RequestStart, StreamEvent, ToolResult, ToolStart,
)
from ..loop.state import Terminal
from .recording import Recording


@dataclass
class Span:
    """One row of the timeline."""

    kind: str  # "model", "tool", "approval"
    label: str
    start: float
    end: float | None = None
    turn: int | None = None
    tool_use_id: str | None = None
    status: str = ""  # tool: ok / error / not run; approval: allow / deny ...; model: ok / retried / error
    marks: list[tuple[float, str]] = field(default_factory=list)  # (t, what): tool_use blocks complete, ...

    @property
    def duration(self) -> float:
        return max((self.end if self.end is not None else self.start) - self.start, 0.0)


@dataclass
class Timeline:
    """The spans of a finished run; ``_repr_svg_`` draws them."""

    spans: list[Span]
    turns: list[tuple[int, float, float]]  # (turn_count, start, end)
    end: float
    end_reason: str | None

    def model_spans(self) -> list[Span]:
        return [s for s in self.spans if s.kind == "model"]

    def tool_spans(self) -> list[Span]:
        return [s for s in self.spans if s.kind == "tool"]

    def approval_spans(self) -> list[Span]:
        return [s for s in self.spans if s.kind == "approval"]

    def tool(self, tool_use_id: str) -> Span:
        return next(s for s in self.tool_spans() if s.tool_use_id == tool_use_id)

    def started_before_response_ended(self, tool_use_id: str) -> bool:
        """True if this tool started while the response that asked for it was still streaming."""
        tool = self.tool(tool_use_id)
        response = next((m for m in self.model_spans() if m.turn == tool.turn and m.status == "ok"), None)
        return bool(tool.status != "not run" and response and response.end is not None
                    and tool.start < response.end)

    def _repr_svg_(self) -> str:
        return to_svg(self)

    def _repr_html_(self) -> str:
        # The same picture as an <img> with a data: URI. JupyterLab shows an untrusted
        # notebook's SVG output as "Cannot display an untrusted SVG", but keeps an HTML
        # <img> (its sanitizer checks the scheme of href/cite only), so a saved or
        # downloaded notebook still shows the timeline.
        data = base64.b64encode(to_svg(self).encode()).decode()
        return f'<img alt="timeline of the run" src="data:image/svg+xml;base64,{data}"/>'



def build_timeline(recording: Recording) -> Timeline:
    """Turn a recording into spans (see module doc)."""
    spans: list[Span] = []
    tools: dict[str, Span] = {}
    model: Span | None = None
    turn = 1
    turn_starts: dict[int, float] = {}
    end, end_reason = 0.0, None
    for timed in recording.events:
        t, event = timed.t, timed.event
        end = max(end, t)
        if isinstance(event, RequestStart):
            turn = event.turn_count
            turn_starts.setdefault(turn, t)
            model = Span("model", f"request {event.request_index}", t, turn=turn, status="streaming")
            spans.append(model)
        elif isinstance(event, StreamEvent) and model is not None:
            block = event.block or {}
            if event.type == "content_block_stop" and block.get("type") == "tool_use":
                model.marks.append((t, f"tool_use {block.get('name')} complete"))
        elif isinstance(event, (ModelRetry, ModelFallback)) and model is not None:
            model.end, model.status = t, "retried"
            what = f"retry {event.attempt}" if isinstance(event, ModelRetry) else f"fallback to {event.to_model}"
            model = Span("model", f"{model.label} ({what})", t, turn=turn, status="streaming")
            spans.append(model)
        elif isinstance(event, AssistantMessage) and model is not None:
            model.end, model.status = t, "ok"
            model = None
        elif isinstance(event, ToolStart):
            span = Span("tool", f"{event.name} {event.tool_use_id[-6:]}", timed.at, turn=turn,
                        tool_use_id=event.tool_use_id, status="running")
            tools[event.tool_use_id] = span
            spans.append(span)
        elif isinstance(event, ToolResult):
            known = tools.get(event.tool_use_id)
            if known is None:  # answered without running: unknown tool, invalid input, denied...
                span = Span("tool", f"{event.name or '?'} {event.tool_use_id[-6:]}", t, t, turn=turn,
                            tool_use_id=event.tool_use_id, status="not run")
                tools[event.tool_use_id] = span
                spans.append(span)
            else:
                span = known
                span.end = min(span.start + event.duration_s, t) if event.duration_s else t
                span.status = "error" if event.is_error else "ok"
            span.marks.append((t, "tool_result handed back"))
        elif isinstance(event, Terminal):
            end_reason = event.reason.value
            if model is not None and model.end is None:
                model.end, model.status = t, "error" if end_reason == "model_error" else "aborted"
    for approval in recording.approvals:
        spans.append(Span("approval", f"approve {approval.tool_name}", approval.asked_at,
                          approval.answered_at if approval.answered_at is not None else end,
                          status=approval.outcome))
        end = max(end, approval.answered_at or 0.0)
    for span in spans:
        if span.end is None:
            span.end = end
        if span.kind == "tool" and span.end < span.start:
            span.end = span.start
    spans.sort(key=lambda s: s.start)  # a Gantt chart: rows in the order things began
    ordered = sorted(turn_starts.items())
    turns = [(n, start, ordered[i + 1][1] if i + 1 < len(ordered) else end) for i, (n, start) in enumerate(ordered)]
    return Timeline(spans, turns, end, end_reason)


_COLORS = {"model": "#4e79a7", "tool": "#59a14f", "approval": "#f2a93b", "error": "#e15759",
           "not run": "#e15759", "retried": "#bab0ac", "aborted": "#e15759", "deny": "#e15759"}


def to_svg(timeline: Timeline, width: int = 880) -> str:
    """The timeline as a standalone SVG document."""
    label_w, row_h, top = 190, 22, 34
    rows = timeline.spans
    height = top + row_h * len(rows) + 62
    scale = (width - label_w - 20) / max(timeline.end, 1e-3)

    def x(t: float) -> float:
        return label_w + t * scale

    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           f'viewBox="0 0 {width} {height}" font-family="sans-serif" font-size="12">',
           f'<rect width="{width}" height="{height}" fill="white"/>']
    for i, (n, start, stop) in enumerate(timeline.turns):
        out.append(f'<rect x="{x(start):.1f}" y="{top - 18}" width="{max(x(stop) - x(start), 1):.1f}" '
                   f'height="{row_h * len(rows) + 22}" fill="{"#f3f6fa" if i % 2 == 0 else "#e8eef6"}"/>')
        if x(stop) - x(start) > 44:  # a turn too thin for its label keeps the band only
            out.append(f'<text x="{x(start) + 4:.1f}" y="{top - 5}" fill="#555">turn {n}</text>')
    for i, span in enumerate(rows):
        y = top + i * row_h
        color = _COLORS.get(span.status) if span.status in ("error", "not run", "retried", "aborted", "deny") \
            else _COLORS[span.kind]
        out.append(f'<text x="6" y="{y + 15}" fill="#222">{escape(span.label)}'
                   f'{escape(" · " + span.status) if span.status else ""}</text>')
        title = f"{span.label}: {span.start:.3f}s to {span.end:.3f}s ({span.status})"
        if span.kind == "tool" and span.status == "not run":
            cx, cy = x(span.start), y + 11
            out.append(f'<path d="M{cx:.1f} {cy - 7} L{cx + 7:.1f} {cy} L{cx:.1f} {cy + 7} L{cx - 7:.1f} {cy} Z" '
                       f'fill="{color}"><title>{escape(title)}</title></path>')
        else:
            out.append(f'<rect x="{x(span.start):.1f}" y="{y + 4}" width="{max(span.duration * scale, 2):.1f}" '
                       f'height="{row_h - 8}" rx="3" fill="{color}"><title>{escape(title)}</title></rect>')
        for t, what in span.marks:
            tick = "#1d3557" if what.startswith("tool_use") else "#333"
            out.append(f'<line x1="{x(t):.1f}" y1="{y + 2}" x2="{x(t):.1f}" y2="{y + row_h - 2}" '
                       f'stroke="{tick}" stroke-width="2"><title>{escape(what)} at {t:.3f}s</title></line>')
        if span.kind == "model" and span.status == "ok" and span.end is not None:  # where it ended, every row
            out.append(f'<line x1="{x(span.end):.1f}" y1="{top - 4}" x2="{x(span.end):.1f}" '
                       f'y2="{top + row_h * len(rows)}" stroke="#4e79a7" stroke-dasharray="4 3"/>')
    axis_y = top + row_h * len(rows) + 14
    out.append(f'<line x1="{label_w}" y1="{axis_y}" x2="{width - 20}" y2="{axis_y}" stroke="#888"/>')
    for k in range(6):
        t = timeline.end * k / 5
        out.append(f'<text x="{x(t):.1f}" y="{axis_y + 14}" fill="#555" text-anchor="middle">{t:.2f}s</text>')
    if timeline.end_reason:
        out.append(f'<text x="{width - 20}" y="14" text-anchor="end" fill="#222" font-weight="bold">end: '
                   f'{escape(timeline.end_reason)}</text>')
    out.append(f'<text x="6" y="{axis_y + 28}" fill="#555">bars: model streaming (blue), tool running '
               f'(green), approval (amber), error (red); dashed: a response ended</text>')
    out.append(f'<text x="6" y="{axis_y + 44}" fill="#555">ticks on a request: a tool_use block became complete; '
               f'on a tool: its tool_result was handed back to the loop; diamond: answered without running</text>')
    out.append("</svg>")
    return "\n".join(out)
