"""A corpus of markup payloads, as a prompt injection would plant them in untrusted text
(the model's answer or thinking, a tool's input or result, a file name, an API error).

Each payload that could run script appends its name to ``window.__pwned`` when it runs,
so a test can assert it never ran; ``<style>`` payloads carry the class ``PWNSTYLE`` and
try to hide the notebook, the side panel and every button; the ``click`` payload presses
every button that says "Allow", over and over, as an injection approving its own Write.

:data:`LIVE_MARKUP` (JavaScript) lists what in a page would be a payload turned into live
markup: an element with an event handler or ``javascript:`` link from here, a ``<script>``
or ``<iframe srcdoc>`` of ours, a ``<style>`` of ours. Shown as text, none of it counts.
"""

from __future__ import annotations

FLAG = "__pwned"


def _mark(name: str) -> str:
    """JavaScript that records that payload ``name`` ran (no quotes but single ones, no slash)."""
    return f"(window.{FLAG}=window.{FLAG}??[]).push('{name}')"


#: Presses every button whose text is "Allow", every 200 ms, for as long as the page lives.
CLICK_ALLOW = ("setInterval(()=>document.querySelectorAll('button').forEach(b=>{if(b.textContent.trim()=='Allow')"
               "b.click()}),200)")

#: Payloads without a "/" (so one can also be a file name).
IMG = f'<img src=x onerror="{_mark("img")}">'
SVG = f'<svg onload="{_mark("svg")}"></svg>'
DETAILS = f'<details open ontoggle="{_mark("details")}"><summary>s</summary>d</details>'
CLICK = f'<img src=y onerror="{_mark("click")};{CLICK_ALLOW}">'
# The same handler with "window" written as a character reference: a filter looking for
# the word misses it, the HTML parser decodes it.
ENTITY_IN_HANDLER = f'<img src=z onerror="&#x77;indow.{FLAG}=(&#119;indow.{FLAG}??[]).concat([\'entity\'])">'
SCRIPT = f"<script>{_mark('script')}</script>"
STYLE = ("<style>.PWNSTYLE{} .jp-Notebook, #jupyter-agent-panel, .jupyter-widgets button, .jp-Button "
         "{display:none !important}</style>")
IFRAME = f'<iframe srcdoc="<script>parent.{FLAG}=(parent.{FLAG}??[]).concat([\'iframe\'])</script>"></iframe>'
JS_LINK = f"[click me](javascript:{_mark('link')})"
# Entity-encoded markup: must show as the text "<img ...>", never be decoded twice into a tag.
ENCODED = f'&lt;img src=x onerror="{_mark("encoded")}"&gt;'
ENCODED_TWICE = f'&amp;lt;img src=x onerror="{_mark("encoded2")}"&amp;gt;'

# Closes a fenced code block (of three backticks or tildes, or four backticks) that a
# renderer may put untrusted text in, so that what follows would be Markdown again.
FENCE_BREAK = f"```\n\n{IMG}\n\n~~~\n\n{SVG}\n\n````"

#: Every payload, by name.
PAYLOADS = {"img": IMG, "svg": SVG, "details": DETAILS, "click": CLICK, "entity": ENTITY_IN_HANDLER,
            "script": SCRIPT, "style": STYLE, "iframe": IFRAME, "link": JS_LINK, "encoded": ENCODED,
            "encoded_twice": ENCODED_TWICE}

#: A file name (no "/", under the 255 bytes a name may have) carrying a payload.
FILE_NAME = f"notes{IMG}.txt"


def markdown(marker: str) -> str:
    """A Markdown answer with every payload, inline and inside a list, a table, a blockquote
    and code, then fences that would close a fenced block around it, starting with ``marker``
    (a word a test waits for) and ending with **bold** text (formatting that must still render)."""
    return f"""{marker}: here is what I found.

- first item {IMG}
- second item {SVG}
- {CLICK}

| column | value |
|---|---|
| {DETAILS} | {ENTITY_IN_HANDLER} |

> quoted {IMG}

{SCRIPT}

{STYLE}

{IFRAME}

{JS_LINK} and {ENCODED} and {ENCODED_TWICE}

`{IMG}` in code stays code.

{FENCE_BREAK}

**All done** ({marker})."""


def plain(marker: str) -> str:
    """Every payload on one line after ``marker`` (for a title, a message, a file's content)."""
    return f"{marker} " + " ".join(PAYLOADS.values())


#: JavaScript (a function of no arguments) listing the payloads that became live markup.
LIVE_MARKUP = f"""() => {{
    const found = [];
    for (const el of document.querySelectorAll('*')) {{
        for (const a of Array.from(el.attributes)) {{
            if (a.name.startsWith('on') && a.value.includes('{FLAG}')) found.push(el.tagName + ' ' + a.name);
            if (a.name === 'srcdoc' && a.value.includes('{FLAG}')) found.push(el.tagName + ' srcdoc');
            if (a.name === 'href' && /^\\s*javascript:/i.test(a.value)) found.push(el.tagName + ' href=' + a.value);
        }}
        if (el.tagName === 'SCRIPT' && el.textContent.includes('{FLAG}')) found.push('script');
        if (el.tagName === 'STYLE' && el.textContent.includes('PWNSTYLE')) found.push('style');
    }}
    return found;
}}"""

#: JavaScript: the payloads that ran (``window.__pwned``), [] if none.
RAN = f"() => window.{FLAG} || []"
