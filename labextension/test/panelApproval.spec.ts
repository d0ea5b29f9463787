/**
 * What the side panel shows and does beside the conversation (src/panelState.ts): an
 * approval card's parts (a NotebookRun shows the cell's code, as the cell's card does),
 * the Load button of a kernel without the extension and what its reply says, the key that
 * sends, and when the panel opens by itself.
 */

import {
  IApproval,
  LOAD_CODE,
  PanelState,
  approvalParts,
  isSendKey,
  loadOutcome,
  opensOnStart
} from '../src/panelState';

const runAsk: IApproval = {
  id: 7,
  tool: 'NotebookRun',
  message: 'NotebookRun wants to run cell 3 of 4 (id abc) of nb.ipynb:\nprint(x + 1)\nx = 2',
  question: 'NotebookRun wants to run cell 3 of 4 (id abc) of nb.ipynb',
  code: 'print(x + 1)\nx = 2',
  input: '{\n "notebook_path": "nb.ipynb",\n "cell_id": "cell-2"\n}'
};

describe('approvalParts', () => {
  it('shows the cell of a NotebookRun as code, its question above, the raw input folded', () => {
    expect(approvalParts(runAsk)).toEqual({
      line: 'NotebookRun wants to run cell 3 of 4 (id abc) of nb.ipynb',
      shown: { kind: 'code', text: 'print(x + 1)\nx = 2' },
      rawInput: runAsk.input
    });
  });

  it('shows an edit as its diff and anything else as its input', () => {
    const edit: IApproval = { id: 1, tool: 'Edit', message: 'Edit wants to edit a.py.', diff: '-a\n+b', input: '{}' };
    expect(approvalParts(edit)).toEqual({
      line: 'Edit wants to edit a.py.',
      shown: { kind: 'diff', text: '-a\n+b' },
      rawInput: '{}'
    });
    const other: IApproval = { id: 2, tool: 'WebFetch', message: 'Fetch?', input: '{"url": "x"}' };
    expect(approvalParts(other)).toEqual({
      line: 'Fetch?',
      shown: { kind: 'input', text: '{"url": "x"}' },
      rawInput: null
    });
  });

  it('falls back to the message and the input when the cell could not be read', () => {
    const unread: IApproval = { ...runAsk, message: 'NotebookRun wants to run cell x of nb.ipynb.', code: '' };
    expect(approvalParts(unread).shown).toEqual({ kind: 'input', text: runAsk.input });
    expect(approvalParts(unread).line).toBe('NotebookRun wants to run cell x of nb.ipynb.');
  });
});

describe('the Load button', () => {
  it('is offered when the kernel is there without the extension, not otherwise', () => {
    const state = new PanelState();
    expect(state.loadable).toBe(false); // no notebook
    state.disconnect('refused');
    expect(state.loadable).toBe(true);
    state.disconnect('restarting');
    expect(state.loadable).toBe(true);
    for (const reason of ['no-kernel', 'no-comms', 'no-notebook'] as const) {
      state.disconnect(reason);
      expect(state.loadable).toBe(false);
    }
    state.disconnect('refused');
    state.receive({ v: 1, type: 'state', session: {}, runs: [], approvals: [] });
    expect(state.loadable).toBe(false); // connected
  });

  it('runs %load_ext jupyter_agent and says what went wrong', () => {
    expect(LOAD_CODE).toBe('%load_ext jupyter_agent');
    expect(loadOutcome({ status: 'ok' }).error).toBe(false);
    const missing = loadOutcome({
      status: 'error',
      ename: 'ModuleNotFoundError',
      evalue: "No module named 'jupyter_agent'"
    });
    expect(missing.error).toBe(true);
    expect(missing.text).toContain("ModuleNotFoundError: No module named 'jupyter_agent'");
    expect(missing.text).toContain('pip install jupyter-agent');
    const other = loadOutcome({ status: 'error', ename: 'RuntimeError', evalue: 'boom' });
    expect(other.text).toContain('RuntimeError: boom');
    expect(other.text).toContain('Run it in a cell');
    expect(loadOutcome(null)).toEqual({
      text: '%load_ext jupyter_agent did not finish (no reply): run it in a cell to see why.',
      error: true
    });
    expect(loadOutcome({ status: 'aborted' }).text).toContain('(aborted)');
  });
});

describe('keys and opening', () => {
  it('sends on Enter, not on Shift+Enter nor while composing', () => {
    expect(isSendKey({ key: 'Enter', shiftKey: false })).toBe(true);
    expect(isSendKey({ key: 'Enter', shiftKey: true })).toBe(false);
    expect(isSendKey({ key: 'Enter', shiftKey: false, isComposing: true })).toBe(false);
    expect(isSendKey({ key: 'a', shiftKey: false })).toBe(false);
  });

  it('opens in Notebook 7 unless the user closed it there, and wherever the setting says', () => {
    expect(opensOnStart({ openOnStart: false, notebook7: true, closedByUser: false })).toBe(true);
    expect(opensOnStart({ openOnStart: false, notebook7: true, closedByUser: true })).toBe(false);
    expect(opensOnStart({ openOnStart: false, notebook7: false, closedByUser: false })).toBe(false);
    expect(opensOnStart({ openOnStart: true, notebook7: false, closedByUser: true })).toBe(true);
  });
});
