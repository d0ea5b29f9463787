/**
 * What the page tells the agent about cells, pure (no DOM, no JupyterLab): the cell the
 * user is on when they write in the side panel, and the error a Fix with agent / Explain
 * click is about (errorActions.ts draws the buttons). The kernel (jupyter_agent/jupyter/
 * cell_help.py) checks, cuts and quotes all of it: to the model it is data, not instructions.
 */

// The shapes the kernel gets are the protocol's (panelProtocol.ts); this module builds them
// and imports them from there, never the other way round.
import type { IErrorOutput, IPromptContext, IQuotedCell, PanelRequest } from './panelProtocol';

export type { IErrorOutput, IPromptContext, IQuotedCell };

/** What of a cell is read here (a cell's model as JSON). */
export interface ICellLike {
  id: string;
  cell_type: string;
  source: string;
  outputs?: unknown[];
}

/** Characters of one cell's source, of a selection, of a traceback the page sends (the
 * kernel cuts them further; this keeps a comm message small whatever the notebook holds). */
export const MAX_SENT_CHARS = 100000;
/** Cells sent from above an error cell, and selected cells besides the active one. */
export const CELLS_ABOVE = 3;
export const MAX_SELECTED = 10;

const cut = (text: string) => (text.length > MAX_SENT_CHARS ? text.slice(0, MAX_SENT_CHARS) : text);

function quoted(cell: ICellLike, index: number): IQuotedCell {
  return { id: cell.id, cell_type: cell.cell_type, source: cut(cell.source), index };
}

/** The context a side-panel prompt carries: the active cell, the other selected cells (when
 * more than one is selected) and the text selected in the active cell's editor; null when
 * there is no active cell. */
export function promptContext(
  cells: readonly ICellLike[],
  active: number,
  selected: readonly number[] = [],
  selection = ''
): IPromptContext | null {
  const cell = cells[active];
  if (!cell || !cell.id) {
    return null;
  }
  const context: IPromptContext = { active: quoted(cell, active) };
  const others = selected.filter(i => i !== active && cells[i]?.id).slice(0, MAX_SELECTED);
  if (others.length) {
    context.selected = others.map(i => quoted(cells[i], i));
  }
  if (selection.trim()) {
    context.selection = cut(selection);
  }
  return context;
}

/** The first error output among `outputs` (a cell's outputs as JSON), or null. */
export function errorOutput(outputs: readonly unknown[] | undefined): IErrorOutput | null {
  for (const output of outputs ?? []) {
    const o = output as Record<string, unknown> | null;
    if (o && o.output_type === 'error') {
      const traceback = Array.isArray(o.traceback) ? o.traceback.map(String) : [];
      let size = 0;
      return {
        ename: String(o.ename ?? ''),
        evalue: String(o.evalue ?? ''),
        traceback: traceback.filter(line => (size += line.length) <= MAX_SENT_CHARS)
      };
    }
  }
  return null;
}

/** The buttons of an error output, in order. */
export type ErrorAction = 'fix' | 'explain';

export interface IErrorButton {
  action: ErrorAction;
  label: string;
  title: string;
}

export const ERROR_BUTTONS: readonly IErrorButton[] = [
  {
    action: 'fix',
    label: 'Fix with agent',
    title:
      'Ask the agent in the side panel to fix this error: it proposes an edit of this cell (you Allow or Deny it), then runs the cell'
  },
  {
    action: 'explain',
    label: 'Explain',
    title: 'Ask the agent in the side panel what went wrong (plan mode: nothing is changed)'
  }
];

/** The buttons a cell's output gets: Fix with agent and Explain under an error, when the
 * notebook's kernel has loaded jupyter_agent; none anywhere else. */
export function errorButtons(
  cell: Pick<ICellLike, 'cell_type' | 'outputs'>,
  agentLoaded: boolean
): readonly IErrorButton[] {
  if (!agentLoaded || cell.cell_type !== 'code' || !errorOutput(cell.outputs)) {
    return [];
  }
  return ERROR_BUTTONS;
}

/** The request a click sends: the cell, its error and the code cells just above it; null
 * when the cell has no error (any more). */
export function errorHelpRequest(action: ErrorAction, cells: readonly ICellLike[], index: number): PanelRequest | null {
  const cell = cells[index];
  const error = cell ? errorOutput(cell.outputs) : null;
  if (!cell || !error) {
    return null;
  }
  const above: IQuotedCell[] = [];
  for (let i = index - 1; i >= 0 && above.length < CELLS_ABOVE; i--) {
    if (cells[i].cell_type !== 'raw' && cells[i].source.trim()) {
      above.unshift(quoted(cells[i], i));
    }
  }
  return { op: action, cell: quoted(cell, index), error, above };
}
