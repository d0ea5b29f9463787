"""Every text we draw is readable in JupyterLab Light and JupyterLab Dark (WCAG AA).

One page shows each of our surfaces: a finished ``%%agent`` run (its transcript), a run
waiting on an approval card with a diff (header, tool cards, Stop), a lesson's stepper
(mid-run with what changed highlighted, then ended ``completed``) and its timeline,
``chat()``, the **Fix with agent** / **Explain** buttons under an error, and the side
panel. In each theme every element of our outputs and of the
panel that holds text is measured: its computed colour against the background it is
drawn on (the element's and its ancestors' backgrounds, alpha-composited, and any
opacity on the way), and the test lists each one below 4.5:1 (3:1 for large text).

Screenshots: contrast_light.png and contrast_dark.png (see ``lab.py``).
"""

from __future__ import annotations

import pytest

from jupyter_agent.testing import response, text, thinking, tool_use

from .lab import HAVE_BROWSER, menu, require_browser, run_and_wait, run_cell, screenshot, wait_for_end, \
    wait_theme, write_notebook

require_browser()
pytestmark = pytest.mark.skipif(not HAVE_BROWSER, reason="needs jupyterlab, playwright and Debian's chromium")

PANEL = "#jupyter-agent-panel"

STEPPER = """from jupyter_agent.lessons import Lesson, Stepper
from jupyter_agent.lessons.widget import StepperView
from jupyter_agent.testing import response, text, tool_use
lesson = Lesson("contrast")
notes = lesson.write("q.txt", "value = 1\\n")
script = [response(text("I'll read it."), tool_use("Read", {"file_path": str(notes)})),
          response(text("It says value = 1."))]
view = StepperView(Stepper.start("What is the value?", model=lesson.model(script), cwd=lesson.dir))
view"""
# Two steps on, the static copy of that snapshot shows what changed, highlighted; then the
# run's end (completed) and its timeline.
STEPS = """await view.step()
display(await view.step())
await view.run_to_end()
view.timeline()"""
CHAT = "import jupyter_agent; jupyter_agent.chat()"

#: Measures every visible text of ours in the page (see module docstring). Returns the
#: elements below AA as {text, where, fg, bg, ratio, need}.
MEASURE = r"""(selectors) => {
  const parse = s => {
    let m = s.match(/^rgba?\(([^)]*)\)$/);
    if (m) { const p = m[1].split(/[\s,\/]+/).filter(Boolean).map(Number);
             return [p[0], p[1], p[2], p.length > 3 ? p[3] : 1]; }
    m = s.match(/^color\(srgb ([^)]*)\)$/);
    if (m) { const p = m[1].split(/[\s\/]+/).filter(Boolean).map(Number);
             return [p[0] * 255, p[1] * 255, p[2] * 255, p.length > 3 ? p[3] : 1]; }
    return null;
  };
  const over = (top, under) => {  // top (with alpha) composited over an opaque colour
    const a = top[3];
    return [0, 1, 2].map(i => top[i] * a + under[i] * (1 - a)).concat([1]);
  };
  const lum = c => {
    const f = v => { v /= 255; return v <= 0.03928 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4); };
    return 0.2126 * f(c[0]) + 0.7152 * f(c[1]) + 0.0722 * f(c[2]);
  };
  const ratio = (a, b) => { const [x, y] = [lum(a), lum(b)].sort((p, q) => q - p); return (x + 0.05) / (y + 0.05); };
  const background = el => {
    const layers = [];
    let opacity = 1;
    for (let e = el; e; e = e.parentElement) {
      const cs = getComputedStyle(e);
      opacity *= parseFloat(cs.opacity);
      const c = parse(cs.backgroundColor);
      if (c && c[3] > 0) { layers.push(c); if (c[3] >= 1) break; }
    }
    let bg = [255, 255, 255, 1];
    for (let i = layers.length - 1; i >= 0; i--) bg = over(layers[i], bg);
    return [bg, opacity];
  };
  const where = el => {
    const parts = [];
    for (let e = el; e && parts.length < 4; e = e.parentElement) {
      const cls = Array.from(e.classList).filter(c => /^(ja|jp-Agent|jupyter-|widget|jp-Rendered)/.test(c));
      parts.push(e.tagName.toLowerCase() + (cls.length ? '.' + cls.slice(0, 2).join('.') : ''));
    }
    return parts.join(' < ');
  };
  const bad = [], seen = new Set();
  let measured = 0;
  for (const root of selectors.flatMap(s => Array.from(document.querySelectorAll(s)))) {
    for (const el of [root, ...root.querySelectorAll('*')]) {
      if (seen.has(el)) continue;
      seen.add(el);
      if (el.closest('svg, style, script, option')) continue;
      const control = /^(INPUT|TEXTAREA|SELECT)$/.test(el.tagName);
      const own = control ? (el.value || '') : Array.from(el.childNodes)
        .filter(n => n.nodeType === 3).map(n => n.textContent).join('').trim();
      if (!own.trim()) continue;
      const cs = getComputedStyle(el);
      if (cs.visibility !== 'visible' || !el.getClientRects().length || el.closest(':disabled, [disabled]')) continue;
      const [bg, opacity] = background(el);
      const fg = parse(cs.color);
      if (!fg) {
        bad.push({text: own.slice(0, 60), where: where(el), fg: cs.color, bg: '', ratio: 0, need: 4.5});
        continue;
      }
      const shown = over([fg[0], fg[1], fg[2], fg[3] * opacity], bg);
      const size = parseFloat(cs.fontSize), weight = parseInt(cs.fontWeight, 10);
      const need = size >= 24 || (size >= 18.66 && weight >= 700) ? 3 : 4.5;
      const r = ratio(shown, bg);
      measured++;
      if (r < need) bad.push({text: own.slice(0, 60), where: where(el), fg: cs.color,
                              bg: 'rgb(' + bg.slice(0, 3).map(Math.round).join(',') + ')',
                              ratio: Math.round(r * 100) / 100, need});
    }
  }
  return {measured, bad};
}"""

ERROR_ACTIONS = ".jp-AgentErrorActions"  # Fix with agent / Explain, under an error output
# (the traceback above those buttons is JupyterLab's own drawing, not measured here)
SURFACES = ['.jp-Notebook .jp-OutputArea-output:not([data-mime-type="application/vnd.jupyter.stderr"])',
            ERROR_ACTIONS, PANEL]


def _report(theme: str, result: dict) -> list[str]:
    return [f"{theme}: {b['ratio']}:1 < {b['need']}:1  {b['text']!r}  ({b['fg']} on {b['bg']}) in {b['where']}"
            for b in result["bad"]]


@pytest.mark.timeout(400)  # ~30 s on a quiet machine; CI's 2 loaded cores take longer
def test_every_text_of_ours_is_aa_in_light_and_dark(lab, page_of, script):
    notes = lab.root / "notes.txt"
    notes.write_text("x = 1\ny = 2\n")
    write_notebook(lab.root / "look.ipynb", ["%load_ext jupyter_agent", "%%agent\nRead notes.txt",
                                             STEPPER, STEPS, CHAT, "%%agent\nSet x to 3 in notes.txt",
                                             "mean = total / count  # a NameError"])
    script(
        response(thinking("Read it first."), text("I'll **read** `notes.txt`."),
                 tool_use("Read", {"file_path": str(notes)})),
        response(text("It sets `x = 1` and `y = 2`.")),
        response(text("Changing it."), tool_use("Edit", {"file_path": str(notes), "old_string": "x = 1",
                                                         "new_string": "x = 3"})),
    )
    page = page_of("look.ipynb", width=1400, height=1200)
    run_and_wait(page, 0)
    run_cell(page, 1)
    wait_for_end(page)
    for index in (2, 3, 4):
        run_and_wait(page, index, timeout=120)
    page.locator(".jp-Cell >> nth=3").locator("img").wait_for()  # the timeline
    run_cell(page, 6)
    page.locator(".jp-Cell >> nth=6").locator(ERROR_ACTIONS).get_by_role("button", name="Explain").wait_for()
    run_cell(page, 5)
    page.locator(".jp-Cell >> nth=5").locator("button", has_text="Always allow").wait_for()
    page.click(f"li[data-id='{PANEL[1:]}']")
    page.locator(PANEL).get_by_role("button", name="Allow", exact=True).wait_for()
    problems = []
    for theme, light in (("light", True), ("dark", False)):
        if not light:
            menu(page, "Settings", "Theme", "JupyterLab Dark")
            wait_theme(page, light=False)
        assert page.locator(ERROR_ACTIONS).count() == 1  # in the page, to be measured
        result = page.evaluate(MEASURE, SURFACES)
        screenshot(page, f"contrast_{theme}")
        assert result["measured"] > 100, result  # the surfaces were there to measure
        problems += _report(theme, result)
    assert not problems, "text below WCAG AA:\n" + "\n".join(problems)
