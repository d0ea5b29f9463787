"""A plain output beside each live widget, for when its kernel is gone.

JupyterLab renders a widget output from its kernel's widget model. Once the kernel is
restarted or gone (a reopened notebook), the view shows broken-link icons, or "Error
displaying widget: model not found", and JupyterLab renders no other MIME type of that
output (docs/design.md, "Output that survives"). The kernel cannot fix that output afterwards: a restart from
JupyterLab drops the page's routes for the old kernel's display updates before the
kernel hears of it (measured: an ``update_display`` sent from ``do_shutdown`` never
reaches the page).

So every live widget the front displays is followed by a second output, its
*fallback*: the Markdown transcript so far, kept up to date with ``update_display``.
The fallback carries a small stylesheet (``:has()`` selectors, Chromium ≥ 105,
Firefox ≥ 121, Safari ≥ 15.4) that

* hides the fallback while its widget is alive (the widget's view carries the class
  ``ja-live-<key>``, and ipywidgets marks a dead view ``jupyter-widgets-disconnected``), and
* hides the widget's output (the output just before the fallback) whenever it does not
  hold the live view: dead, "Loading widget..." forever, or "model not found".

Live, only the widget shows; after a restart or a reopen, only the transcript. Where
styles are not applied (an untrusted notebook's sanitized Markdown, GitHub), both show:
the safe side. When the run ends, the widget output is replaced by the transcript and
the fallback is emptied.

A display id is not saved with the notebook, so a page that did not show the output
itself (reloaded, another tab, another person's view) is not sent its updates by
JupyterLab. Each output therefore names its display id in its metadata
(:func:`display_metadata`), and the labextension (``labextension/src/displays.ts``)
applies every update of ours to the outputs that carry it: those views follow the run to
its end too. The fallback's words are true in all of them (it is not only seen once the
kernel is gone: ``UNFINISHED_ELSEWHERE`` in ``view/transcript.py``). While the run goes
on, its metadata also names the ending that says the kernel was lost (``if_lost``): a page
that sees its kernel restart or die swaps it in, where the kernel could not.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable, Mapping

log = logging.getLogger(__name__)


#: The key in an output's metadata under which it names its display id.
METADATA_KEY = "jupyter_agent"


def display_metadata(display_id: str) -> dict[str, dict[str, object]]:
    """An output's metadata naming its display id (kept in the saved notebook, unlike the
    display id itself), so that any view of the notebook can apply the output's updates."""
    return {METADATA_KEY: {"display_id": display_id}}


def live_class(key: str) -> str:
    """The DOM class the live widget's view carries."""
    return f"ja-live-{key}"


def style(key: str) -> str:
    """The stylesheet of one fallback (see module docstring)."""
    live, mark = f".ja-live-{key}", f".ja-fallback-{key}"
    child = ".jp-OutputArea-child"
    return (
        "<style>"
        f"{child}:has({live}:not(.jupyter-widgets-disconnected)) ~ {child}:has({mark}){{display:none}}"
        f"{child}:has(+ {child} {mark}):not(:has({live}:not(.jupyter-widgets-disconnected))){{display:none}}"
        "</style>"
    )


def lead_style(key: str) -> str:
    """Markup for the end of an output whose *next* output holds a widget whose view
    carries ``live_class(key)`` (a run's Undo button after its transcript): that next
    output is hidden whenever it does not hold the live view (a restarted kernel, a
    reopened notebook), instead of showing "model not found"."""
    live, mark = f".ja-live-{key}", f"ja-lead-{key}"
    child = ".jp-OutputArea-child"
    return (f"<style>{child}:has(.{mark}) + {child}:not(:has({live}:not(.jupyter-widgets-disconnected)))"
            f"{{display:none}}</style><span class=\"{mark}\"></span>")


class Fallback:
    """The fallback output of one widget: ``show()`` once after the widget's display,
    ``update()`` as the content changes, ``clear()`` when the widget's output itself
    has become static."""

    def __init__(self, markdown: Callable[[], str], plain: Callable[[], str] | None = None,
                 if_lost: tuple[str, str] | None = None, change: Callable[[str], str] | None = None) -> None:
        self.key = uuid.uuid4().hex[:12]
        self.display_id = f"jupyter-agent-fallback-{self.key}"
        self._markdown = markdown
        self._plain = plain or (lambda: "")
        #: (how the Markdown ends while the run goes on, how it ends once the kernel is gone):
        #: a page that sees its kernel restart or die swaps the one for the other
        #: (labextension/src/displays.ts), as the kernel cannot tell it then
        self._if_lost = if_lost
        #: what of the Markdown counts as a change worth an update (all of it unless given):
        #: each update rewrites the notebook in every view of it (with collaboration, its
        #: shared document and a save), so a run's ticking clock alone is not one
        self._change = change or (lambda md: md)
        self.shown = False
        self.cleared = False
        self._sent: Mapping[str, object] | None = None
        self._sent_change: str | None = None

    def bundle(self, md: str | None = None) -> dict[str, str]:
        md = self._markdown() if md is None else md
        return {"text/markdown": f'{style(self.key)}<span class="ja-fallback-{self.key}"></span>\n\n{md}',
                "text/plain": self._plain()}

    def metadata(self, bundle: Mapping[str, object]) -> dict[str, dict[str, object]]:
        """The output's metadata: its display id and, while the Markdown has the ending of a
        run still going, the ending that replaces it if the page sees the kernel go."""
        metadata = display_metadata(self.display_id)
        if self._if_lost is not None and str(bundle.get("text/markdown", "")).endswith(self._if_lost[0]):
            metadata[METADATA_KEY]["if_lost"] = {"ending": self._if_lost[0], "lost": self._if_lost[1]}
        return metadata

    def show(self) -> None:
        from IPython.display import display

        self.shown = True
        md = self._markdown()
        self._sent, self._sent_change = self.bundle(md), self._change(md)
        display(self._sent, raw=True, metadata=self.metadata(self._sent), display_id=self.display_id)

    def output(self) -> dict[str, object] | None:
        """The output as last sent (nbformat JSON), or None before it was shown."""
        if self._sent is None:
            return None
        return {"output_type": "display_data", "data": self._sent, "metadata": self.metadata(self._sent)}

    def update(self) -> None:
        if self.shown and not self.cleared:
            md = self._markdown()
            change = self._change(md)
            if change != self._sent_change:  # (nothing new: no message)
                self._sent_change = change
                self._send(self.bundle(md))

    def clear(self) -> None:
        """Nothing to fall back to any more (the widget's output is static now)."""
        if self.shown and not self.cleared:
            self.cleared = True
            self._send({"text/plain": ""})

    def replace_with(self, bundle: Mapping[str, object]) -> None:
        """Nothing to fall back to any more: the output shows ``bundle`` from now on."""
        if self.shown and not self.cleared:
            self.cleared = True
            self._send(bundle)

    def _send(self, bundle: Mapping[str, object]) -> None:
        from IPython.display import update_display

        self._sent = bundle
        try:
            update_display(bundle, raw=True, metadata=self.metadata(bundle), display_id=self.display_id)
        except Exception:  # no frontend (plain Python)
            log.debug("could not update the fallback display", exc_info=True)
