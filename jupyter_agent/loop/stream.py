"""The model's stream as the loop reads it (step 1 of ``query_loop``).

``stream_with_abort`` lets Stop interrupt a stream at once and makes a retry or
fallback a hand-off: the model may start over only when the loop lets it. The rest
decides what to keep of a response that broke off: its finished blocks, where a call
that changes something runs only if the model had moved past it (a cut-off reply
closes its last block too, so that block may be cut short); one still held gets an
error result instead.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from typing import cast
from collections.abc import AsyncGenerator

from .abort import AbortSignal
from .events import ModelFallback, ModelRetry, StreamEvent
from .messages import INVALID_INPUT_KEY
from .model_protocol import Model, ModelEvent, ModelRequest
from .orchestration import StreamingToolExecutor
from .share import LoopShare
from .wire import ContentBlock, MessageSnapshot, ToolUseBlock, is_tool_use

__all__ = ["Aborted", "stream_with_abort", "completed_blocks", "finished_part", "with_parsed_input", "parsed_call",
           "model_moved_on", "restart_error", "wait_before_retry"]


class Aborted(Exception):
    """The user pressed Stop while the model was streaming."""


async def stream_with_abort(model: Model, request: ModelRequest,
                            signal: AbortSignal) -> AsyncGenerator[ModelEvent, None]:
    """The model's events, until Stop: a producer task reads the HTTP stream into a
    queue, so Stop can wake the loop at once and close the connection.

    A ``ModelRetry``/``ModelFallback`` is a hand-off: the model may start over only
    once the loop has taken the event and asked for the next one. The loop may close
    the stream instead (to keep a partial response whose tools changed something),
    and then no retried request leaves."""
    # events, (event, hand-off future) pairs, an exception, or one of the two markers
    queue: asyncio.Queue[ModelEvent | tuple[ModelRetry | ModelFallback, asyncio.Future[None]] | BaseException
                         | object] = asyncio.Queue()
    done, aborted = object(), object()

    async def produce() -> None:
        events = model.stream(request)
        try:
            async for event in events:
                if isinstance(event, (ModelRetry, ModelFallback)):
                    taken = asyncio.get_running_loop().create_future()
                    queue.put_nowait((event, taken))
                    await taken
                else:
                    queue.put_nowait(event)
            queue.put_nowait(done)
        except asyncio.CancelledError:
            raise
        except BaseException as exc:  # handed to the consumer, which decides
            queue.put_nowait(exc)
        finally:
            # Cancelled while waiting for a hand-off, the model's generator is paused at
            # its yield: close it now (its own clean-up runs), not whenever it is collected.
            close = getattr(events, "aclose", None)
            if close is not None:
                with contextlib.suppress(Exception):
                    await close()

    producer = asyncio.ensure_future(produce())
    remove = signal.add_listener(lambda: queue.put_nowait(aborted))
    share = LoopShare()  # a burst of events is handled a few ms at a time (the kernel is shared)
    try:
        while True:
            if queue.empty():
                item = await queue.get()
                share.resumed()
            else:
                await share.pause_if_due()
                item = queue.get_nowait()
            if item is done:
                return
            if item is aborted:
                raise Aborted()
            if isinstance(item, BaseException):
                raise item
            if isinstance(item, tuple):
                event, taken = item
                yield event
                if not taken.done():
                    taken.set_result(None)
                continue
            yield cast(ModelEvent, item)  # the one kind of item left
    finally:
        remove()
        if not producer.done():
            producer.cancel()
            await asyncio.gather(producer, return_exceptions=True)


def completed_blocks(snapshot: MessageSnapshot | None, stopped: list[int]) -> list[ContentBlock]:
    """The blocks of a partial response that the stream finished (tool input parsed)."""
    if not snapshot:
        return []
    content = snapshot.get("content") or []
    return [with_parsed_input(content[i]) for i in sorted(stopped) if i < len(content)]


def finished_part(snapshot: MessageSnapshot | None, stopped: list[int],
                  executor: StreamingToolExecutor | None) -> list[ContentBlock]:
    """What to keep of a response that broke off: the blocks it finished. A call still
    held (the model had not moved on, so its input may be cut short) gets an error
    result instead of running."""
    if executor is not None:
        executor.refuse_held()
    return completed_blocks(snapshot, stopped)


def model_moved_on(event: StreamEvent) -> bool:
    """The model is past every block that has stopped so far: a new block started, or
    the message says it stopped to have tools run."""
    if event.type == "content_block_start":
        return True
    return event.type == "message_delta" and (event.delta or {}).get("stop_reason") == "tool_use"


def restart_error(event: ModelRetry | ModelFallback) -> str:
    return event.error if isinstance(event, ModelRetry) else f"switched to {event.to_model}: {event.error}"


async def wait_before_retry(event: ModelRetry | ModelFallback, signal: AbortSignal) -> None:
    """The back-off the model layer asked for before its retry, cut short by Stop."""
    delay = getattr(event, "delay_s", 0.0) or 0.0
    if delay > 0 and not signal.aborted:
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(signal.event.wait(), timeout=delay)


def with_parsed_input(block: ContentBlock) -> ContentBlock:
    """A ``tool_use`` block with its input as a dict (a model may hand over the JSON text);
    text that is not a JSON object is marked, so the call gets an error, not ``{}``."""
    if not is_tool_use(block):
        return block
    return parsed_call(block)


def parsed_call(block: ToolUseBlock) -> ToolUseBlock:
    """:func:`with_parsed_input` of a block known to be a ``tool_use``."""
    raw: object = block.get("input")
    if isinstance(raw, dict):
        return block
    try:
        parsed = json.loads(raw or "{}") if isinstance(raw, (str, bytes)) or raw is None else None
    except ValueError:
        parsed = None
    if isinstance(parsed, dict):
        return {**block, "input": parsed}
    return {**block, "input": {}, INVALID_INPUT_KEY: raw if isinstance(raw, str) else repr(raw)}
