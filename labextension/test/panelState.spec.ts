/**
 * The side panel's state (src/panelState.ts): what each kernel message changes, and what a
 * click or a prompt sends. No page: the messages are the kernel's (panel_runs.py, panel_json.py) shapes.
 */

import { PANEL_VERSION } from '../src/panelProtocol';
import {
  DISCONNECTED_TEXT,
  HINT,
  IApproval,
  PanelState,
  diffLineClass,
  endedNormally,
  formatUsage,
  offersResume,
  shortPaths,
  turnsText,
  usageLine
} from '../src/panelState';

const session = { model: 'claude-x', permission_mode: 'default', modes: ['default', 'plan'], busy: false };
const header = (id: string, extra = {}) => ({ id, origin: 'panel', status: 'running', turns: 1, ...extra });
const text = (key: string, value: string) => ({ key, kind: 'text', text: value, done: true });
const ask: IApproval = { id: 3, tool: 'NotebookEdit', input: '{}', rules: ['NotebookEdit'] };

function connected(runs: unknown[] = [], approvals: unknown[] = []): PanelState {
  const state = new PanelState();
  state.receive({ v: PANEL_VERSION, type: 'state', session, runs, approvals });
  return state;
}

describe('PanelState.receive', () => {
  it('starts disconnected and connects on the kernel state', () => {
    const state = new PanelState();
    expect(state.connected).toBe(false);
    const change = connected().receive({ v: PANEL_VERSION, type: 'state', session, runs: [], approvals: [] });
    expect(change.reset).toBe(true);
    expect(change.session).toBe(true);
    expect(change.say).toEqual({ text: '', error: false });
  });

  it('keeps the runs and their items in order from a state', () => {
    const state = connected([
      { header: header('r1'), items: [text('a', 'one'), text('b', 'two')], order: ['a', 'b'] },
      { header: header('r2'), items: [], order: [] }
    ]);
    expect(state.connected).toBe(true);
    expect(Array.from(state.runs.keys())).toEqual(['r1', 'r2']);
    expect(state.runs.get('r1')?.order).toEqual(['a', 'b']);
    expect(state.runs.get('r1')?.items.get('b')?.text).toBe('two');
  });

  it('an update redraws only the items it carries, appends new ones and adds new runs', () => {
    const state = connected([{ header: header('r1'), items: [text('a', 'one')], order: ['a'] }]);
    const change = state.receive({
      v: PANEL_VERSION,
      type: 'update',
      runs: [
        { header: header('r1', { turns: 2 }), items: [text('a', 'one more'), text('c', 'three')] },
        { header: header('r2'), items: [text('x', 'new')], order: ['x'] }
      ],
      run_ids: ['r1', 'r2']
    });
    expect(change.reset).toBe(false);
    expect(change.runs).toEqual([
      { id: 'r1', items: ['a', 'c'], removed: [], reordered: false },
      { id: 'r2', items: ['x'], removed: [], reordered: true }
    ]);
    expect(state.runs.get('r1')?.order).toEqual(['a', 'c']);
    expect(state.runs.get('r1')?.header.turns).toBe(2);
    expect(change.approvals).toBe(false); // not in the update: the cards stay
    expect(change.session).toBe(false);
  });

  it('an order drops the items it leaves out and puts the others in place', () => {
    const state = connected([{ header: header('r1'), items: [text('a', '1'), text('b', '2'), text('c', '3')] }]);
    const change = state.receive({
      v: PANEL_VERSION,
      type: 'update',
      runs: [{ header: header('r1'), items: [], order: ['c', 'a'] }],
      run_ids: ['r1']
    });
    expect(change.runs[0]).toEqual({ id: 'r1', items: [], removed: ['b'], reordered: true });
    expect(state.runs.get('r1')?.order).toEqual(['c', 'a']);
    expect(state.runs.get('r1')?.items.has('b')).toBe(false);
  });

  it('forgets the runs missing from run_ids', () => {
    const state = connected([
      { header: header('r1'), items: [] },
      { header: header('r2'), items: [] }
    ]);
    const change = state.receive({ v: PANEL_VERSION, type: 'update', runs: [], run_ids: ['r2'] });
    expect(change.removedRuns).toEqual(['r1']);
    expect(Array.from(state.runs.keys())).toEqual(['r2']);
  });

  it('replaces the approvals when an update carries them, and a state starts them over', () => {
    const state = connected([], [ask]);
    expect(state.approvals).toEqual([ask]);
    const change = state.receive({ v: PANEL_VERSION, type: 'update', runs: [], run_ids: [], approvals: [] });
    expect(change.approvals).toBe(true);
    expect(state.approvals).toEqual([]);
    state.receive({ v: PANEL_VERSION, type: 'update', runs: [], run_ids: [], approvals: [ask] });
    state.receive({ v: PANEL_VERSION, type: 'state', session, runs: [], approvals: [] });
    expect(state.approvals).toEqual([]);
  });

  it('says the kernel error and changes nothing else', () => {
    const state = connected([{ header: header('r1'), items: [] }]);
    const change = state.receive({ v: PANEL_VERSION, type: 'error', text: 'Write a message first.' });
    expect(change.say).toEqual({ text: 'Write a message first.', error: true });
    expect(change.reset || change.runs.length || change.approvals).toBeFalsy();
    expect(state.runs.size).toBe(1);
  });

  it.each([{ v: PANEL_VERSION + 1, type: 'state' }, {}, null, 'state'])('refuses %p: another protocol', data => {
    const state = new PanelState();
    const change = state.receive(data);
    expect(change.say?.error).toBe(true);
    expect(change.say?.text).toContain(`this page ${PANEL_VERSION}`);
    expect(state.connected).toBe(false);
  });

  it('skips a run without a header id instead of failing', () => {
    const state = connected([{ items: [] }, { header: header('r1'), items: [] }]);
    expect(Array.from(state.runs.keys())).toEqual(['r1']);
  });

  it('reads busy from the session', () => {
    const state = connected();
    expect(state.busy).toBe(false);
    state.receive({ v: PANEL_VERSION, type: 'update', runs: [], run_ids: [], session: { ...session, busy: true } });
    expect(state.busy).toBe(true);
  });
});

describe('Resume', () => {
  it('is offered only when the kernel says a saved conversation waits and nothing runs', () => {
    expect(offersResume(null, false)).toBe(false);
    expect(offersResume({ ...session }, false)).toBe(false);
    expect(offersResume({ ...session, resumable: true }, false)).toBe(true);
    expect(offersResume({ ...session, resumable: true }, true)).toBe(false);
  });

  it('sends resume when connected, and says the hint when not', () => {
    expect(connected().request({ op: 'resume' })).toEqual({ request: { op: 'resume' } });
    expect(new PanelState().request({ op: 'resume' })).toEqual({ request: null, say: { text: HINT, error: true } });
  });

  it("says the kernel's note (what came back) as a plain line, not an error", () => {
    const state = connected();
    const change = state.receive({ v: PANEL_VERSION, type: 'note', text: 'Resumed the conversation: 4 messages' });
    expect(change.say).toEqual({ text: 'Resumed the conversation: 4 messages', error: false });
    expect(change.reset).toBeFalsy();
    expect(state.connected).toBe(true);
  });
});

describe('PanelState.disconnect', () => {
  it('forgets everything and says why, by reason', () => {
    const state = connected([{ header: header('r1'), items: [] }], [ask]);
    const change = state.disconnect('restarting');
    expect(change.reset && change.session && change.approvals).toBe(true);
    expect(state.connected).toBe(false);
    expect(state.runs.size).toBe(0);
    expect(state.approvals).toEqual([]);
    expect(state.session).toBeNull();
    expect(state.disconnectedText).toBe('The kernel is restarting. ' + HINT);
    expect(new PanelState().disconnect('refused').reset).toBe(true);
    expect(DISCONNECTED_TEXT.refused).toBe(HINT);
    expect(DISCONNECTED_TEXT['no-kernel']).toContain('Start one, then run %load_ext jupyter_agent');
  });
});

describe('what the user sends', () => {
  it('a prompt is trimmed and sent once connected', () => {
    expect(connected().prompt('  hi  ')).toEqual({
      request: { op: 'send', prompt: 'hi' },
      say: { text: '', error: false }
    });
  });

  it('an empty prompt is not sent', () => {
    expect(connected().prompt('  \n')).toEqual({
      request: null,
      say: { text: 'Write a message first.', error: false }
    });
  });

  it('nothing is sent before the kernel answered: the hint is said', () => {
    const state = new PanelState();
    expect(state.prompt('hi')).toEqual({ request: null, say: { text: HINT, error: true } });
    expect(state.request({ op: 'stop' })).toEqual({ request: null, say: { text: HINT, error: true } });
    expect(connected().request({ op: 'stop' })).toEqual({ request: { op: 'stop' } });
  });

  it('an approval is answered by the id the kernel sent; the note goes with Deny only', () => {
    const state = connected([], [ask]);
    expect(state.answer(ask, 'allow', 'typed').request).toEqual({
      op: 'approve',
      request: 3,
      choice: 'allow',
      feedback: ''
    });
    expect(state.answer(ask, 'deny', 'Not now.').request).toEqual({
      op: 'approve',
      request: 3,
      choice: 'deny',
      feedback: 'Not now.'
    });
  });

  it('an approval whose call has no id (null) is answered by its request id alone', () => {
    const unnamed = { ...ask, tool_use_id: null };
    expect(connected([], [unnamed]).answer(unnamed, 'allow', '').request).toEqual({
      op: 'approve',
      request: 3,
      choice: 'allow',
      feedback: ''
    });
  });

  it("an approval that names its call is answered with the call's id too", () => {
    const named = { ...ask, id: 'toolu_01', tool_use_id: 'toolu_01' };
    expect(connected([], [named]).answer(named, 'always', '').request).toEqual({
      op: 'approve',
      request: 'toolu_01',
      tool_use_id: 'toolu_01',
      choice: 'always',
      feedback: ''
    });
  });
});

describe('derived text', () => {
  it('formats usage, turns and ends', () => {
    expect(formatUsage({ input_tokens: 1234, output_tokens: 5, cost_usd: 0.01234 })).toBe(
      '1,234 in · 5 out · ≈ $0.0123'
    );
    expect(formatUsage(undefined)).toBe('');
    // An outside agent's calls spend no tokens here: no "0 in · 0 out · ≈ $0.0000".
    expect(formatUsage({ input_tokens: 0, output_tokens: 0, cost_usd: 0 })).toBe('');
    // the context meter follows the usage once a request was sent
    expect(usageLine({ input_tokens: 10, output_tokens: 2, cost_usd: null }, 'context 3.1k / 30k (10%)')).toBe(
      '10 in · 2 out · context 3.1k / 30k (10%)'
    );
    expect(usageLine(undefined, '')).toBe('');
    // an offline replay has no cost: none is shown (not "$0.0000")
    expect(formatUsage({ input_tokens: 10, output_tokens: 2, cost_usd: null })).toBe('10 in · 2 out');
    expect(turnsText(1)).toBe('1 turn');
    expect(turnsText(4)).toBe('4 turns');
    expect(endedNormally({ id: 'r', reason: 'completed' })).toBe(true);
    expect(endedNormally({ id: 'r', reason: 'max_turns' })).toBe(true);
    expect(endedNormally({ id: 'r', reason: 'aborted_streaming' })).toBe(false);
  });

  it('shortens absolute paths to their last part', () => {
    expect(shortPaths('Read /home/me/project/data.csv')).toBe('Read …/data.csv');
    expect(shortPaths('no paths here')).toBe('no paths here');
  });

  it('classes diff lines', () => {
    expect(['+x', '+++ b', '-y', '--- a', '@@ -1 +1 @@', ' same'].map(diffLineClass)).toEqual([
      'jp-AgentPanel-add',
      '',
      'jp-AgentPanel-del',
      '',
      'jp-AgentPanel-hunk',
      ''
    ]);
  });
});
