"""The side panel in real JupyterLab in real Chromium, with the fake Messages API as the
model: type a prompt in the panel, watch the answer stream, approve the edit and the run
there, and see the new cell run in the page, in the user's kernel. Switching notebooks
switches the kernel; a kernel without the extension gets a one-line hint.

Screenshots (light and dark theme) go to tests/output/screenshots/ (see ``lab.py``).
"""

from __future__ import annotations

import pytest

from jupyter_agent.testing import response, text, thinking, tool_use

from .lab import HAVE_BROWSER, cell, cell_sources, menu, require_browser, restarted, run_and_wait, \
    screenshot, wait_cell_count, wait_theme, write_notebook

require_browser()
pytestmark = pytest.mark.skipif(not HAVE_BROWSER, reason="needs jupyterlab, playwright and Debian's chromium")

PANEL = "#jupyter-agent-panel"
#: The model's plan (TodoWrite): its text is the model's, shown as text.
PLAN = [{"content": "Add a cell that prints <x + 1>", "status": "in_progress", "activeForm": "Adding the cell"},
        {"content": "Run it", "status": "pending", "activeForm": "Running it"}]
HINT = "Run %load_ext jupyter_agent in this notebook"


def test_side_panel_round_trip(lab, page_of, script, api):
    nb = lab.root / "agent.ipynb"
    write_notebook(nb, ["x = 41", "%load_ext jupyter_agent"], ids=["setx", "load"])
    write_notebook(lab.root / "plain.ipynb", ["1 + 1"])
    script(
        response(thinking("The user wants x + 1 printed."), text("I'll **add** a cell that prints `x + 1`."),
                 tool_use("TodoWrite", {"todos": PLAN}), tool_use("Read", {"file_path": str(nb)}), delay_s=0.01),
        response(tool_use("NotebookEdit", {"notebook_path": str(nb), "cell_id": "load", "new_source": "print(x + 1)",
                                           "cell_type": "code", "edit_mode": "insert"})),
        response(tool_use("TodoWrite", {"todos": [{**PLAN[0], "status": "completed"},
                                                  {**PLAN[1], "status": "in_progress"}]}),
                 tool_use("NotebookRun", {"notebook_path": str(nb), "cell_id": "cell-2"})),
        response(text("Done: the new cell printed *42*."), delay_s=0.01),
    )
    page = page_of("agent.ipynb")
    try:
        page.click(f"li[data-id='{PANEL[1:]}']")  # the sidebar tab opens the panel
        panel = page.locator(PANEL)
        panel.locator(".jp-AgentPanel-hintBox", has_text=HINT).wait_for(timeout=30000)  # not loaded yet
        run_and_wait(page, 0)
        run_and_wait(page, 1)
        panel.locator(".jp-AgentPanel-empty").wait_for(timeout=30000)  # connected once the cell ran
        assert panel.locator(".jp-AgentPanel-mode").input_value() == "default"

        panel.locator(".jp-AgentPanel-input").fill("Add a cell that prints x+1 and run it")
        panel.locator(".jp-AgentPanel-input").press("Enter")
        approval = panel.locator(".jp-AgentPanel-approval")
        approval.wait_for(timeout=30000)
        assert "print(x + 1)" in approval.inner_text() and len(cell_sources(page)) == 3  # nothing before Allow
        # (3: Shift+Enter on the last cell added an empty one)
        assert "Add a cell that prints x+1" in panel.locator(".jp-AgentPanel-prompt").inner_text()
        assert panel.locator(".jp-AgentPanel-text strong", has_text="add").count() == 1  # Markdown rendered
        assert panel.locator(".jp-AgentPanel-thinking details").count() == 1  # folded
        assert panel.locator(".jp-AgentPanel-state-done[data-tool='Read']").count() == 1
        assert panel.locator(".jp-AgentPanel-state-approval[data-tool='NotebookEdit']").count() == 1
        screenshot(page, "panel_approval_light")
        approval.get_by_role("button", name="Allow", exact=True).click()
        wait_cell_count(page, 4)
        assert cell_sources(page)[2] == "print(x + 1)"  # the edit is in the page, live
        approval = panel.locator(".jp-AgentPanel-approval", has_text="NotebookRun")
        approval.wait_for(timeout=30000)
        approval.get_by_role("button", name="Allow", exact=True).click()
        cell(page, 2).locator(".jp-OutputArea-output", has_text="42").wait_for(timeout=30000)  # the user's kernel
        panel.locator(".jp-AgentPanel-runFooter.jp-AgentPanel-ok").wait_for(timeout=30000)
        footer = panel.locator(".jp-AgentPanel-runFooter").inner_text()
        assert "completed" in footer and "4 turns" in footer and "out" in footer and "$" in footer
        assert "✓ Finished" in footer and "not a promise" not in footer  # a normal end is one quiet line
        assert panel.locator(".jp-AgentPanel-state-done").count() == 5  # (two of them TodoWrite)
        plan = panel.locator(".jp-AgentPanel-plan")  # one checklist, updated by the second call
        assert plan.count() == 1 and plan.locator(".jp-AgentPanel-planTitle").inner_text() == "Plan · 1 of 2 done"
        done = plan.locator(".jp-AgentPanel-todo-completed")  # the status in words for screen readers, the text as text
        assert done.text_content() == "done: Add a cell that prints <x + 1>"
        assert plan.locator(".jp-AgentPanel-todo-in_progress .jp-AgentPanel-todoText").inner_text() == "Running it"
        assert panel.locator(".jp-AgentPanel-decision", has_text="Allowed by you.").count() == 2
        assert panel.locator(".jp-AgentPanel-text em", has_text="42").count() == 1
        assert "$" in panel.locator(".jp-AgentPanel-usage").inner_text()
        assert panel.locator(".jp-AgentPanel-approval").count() == 0
        assert "42" in str(api.requests[-1]["messages"][-1]["content"])  # the run's output reached the model
        screenshot(page, "panel_done_light")

        menu(page, "Settings", "Theme", "JupyterLab Dark")
        wait_theme(page, light=False)
        screenshot(page, "panel_done_dark")

        # another notebook, whose kernel has not loaded the extension: the panel follows, with a hint
        page.locator(".jp-DirListing-itemText", has_text="plain.ipynb").dblclick()
        panel.locator(".jp-AgentPanel-title", has_text="plain.ipynb").wait_for(timeout=30000)
        panel.locator(".jp-AgentPanel-hintBox", has_text=HINT).wait_for(timeout=30000)
        assert panel.locator(".jp-AgentPanel-run").count() == 0
        screenshot(page, "panel_hint_dark")
        # back to the first notebook: its kernel's conversation is there again
        page.locator(".lm-DockPanel-tabBar .lm-TabBar-tabLabel", has_text="agent.ipynb").click()
        panel.locator(".jp-AgentPanel-run").first.wait_for(timeout=30000)
        assert "Done: the new cell printed 42." in panel.inner_text()
        panel.get_by_role("button", name="New conversation").click()
        panel.locator(".jp-AgentPanel-empty").wait_for(timeout=30000)
        assert panel.locator(".jp-AgentPanel-run").count() == 0
        # Deny with a note: nothing is written, the model reads the note
        script(response(tool_use("Write", {"file_path": str(lab.root / "no.txt"), "content": "x"})),
               response(text("Understood: I will not write no.txt.")))
        panel.locator(".jp-AgentPanel-input").fill("Write x to no.txt")
        panel.get_by_role("button", name="Send", exact=True).click()
        approval = panel.locator(".jp-AgentPanel-approval")
        approval.locator(".jp-AgentPanel-feedback").fill("Not now, thanks.")
        approval.get_by_role("button", name="Deny", exact=True).click()
        panel.locator(".jp-AgentPanel-runFooter.jp-AgentPanel-ok").wait_for(timeout=30000)
        assert not (lab.root / "no.txt").exists()
        assert "Denied by you: Not now, thanks." in panel.locator(".jp-AgentPanel-tool").inner_text()
        assert "Not now, thanks." in str(api.requests[-1]["messages"][-1]["content"])
        assert "Add a cell that prints" not in str(api.requests[-1]["messages"])  # a new conversation
        # a kernel restart forgets %load_ext: the panel says so instead of hanging
        with restarted(page):  # the restarted kernel is up, and the panel's retry was refused too
            menu(page, "Kernel", "Restart Kernel…")
            page.locator(".jp-Dialog-button.jp-mod-accept", has_text="Restart").click()
            panel.locator(".jp-AgentPanel-hintBox", has_text=HINT).wait_for(timeout=30000)
        panel.locator(".jp-AgentPanel-hintBox", has_text=HINT).wait_for(timeout=30000)
    finally:
        screenshot(page, "panel_end")


def test_panel_settings_place_and_open_it(lab, page_of):
    """The panel's settings (labextension/schema/panel.json), as a user's settings file sets
    them: in the left sidebar, open when JupyterLab starts. Its buttons are named by their
    words (the icons are aria-hidden)."""
    write_notebook(lab.root / "settings.ipynb", ["1 + 1"])
    user_settings = lab.settings / "jupyter-agent" / "panel.jupyterlab-settings"
    user_settings.parent.mkdir(parents=True, exist_ok=True)
    user_settings.write_text('{"side": "left", "openOnStart": true}')
    try:
        page = page_of("settings.ipynb")
        panel = page.locator(f"#jp-left-stack {PANEL}")
        panel.wait_for(timeout=30000)  # open without a click, on the left
        assert page.locator(f"#jp-right-stack {PANEL}").count() == 0
        send = panel.get_by_role("button", name="Send", exact=True)
        assert send.locator("[aria-hidden='true'] svg").count() == 1  # an icon, hidden from screen readers
        panel.get_by_role("button", name="Stop", exact=True).wait_for()
    finally:
        user_settings.unlink()


#: (cx, cy) of an element's centre is the element itself (or inside it): it is drawn in view,
#: not scrolled away, clipped or covered.
_IN_VIEW = """el => {
    const r = el.getBoundingClientRect();
    const hit = document.elementFromPoint(r.left + r.width / 2, r.top + r.height / 2);
    return !!hit && (hit === el || el.contains(hit));
}"""

#: The colour a theme variable resolves to, as a computed background.
_THEME_COLOR = """name => {
    const probe = document.createElement('div');
    probe.style.background = `var(${name})`;
    document.body.appendChild(probe);
    const color = getComputedStyle(probe).backgroundColor;
    probe.remove();
    return color;
}"""


def _theme(page, light: bool) -> None:
    if page.evaluate("document.body.dataset.jpThemeLight") != str(light).lower():
        menu(page, "Settings", "Theme", "JupyterLab Light" if light else "JupyterLab Dark")
        wait_theme(page, light=light)


def test_panel_load_button_and_a_long_cells_approval(lab, page_of, script, api):
    """A kernel without the extension: the hint's Load button loads it (no cell added, none
    run) and the panel connects. Then a NotebookRun of a 120-line cell: the panel's card
    shows the cell's code (not the call's JSON) in its own scrolling box, with the note,
    Allow (green) and Deny (red) in view below it, in light and dark themes."""
    nb = lab.root / "long.ipynb"
    source = "\n".join(f"v{i} = {i}" for i in range(120)) + "\nprint('the end')"
    write_notebook(nb, [source], ids=["longcell"])
    script(response(tool_use("Read", {"file_path": str(nb)})),
           response(tool_use("NotebookRun", {"notebook_path": str(nb), "cell_id": "longcell"})),
           response(text("Understood: not run.")))
    page = page_of("long.ipynb", height=800)
    _theme(page, light=True)
    page.click(f"li[data-id='{PANEL[1:]}']")
    panel = page.locator(PANEL)
    hint = panel.locator(".jp-AgentPanel-hintBox", has_text=HINT)
    hint.get_by_role("button", name="Load", exact=True).wait_for(timeout=30000)
    screenshot(page, "panel_load_light")
    hint.get_by_role("button", name="Load", exact=True).click()
    panel.locator(".jp-AgentPanel-empty").wait_for(timeout=30000)  # connected
    assert len(cell_sources(page)) == 1  # no cell added...
    assert cell(page, 0).locator(".jp-InputPrompt").inner_text().strip() == "[ ]:"  # ...none run

    panel.locator(".jp-AgentPanel-input").fill("Run the long cell")
    panel.locator(".jp-AgentPanel-input").press("Enter")
    card = panel.locator(".jp-AgentPanel-approval", has_text="NotebookRun")
    card.wait_for(timeout=30000)
    question = card.locator(".jp-AgentPanel-approvalBody > .jp-AgentPanel-muted").inner_text()
    assert "cell 1 of 1 (id longcell)" in question
    code = card.locator(".jp-AgentPanel-code").inner_text()
    assert code.startswith("v0 = 0\nv1 = 1") and code.rstrip().endswith("print('the end')")
    assert '"cell_id"' not in code  # the code, not the call's JSON (folded below it)
    body = card.locator(".jp-AgentPanel-approvalBody")
    assert body.evaluate("b => b.scrollHeight > b.clientHeight")  # the long code scrolls in its box...
    for theme in ("light", "dark"):
        _theme(page, light=theme == "light")
        for name in ("Allow", "Deny"):  # ...and the buttons and the note stay in view
            assert card.get_by_role("button", name=name, exact=True).evaluate(_IN_VIEW), (theme, name)
        assert card.locator(".jp-AgentPanel-feedback").evaluate(_IN_VIEW), theme
        allow, deny = (card.get_by_role("button", name=n, exact=True).evaluate(
            "b => getComputedStyle(b).backgroundColor") for n in ("Allow", "Deny"))
        shade = "color0" if theme == "light" else "color1"
        assert allow == page.evaluate(_THEME_COLOR, f"--jp-success-{shade}"), theme  # green, as in the cell
        assert deny == page.evaluate(_THEME_COLOR, f"--jp-error-{shade}"), theme  # red
        screenshot(page, f"panel_long_approval_{theme}")
    card.locator(".jp-AgentPanel-feedback").fill("Too long to run now.")
    card.get_by_role("button", name="Deny", exact=True).click()
    panel.locator(".jp-AgentPanel-runFooter.jp-AgentPanel-ok").wait_for(timeout=30000)
    assert "Too long to run now." in str(api.requests[-1]["messages"][-1]["content"])
    _theme(page, light=True)


FIX_BAR = ".jp-AgentErrorActions"
BROKEN = "mean = sum(values) / len(vales)"
FIXED = "mean = sum(values) / len(values)"


def _said(request) -> str:
    """The text of a request's last user message."""
    content = request["messages"][-1]["content"]
    return "\n".join(b.get("text", "") for b in content) if isinstance(content, list) else str(content)


def fix_scenario(page, api, script, path, *, notebook7: bool = False, read_first: bool = True) -> None:
    """values; %load_ext; a cell that raises NameError; a cell that prints: the error output
    (only it) gets Fix with agent and Explain; Explain (pressed from the keyboard) answers in
    the panel and changes nothing; Fix with agent sends the cell and its traceback, the panel's
    approval shows the fix as a diff, and after Allow (twice) the cell holds the fixed code and
    ran without error, its buttons gone. ``read_first`` False: the model edits the clicked cell
    at once, as the click's prompt asks (the cell counts as read), and the edit lands."""
    from .lab import cell, cell_sources, run_and_wait, screenshot

    script(response(text("`vales` is a typo: the list is `values`.")),
           *([response(text("A typo; I'll read the notebook."), tool_use("Read", {"file_path": str(path)}))]
             if read_first else []),
           response(tool_use("NotebookEdit", {"notebook_path": str(path), "cell_id": "err", "edit_mode": "replace",
                                              "cell_type": "code", "new_source": FIXED})),
           response(tool_use("NotebookRun", {"notebook_path": str(path), "cell_id": "err"})),
           response(text("Fixed: `mean` is 5.33.")))
    for i in range(3):
        run_and_wait(page, i)
    bar = cell(page, 2).locator(FIX_BAR)
    bar.wait_for(timeout=30000)
    run_and_wait(page, 3)  # (once the bar is in: the cell below does not move under the click)
    cell(page, 3).locator(".jp-OutputArea-output", has_text="fine").wait_for(timeout=30000)
    assert page.locator(FIX_BAR).count() == 1  # not on the cells without an error
    assert bar.get_by_role("button").all_inner_texts() == ["Fix with agent", "Explain"]
    screenshot(page, f"fix_buttons_{'nb7_' if notebook7 else ''}light")
    panel = page.locator(PANEL)

    first = len(api.requests)
    explain = bar.get_by_role("button", name="Explain", exact=True)
    explain.focus()
    page.keyboard.press("Enter")  # reachable and pressed from the keyboard
    panel.locator(".jp-AgentPanel-text", has_text="is a typo").wait_for(timeout=30000)
    panel.locator(".jp-AgentPanel-runFooter.jp-AgentPanel-ok").wait_for(timeout=30000)
    said = _said(api.requests[first])
    assert 'pressed "Explain"' in said and BROKEN in said and "NameError: name 'vales' is not defined" in said
    assert "plan mode" in str(api.requests[first]["system"]).lower()
    assert cell_sources(page)[2] == BROKEN and panel.locator(".jp-AgentPanel-approval").count() == 0

    first = len(api.requests)
    bar.get_by_role("button", name="Fix with agent", exact=True).click()
    approval = panel.locator(".jp-AgentPanel-approval", has_text="NotebookEdit")
    approval.wait_for(timeout=30000)
    said = _said(api.requests[first])  # the run's first request
    assert 'pressed "Fix with agent"' in said and f'<cell id="err">{BROKEN}</cell id="err">' in said
    assert "<traceback>" in said and "NameError: name 'vales' is not defined" in said and "\x1b" not in said
    assert "values: list, length 3" in said  # the kernel's variables
    assert approval.locator(".jp-AgentPanel-del", has_text=BROKEN).count() == 1  # the fix, as a diff
    assert approval.locator(".jp-AgentPanel-add", has_text=FIXED).count() == 1
    assert cell_sources(page)[2] == BROKEN  # nothing before Allow
    screenshot(page, f"fix_approval_{'nb7_' if notebook7 else ''}light")
    approval.get_by_role("button", name="Allow", exact=True).click()
    page.wait_for_function("([i, s]) => Array.from(document.querySelectorAll('.jp-Notebook .jp-Cell')[i]"
                           ".querySelectorAll('.cm-line')).map(l => l.textContent).join('\\n') === s",
                           arg=[2, FIXED], timeout=30000)
    approval = panel.locator(".jp-AgentPanel-approval", has_text="NotebookRun")
    approval.get_by_role("button", name="Allow", exact=True).click()
    panel.locator(".jp-AgentPanel-runFooter.jp-AgentPanel-ok", has_text="completed").nth(1).wait_for(timeout=30000)
    assert "variables changed: mean" in panel.inner_text()  # the fixed cell ran, in the user's kernel
    # the panel's conversation (longer than its box by now) shows the end of the run just asked for
    page.wait_for_function(AT_THE_END, timeout=10000)
    assert cell(page, 2).locator(".jp-OutputArea-output").count() == 0  # no error any more...
    assert page.locator(FIX_BAR).count() == 0  # ...and no buttons
    screenshot(page, f"fix_done_{'nb7_' if notebook7 else ''}light")


@pytest.mark.timeout(300)  # as long as the round trip above: 2 loaded cores take several times that
def test_fix_with_agent_and_explain_on_an_error_output(lab, page_of, script, api):
    path = lab.root / "fix.ipynb"
    write_notebook(path, ["values = [3, 5, 8]", "%load_ext jupyter_agent", BROKEN, "print('fine')"],
                   ids=["vals", "load", "err", "ok"])
    page = page_of("fix.ipynb")
    page.click(f"li[data-id='{PANEL[1:]}']")
    fix_scenario(page, api, script, path)


@pytest.mark.timeout(300)
def test_fix_with_agent_edits_the_clicked_cell_without_a_read_first(lab, page_of, script, api):
    """The click's prompt asks for one NotebookEdit of the cell: that first edit lands (the
    clicked cell counts as read at the source the model was shown)."""
    path = lab.root / "fix_unread.ipynb"
    write_notebook(path, ["values = [3, 5, 8]", "%load_ext jupyter_agent", BROKEN, "print('fine')"],
                   ids=["vals", "load", "err", "ok"])
    page = page_of("fix_unread.ipynb")
    page.click(f"li[data-id='{PANEL[1:]}']")
    fix_scenario(page, api, script, path, read_first=False)
    results = [b for m in api.requests[-1]["messages"] for b in (m["content"] if isinstance(m["content"], list)
                                                                    else []) if b.get("type") == "tool_result"]
    assert results and not any(b.get("is_error") for b in results), results


#: The side panel's conversation box shows its end, and is longer than the box (so that the
#: check means something).
AT_THE_END = ("() => { const b = document.querySelector('.jp-AgentPanel-conversation');"
              " return !!b && b.clientHeight > 0 && b.scrollHeight > b.clientHeight + 100"
              " && b.scrollHeight - b.scrollTop - b.clientHeight < 40; }")


def test_a_panel_opened_after_a_long_run_shows_its_end(lab, page_of, script):
    """The panel draws the kernel's runs while it is closed (it has no height then); opened
    later it shows where the conversation is, not its top."""
    write_notebook(lab.root / "long.ipynb", ["%load_ext jupyter_agent", "%%agent\nTell me a long story"])
    script(response(text("\n\n".join(f"Paragraph {i} of a long answer." for i in range(60)))))
    page = page_of("long.ipynb")
    run_and_wait(page, 0)
    run_and_wait(page, 1)
    cell(page, 1).locator("text=Paragraph 59 of a long answer.").wait_for(timeout=30000)
    page.click(f"li[data-id='{PANEL[1:]}']")  # opened only now
    page.locator(PANEL).locator(".jp-AgentPanel-text", has_text="Paragraph 59").wait_for(timeout=30000)
    page.wait_for_function(AT_THE_END, timeout=10000)
