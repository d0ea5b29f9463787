"""Servers that speak the Messages API without all of it: Ollama, llama.cpp, vLLM, LiteLLM.

Such a server may refuse a request that uses prompt caching (``cache_control``),
extended thinking, ``tool_choice`` or image input (HTTP 400 naming it), or accept it and
report no caching in ``usage``. :class:`EndpointFeatures` learns this once per model: a
request refused for a feature is sent again at once without it, and every later request
leaves it out, with one :class:`~jupyter_agent.loop.events.Notice` of kind
``endpoint_without_<feature>`` (a :class:`Feature` value) instead of an error on every turn.
"""

from __future__ import annotations

import logging
from enum import Enum
from typing import Any

from ..loop.events import Notice

log = logging.getLogger(__name__)

__all__ = ["Feature", "EndpointFeatures", "notice_kind", "IMAGE_PLACEHOLDER"]

#: What an image becomes for an endpoint that takes none (the model is told it was there).
IMAGE_PLACEHOLDER = "[An image was here; this endpoint does not accept images, so it was not sent.]"


class Feature(str, Enum):
    """A part of the Messages API an endpoint may lack."""

    PROMPT_CACHING = "prompt_caching"
    THINKING = "thinking"
    TOOL_CHOICE = "tool_choice"
    IMAGES = "images"

    @property
    def keyword(self) -> str:
        """The field a server's 400 message names when it refuses this feature."""
        return {"prompt_caching": "cache_control", "images": "image"}.get(self.value, self.value)


_EXPLAIN = {
    Feature.PROMPT_CACHING: "does not cache prompts: every request is sent, and counted, in full",
    Feature.THINKING: "does not support extended thinking: requests go without it",
    Feature.TOOL_CHOICE: "does not support tool_choice: the model chooses its tools freely",
    Feature.IMAGES: "does not accept images: images are replaced by a note saying one was there",
}


def notice_kind(feature: Feature) -> str:
    """``Notice.kind`` of "this endpoint lacks ``feature``"."""
    return f"endpoint_without_{feature.value}"


def _blocks(params: dict[str, Any]) -> list[Any]:
    system = params.get("system")
    out: list[Any] = list(system) if isinstance(system, list) else []
    out += list(params.get("tools") or [])
    for m in params.get("messages") or []:
        content = m.get("content") if isinstance(m, dict) else None
        if isinstance(content, list):
            out += content
            out += [r for b in content if isinstance(b, dict) and isinstance(b.get("content"), list)
                    for r in b["content"]]
    return [b for b in out if isinstance(b, dict)]


def uses(params: dict[str, Any], feature: Feature) -> bool:
    """Whether request ``params`` (``client.messages.create`` keywords) use ``feature``."""
    extra = params.get("extra_body") or {}
    if feature in (Feature.THINKING, Feature.TOOL_CHOICE):
        return feature.value in params or feature.value in extra
    if feature is Feature.IMAGES:
        return any(b.get("type") == "image" for b in _blocks(params))
    return any("cache_control" in b for b in _blocks(params))


def _without_images(content: Any) -> Any:
    if not isinstance(content, list):
        return content
    out = []
    for b in content:
        if isinstance(b, dict) and b.get("type") == "image":
            out.append({"type": "text", "text": IMAGE_PLACEHOLDER})
        elif isinstance(b, dict) and isinstance(b.get("content"), list):
            out.append({**b, "content": _without_images(b["content"])})
        else:
            out.append(b)
    return out


def _uncached(blocks: Any) -> Any:
    if not isinstance(blocks, list):
        return blocks
    return [{k: v for k, v in b.items() if k != "cache_control"} if isinstance(b, dict) and "cache_control" in b
            else b for b in blocks]


class EndpointFeatures:
    """What one model's endpoint turned out to lack, and the notices said about it."""

    def __init__(self) -> None:
        self.missing: set[Feature] = set()

    def adapt(self, params: dict[str, Any]) -> dict[str, Any]:
        """``params`` without what the endpoint lacks (a shallow copy; the caller's history
        is never changed)."""
        if not self.missing:
            return params
        out = dict(params)
        extra = dict(out.get("extra_body") or {})
        for feature in (Feature.THINKING, Feature.TOOL_CHOICE):
            if feature in self.missing:
                out.pop(feature.value, None)
                extra.pop(feature.value, None)
        if "extra_body" in out:
            out["extra_body"] = extra
        messages = list(out.get("messages") or [])
        if Feature.IMAGES in self.missing:
            messages = [{**m, "content": _without_images(m.get("content"))} for m in messages]
        if Feature.PROMPT_CACHING in self.missing:
            messages = [{**m, "content": _uncached(m.get("content"))} for m in messages]
            for key in ("system", "tools"):
                if key in out:
                    out[key] = _uncached(out[key])
        out["messages"] = messages
        return out

    def refused(self, kind: str, message: str, params: dict[str, Any]) -> Feature | None:
        """The feature a 400 (``kind`` ``invalid_request``) refused, now marked missing, or
        None when the refusal is about something else."""
        if kind != "invalid_request":
            return None
        text = message.lower()
        for feature in Feature:
            if feature not in self.missing and feature.keyword in text and uses(params, feature):
                self.missing.add(feature)
                log.info("the endpoint refused %s; leaving it out from now on: %s", feature.value, message[:200])
                return feature
        return None

    def observe_usage(self, usage: dict[str, Any] | None, params: dict[str, Any]) -> Feature | None:
        """After a response: prompt caching is missing when the request asked for it and the
        usage has no cache fields at all (the Anthropic API always sends both)."""
        if Feature.PROMPT_CACHING in self.missing or not uses(params, Feature.PROMPT_CACHING):
            return None
        usage = usage or {}
        if "cache_creation_input_tokens" in usage or "cache_read_input_tokens" in usage:
            return None
        self.missing.add(Feature.PROMPT_CACHING)
        return Feature.PROMPT_CACHING

    @staticmethod
    def notice(feature: Feature) -> Notice:
        """The one notice about ``feature``."""
        return Notice(notice_kind(feature), f"This endpoint {_EXPLAIN[feature]}.")
