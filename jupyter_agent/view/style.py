"""The look of everything we draw in a page: colours from JupyterLab's theme variables,
and icons as our own constant SVG.

Every colour is a CSS expression over JupyterLab's variables (``--jp-ui-font-color1``,
``--jp-success-color1``, ...), so it follows the theme, light or dark, and every text
colour meets WCAG AA (4.5:1) in both JupyterLab Light and JupyterLab Dark
(``tests/jupyter/test_contrast_browser.py`` measures it in a page).

A theme's own semantic colours are made for borders and fills, not for text: orange on
white is 2.7:1, and the same variable is 4.7:1 on dark grey. So a coloured text here is
the theme's colour mixed with the theme's strongest text colour (``--jp-ui-font-color0``:
black in a light theme, white in a dark one), which darkens it on light backgrounds and
lightens it on dark ones (:func:`readable`). Backgrounds that mark something (a diff's
added lines, what changed since the last step) are the theme's colour made translucent
over whatever is beneath (:func:`tint`), and the text on them keeps the theme's text
colour. A browser without ``color-mix()`` (before 2023) drops such a declaration, and the
text keeps the theme's own text colour: plainer, still readable.

JupyterLab 4 has no diff colours of its own (no ``--jp-diff-*``; its editor's
``--jp-mirror-editor-*`` colour code, not changes), so a diff is drawn with its success
and error colours as tints.

The icons are constant SVG (``aria-hidden``, coloured ``currentColor``): an emoji shows
as a box where no emoji font is installed. They are written around escaped text, never
built from it (docs/rendering.md). The Markdown transcript and the terminal use text
signs instead (``labels.STATE_ICONS``).
"""

from __future__ import annotations

#: How much of the theme's colour a coloured text keeps (the rest is its strongest text colour).
TEXT_SHARE = 55


def readable(variable: str, share: int = TEXT_SHARE) -> str:
    """A theme colour (``"--jp-success-color1"``) made readable as text on the theme's
    backgrounds (see module docstring)."""
    return f"color-mix(in srgb,var({variable}) {share}%,var(--jp-ui-font-color0))"


def tint(variable: str, share: int = 18) -> str:
    """A theme colour as a translucent background over whatever is beneath."""
    return f"color-mix(in srgb,var({variable}) {share}%,transparent)"


#: Text colours.
TEXT = "var(--jp-ui-font-color1)"
#: Quieter text, still AA on ``--jp-layout-color2`` (``--jp-ui-font-color2`` is 4.4:1 there).
MUTED = "color-mix(in srgb,var(--jp-ui-font-color1) 70%,transparent)"
SUCCESS = readable("--jp-success-color1")
WARN = readable("--jp-warn-color1")
ERROR = readable("--jp-error-color1")
BRAND = readable("--jp-brand-color1")

#: Lines and fills (no text colour: what is drawn on them keeps :data:`TEXT`).
BORDER = "var(--jp-border-color2)"
BORDER_STRONG = "var(--jp-border-color1)"
SUCCESS_LINE = "var(--jp-success-color1)"
WARN_LINE = "var(--jp-warn-color1)"
ERROR_LINE = "var(--jp-error-color1)"
BRAND_LINE = "var(--jp-brand-color1)"
BOX_BG = "var(--jp-layout-color2)"
ADDED_BG = tint("--jp-success-color1")
REMOVED_BG = tint("--jp-error-color1")
CHANGED_BG = tint("--jp-warn-color1", 25)
LIT_BG = tint("--jp-brand-color1")

#: Each tone (``labels.end_tone``): (text colour, line colour, background tint).
TONES = {
    "success": (SUCCESS, SUCCESS_LINE, tint("--jp-success-color1")),
    "warn": (WARN, WARN_LINE, tint("--jp-warn-color1")),
    "error": (ERROR, ERROR_LINE, tint("--jp-error-color1")),
}

#: ipywidgets' coloured buttons are white on the theme's colour: 2.7:1 for a warning in the
#: light theme, 4.1:1 for success. Ours (class ``ja-button``) keep their word colour and get
#: the colour darkened in a light theme, lightened in a dark one (4.5:1 or more in both).
BUTTON_CSS = "".join(
    f".jupyter-button.ja-button.mod-{style}{{background-color:var(--jp-{var}-color1);"
    f"background-color:color-mix(in srgb,var(--jp-{var}-color1) 70%,var(--jp-ui-font-color0))}}"
    for style, var in (("success", "success"), ("info", "info"), ("warning", "warn"),
                       ("danger", "error"), ("primary", "brand")))
#: ipywidgets draws an Accordion's titles in ``--jp-ui-font-color2`` on ``--jp-layout-color2``
#: (4.4:1 light, 4.2:1 dark); ours (class ``ja-accordion``) in the theme's text colour.
ACCORDION_CSS = f".ja-accordion .jupyter-widget-Collapse-header{{color:{TEXT}}}"
#: The stylesheet a widget carries for its buttons and accordions (in one of its HTML children).
STYLE = f"<style>{BUTTON_CSS}{ACCORDION_CSS}</style>"

_SVG = ('<svg class="ja-icon" aria-hidden="true" viewBox="0 0 16 16" width="1em" height="1em" fill="none" '
        'stroke="currentColor" stroke-width="1.6" stroke-linecap="round" stroke-linejoin="round" '
        'style="vertical-align:-0.125em;flex:none">{}</svg>')
_DOT = '<circle cx="{}" cy="{}" r=".6" fill="currentColor" stroke="none"/>'

#: Our icons, by name (constant markup).
ICONS = {name: _SVG.format(body) for name, body in {
    "agent": ('<rect x="2.5" y="5" width="11" height="8.5" rx="2"/><path d="M8 5V2.8"/>'
              + _DOT.format(8, 2.2) + _DOT.format(5.8, 9) + _DOT.format(10.2, 9)),
    "person": '<circle cx="8" cy="5" r="2.8"/><path d="M2.5 14.5c.6-3 2.8-4.5 5.5-4.5s4.9 1.5 5.5 4.5"/>',
    "ask": ('<circle cx="8" cy="8" r="6.5"/><path d="M6.2 6.2a1.9 1.9 0 1 1 2.5 1.8c-.45.2-.7.55-.7 1v.5"/>'
            + _DOT.format(8, 11.6)),
    "running": '<path d="M4.5 1.5h7M4.5 14.5h7M5.5 1.5v2.2L8 8l2.5-4.3V1.5M5.5 14.5v-2.2L8 8l2.5 4.3v2.2"/>',
    "waiting": _DOT.format(3.5, 8) + _DOT.format(8, 8) + _DOT.format(12.5, 8),
    "done": '<path d="M3 8.5l3.2 3.2L13 4.8"/>',
    "error": '<path d="M4 4l8 8M12 4l-8 8"/>',
    "denied": '<circle cx="8" cy="8" r="6.5"/><path d="M3.4 12.6l9.2-9.2"/>',
    "stopped": '<rect x="3.5" y="3.5" width="9" height="9" rx="1" fill="currentColor"/>',
    "not_run": '<path d="M4 8h8"/>',
    "warning": '<path d="M8 1.8L14.8 13.8H1.2z"/><path d="M8 6v3.8"/>' + _DOT.format(8, 11.6),
    "info": '<circle cx="8" cy="8" r="6.5"/><path d="M8 7.2v4.3"/>' + _DOT.format(8, 4.9),
    "thinking": '<path d="M2.5 3h11v7.5h-6l-3 2.8v-2.8h-2z"/>' + _DOT.format(5.5, 6.8) + _DOT.format(8, 6.8)
                + _DOT.format(10.5, 6.8),
    "block": '<rect x="4" y="4" width="8" height="8" rx="1"/>',
    "plan": '<path d="M6 4h8M6 8h8M6 12h8"/>' + _DOT.format(2.8, 4) + _DOT.format(2.8, 8) + _DOT.format(2.8, 12),
    "todo": '<circle cx="8" cy="8" r="5"/>',
    "doing": '<path d="M5.5 3.5l6 4.5-6 4.5z" fill="currentColor"/>',
    "compact": '<path d="M8 1.5v4.5M5.8 3.8L8 6l2.2-2.2M8 14.5V10M5.8 12.2L8 10l2.2 2.2M2.5 8h11"/>',
}.items()}

#: A tool call's state as an icon (``ToolItem.state``).
STATE_SVG = {"input": ICONS["waiting"], "pending": ICONS["waiting"], "approval": ICONS["ask"],
             "running": ICONS["running"], "done": ICONS["done"], "error": ICONS["error"],
             "denied": ICONS["denied"], "stopped": ICONS["stopped"], "not_run": ICONS["not_run"],
             "raised": ICONS["warning"]}
#: A task of the plan by its status (``PlanItem.todos``).
TODO_SVG = {"completed": ICONS["done"], "in_progress": ICONS["doing"], "pending": ICONS["todo"]}
#: A notice's level as an icon.
NOTICE_SVG = {"info": ICONS["info"], "warning": ICONS["warning"], "error": ICONS["error"]}
