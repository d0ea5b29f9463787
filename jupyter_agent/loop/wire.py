"""The Messages API's shapes on the wire, as the loop reads and writes them.

TypedDicts mirroring the API's request params (as the anthropic SDK's ``types/*_param.py``
do), so the loop's messages and blocks are typed without importing ``anthropic``: they
are plain dicts at run time, sent and stored as they are.

A stream may hold block types not listed here (``server_tool_use``, compaction and
context-management blocks...): they pass through the history unchanged, as
:class:`OtherBlock`. Read a block's kind with the ``is_*`` guards, which narrow the type.
"""

from __future__ import annotations

from typing import Any, Literal, NotRequired, TypedDict, TypeGuard


__all__ = [
    "JSONObject", "MediaSource", "ToolOutputContent", "CacheControl", "TextBlock", "ToolUseBlock", "ToolResultBlock",
    "ToolResultContent",
    "ThinkingBlock", "RedactedThinkingBlock", "ImageBlock", "DocumentBlock", "OtherBlock", "ContentBlock",
    "Message", "Role", "SystemBlock", "ToolDefinition", "ThinkingConfig", "UsageRecord", "MessageSnapshot",
    "is_text", "is_tool_use", "is_tool_result", "blocks_of",
]

#: A JSON object of no fixed shape: a tool's input, a delta, a source's fields.
JSONObject = dict[str, Any]

Role = Literal["user", "assistant"]


class CacheControl(TypedDict):
    """A prompt-caching marker (the model adds these on its own copy of the request)."""

    type: Literal["ephemeral"]
    ttl: NotRequired[str]


class TextBlock(TypedDict):
    """``{"type": "text", "text": ...}``."""

    type: Literal["text"]
    text: str
    citations: NotRequired[list[JSONObject]]
    cache_control: NotRequired[CacheControl]


class MediaSource(TypedDict, total=False):
    """Where an image's or a document's bytes are: ``{"type": "base64", "media_type",
    "data"}``, ``{"type": "url", "url"}``, a text document's ``data``..."""

    type: str
    media_type: str
    data: str
    url: str
    file_id: str


class ImageBlock(TypedDict):
    """An image, from its ``source``."""

    type: Literal["image"]
    source: MediaSource
    cache_control: NotRequired[CacheControl]


class DocumentBlock(TypedDict):
    """A document (a PDF, plain text) with its ``source``."""

    type: Literal["document"]
    source: MediaSource
    title: NotRequired[str]
    context: NotRequired[str]
    citations: NotRequired[JSONObject]
    cache_control: NotRequired[CacheControl]


class ToolUseBlock(TypedDict):
    """A call the model asks for. ``invalid_input_json`` is the loop's own mark (the input
    as streamed was not a JSON object; see ``messages.INVALID_INPUT_KEY``): never sent."""

    type: Literal["tool_use"]
    id: str
    name: str
    input: JSONObject
    cache_control: NotRequired[CacheControl]
    invalid_input_json: NotRequired[str]


#: What a tool hands back: text, or the API's text and image blocks as the tool built them
#: (plain dicts; ``messages.tool_result_block`` takes them as the API's blocks).
ToolOutputContent = str | list[JSONObject]

#: What a ``tool_result`` may hold: text, or text, image and document blocks.
ToolResultContent = str | list["TextBlock | ImageBlock | DocumentBlock"]


class ToolResultBlock(TypedDict):
    """The answer to one ``tool_use``, paired by ``tool_use_id``; ``is_error`` only when true."""

    type: Literal["tool_result"]
    tool_use_id: str
    content: NotRequired[ToolResultContent]
    is_error: NotRequired[bool]
    cache_control: NotRequired[CacheControl]


class ThinkingBlock(TypedDict):
    """Extended thinking, sent back unchanged (its ``signature`` is checked by the API)."""

    type: Literal["thinking"]
    thinking: str
    signature: str


class RedactedThinkingBlock(TypedDict):
    """Thinking the API encrypted; sent back unchanged."""

    type: Literal["redacted_thinking"]
    data: str


class OtherBlock(TypedDict, total=False):
    """A block of a type the loop does not read (``server_tool_use``...): kept as it came."""

    type: str
    id: str
    name: str
    input: JSONObject
    content: object


#: A block of a message's content, of whichever type.
ContentBlock = (TextBlock | ToolUseBlock | ToolResultBlock | ThinkingBlock | RedactedThinkingBlock | ImageBlock
                | DocumentBlock | OtherBlock)


class Message(TypedDict):
    """One message of the history (the API's ``MessageParam``): a string, or blocks."""

    role: Role
    content: str | list[ContentBlock]


class SystemBlock(TypedDict):
    """One text block of the system prompt."""

    type: Literal["text"]
    text: str
    cache_control: NotRequired[CacheControl]


class ToolDefinition(TypedDict):
    """A tool as the model sees it: name, description and the JSON schema of its input."""

    name: str
    description: str
    input_schema: JSONObject
    cache_control: NotRequired[CacheControl]


class ThinkingConfig(TypedDict):
    """``{"type": "enabled", "budget_tokens": N}`` (or ``{"type": "disabled"}``)."""

    type: Literal["enabled", "disabled", "adaptive"]
    budget_tokens: NotRequired[int]


class UsageRecord(TypedDict, total=False):
    """A response's ``usage`` as the API reports it (every field may be missing or null)."""

    input_tokens: int | None
    output_tokens: int | None
    cache_creation_input_tokens: int | None
    cache_read_input_tokens: int | None
    server_tool_use: JSONObject | None


class MessageSnapshot(TypedDict, total=False):
    """The assistant message accumulated so far from a stream (a live dict that grows)."""

    id: str
    type: str
    role: Role
    model: str
    content: list[ContentBlock]
    stop_reason: str | None
    stop_sequence: str | None
    usage: UsageRecord


def is_text(block: ContentBlock) -> TypeGuard[TextBlock]:
    """Is ``block`` a ``text`` block?"""
    return block.get("type") == "text"


def is_tool_use(block: ContentBlock) -> TypeGuard[ToolUseBlock]:
    """Is ``block`` a ``tool_use`` block?"""
    return block.get("type") == "tool_use"


def is_tool_result(block: ContentBlock) -> TypeGuard[ToolResultBlock]:
    """Is ``block`` a ``tool_result`` block?"""
    return block.get("type") == "tool_result"


def blocks_of(message: Message | MessageSnapshot) -> list[ContentBlock]:
    """A message's content as a list of blocks (a plain string becomes one text block)."""
    content = message.get("content")
    if isinstance(content, str):
        return [TextBlock(type="text", text=content)]
    return list(content or [])
