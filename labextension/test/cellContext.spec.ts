/**
 * What the page tells the agent about cells (src/cellContext.ts): which outputs get the
 * Fix with agent / Explain buttons, what a click sends, and the cell a side-panel prompt
 * carries (src/panelState.ts's prompt).
 */

import {
  CELLS_ABOVE,
  ERROR_BUTTONS,
  ICellLike,
  MAX_SENT_CHARS,
  errorButtons,
  errorHelpRequest,
  errorOutput,
  promptContext
} from '../src/cellContext';
import { PANEL_VERSION } from '../src/panelProtocol';
import { PanelState } from '../src/panelState';

const RED = '\u001b[0;31m';
const nameError = {
  output_type: 'error',
  ename: 'NameError',
  evalue: "name 'vales' is not defined",
  traceback: [`${RED}NameError${RED}: name 'vales' is not defined`]
};
const stream = { output_type: 'stream', name: 'stdout', text: 'Traceback (most recent call last): only printed\n' };
const result = { output_type: 'execute_result', data: { 'text/plain': "NameError('x')" }, metadata: {} };

const code = (id: string, source: string, outputs: unknown[] = []): ICellLike => ({
  id,
  cell_type: 'code',
  source,
  outputs
});

describe('errorButtons', () => {
  it('gives an error output Fix with agent, then Explain, when the kernel has loaded jupyter_agent', () => {
    const buttons = errorButtons(code('a', 'x', [stream, nameError]), true);
    expect(buttons.map(b => b.label)).toEqual(['Fix with agent', 'Explain']);
    expect(buttons.map(b => b.action)).toEqual(['fix', 'explain']);
    expect(buttons[1].title).toContain('nothing is changed');
  });

  it('gives nothing to outputs that are not errors, even ones that look like one', () => {
    expect(errorButtons(code('a', 'x', [stream, result]), true)).toEqual([]);
    expect(errorButtons(code('a', 'x', []), true)).toEqual([]);
    expect(errorButtons({ cell_type: 'markdown', outputs: [nameError] }, true)).toEqual([]);
  });

  it('gives nothing where the kernel has not loaded jupyter_agent', () => {
    expect(errorButtons(code('a', 'x', [nameError]), false)).toEqual([]);
  });
});

describe('errorHelpRequest', () => {
  const cells: ICellLike[] = [
    code('c0', 'import math'),
    { id: 'm1', cell_type: 'markdown', source: '# Data' },
    code('c2', ''),
    code('c3', 'values = [3, 5, 8]'),
    code('c4', 'x = 1'),
    code('bad', 'mean = sum(values) / len(vales)', [stream, nameError]),
    code('after', 'print(mean)')
  ];

  it('sends the cell, its error as saved (the kernel strips the colour codes) and the cells above', () => {
    const request = errorHelpRequest('fix', cells, 5);
    expect(request).toEqual({
      op: 'fix',
      cell: { id: 'bad', cell_type: 'code', source: 'mean = sum(values) / len(vales)', index: 5 },
      error: { ename: nameError.ename, evalue: nameError.evalue, traceback: nameError.traceback },
      above: [
        { id: 'm1', cell_type: 'markdown', source: '# Data', index: 1 },
        { id: 'c3', cell_type: 'code', source: 'values = [3, 5, 8]', index: 3 },
        { id: 'c4', cell_type: 'code', source: 'x = 1', index: 4 }
      ]
    });
    expect((request as { above: unknown[] }).above).toHaveLength(CELLS_ABOVE); // the empty cell is skipped
    expect(errorHelpRequest('explain', cells, 5)?.op).toBe('explain');
  });

  it('sends nothing for a cell whose error is gone', () => {
    expect(errorHelpRequest('fix', cells, 6)).toBeNull();
    expect(errorHelpRequest('fix', cells, 42)).toBeNull();
  });

  it('keeps a huge traceback and source within what one message may carry', () => {
    const long = 'y'.repeat(MAX_SENT_CHARS / 2);
    const huge = { ...nameError, traceback: [long, long, long] };
    const request = errorHelpRequest('fix', [code('big', 'z'.repeat(MAX_SENT_CHARS + 5), [huge])], 0) as {
      cell: { source: string };
      error: { traceback: string[] };
    };
    expect(request.cell.source).toHaveLength(MAX_SENT_CHARS);
    expect(request.error.traceback).toEqual([long, long]);
    expect(errorOutput([huge])?.ename).toBe('NameError');
  });
});

describe('the cell the user is on', () => {
  const cells: ICellLike[] = [code('a', 'x = 41'), code('b', 'df.plot()'), code('c', 'print(x)')];

  it('is the active cell, with the other selected cells and the selected text', () => {
    expect(promptContext(cells, 1)).toEqual({ active: { id: 'b', cell_type: 'code', source: 'df.plot()', index: 1 } });
    expect(promptContext(cells, 1, [0, 1, 2], 'plot')).toEqual({
      active: { id: 'b', cell_type: 'code', source: 'df.plot()', index: 1 },
      selected: [
        { id: 'a', cell_type: 'code', source: 'x = 41', index: 0 },
        { id: 'c', cell_type: 'code', source: 'print(x)', index: 2 }
      ],
      selection: 'plot'
    });
    expect(promptContext(cells, -1)).toBeNull();
  });

  it('goes with a side-panel prompt as its context', () => {
    const state = new PanelState();
    state.receive({ v: PANEL_VERSION, type: 'state', session: {}, runs: [], approvals: [] });
    const context = promptContext(cells, 2);
    expect(state.prompt('  why does this fail? ', context).request).toEqual({
      op: 'send',
      prompt: 'why does this fail?',
      context: { active: { id: 'c', cell_type: 'code', source: 'print(x)', index: 2 } }
    });
    expect(state.prompt('hello', null).request).toEqual({ op: 'send', prompt: 'hello' });
  });
});

it('names each button by its words', () => {
  expect(ERROR_BUTTONS.every(b => b.label && b.title)).toBe(true);
});
