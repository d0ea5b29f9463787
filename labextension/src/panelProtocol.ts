/**
 * The side panel's protocol, page side: its names in one place. The kernel side is
 * jupyter_agent/jupyter/panel_comm.py.
 *
 * Page -> kernel: {v, op, ...arguments}: hello, send (prompt), stop, new, resume, mode (mode),
 * approve (request, choice, feedback; tool_use_id when the approval carried one), undo (run),
 * fix / explain (cell, error, above: an error output's buttons); send may carry context (the
 * cell the user is on, built by cellContext.ts: the shapes are defined here, so that module
 * imports this one and never the reverse).
 * Kernel -> page: {v, type, ...}: state (everything), update (what changed), error (text),
 * note (text: what a request did, e.g. what Resume brought back).
 *
 * The constants are defined once, in protocol.ts (whose Python twin, protocol.py, a parity
 * test compares); the panel's own types are derived from them here.
 */

export { PANEL_CHOICES, PANEL_MESSAGE_TYPES, PANEL_OPS, PANEL_TARGET, PANEL_VERSION } from './protocol';
import { PANEL_CHOICES, PANEL_MESSAGE_TYPES, PANEL_OPS } from './protocol';

export type PanelOp = (typeof PANEL_OPS)[number];
export type PanelMessageType = (typeof PANEL_MESSAGE_TYPES)[number];
export type ApprovalChoice = (typeof PANEL_CHOICES)[number];

/** A cell as the kernel gets it: `index` is its 0-based position in the notebook. */
export interface IQuotedCell {
  id: string;
  cell_type: string;
  source: string;
  index: number;
}

/** Where the user is: `send`'s `context`. */
export interface IPromptContext {
  active: IQuotedCell;
  selected?: IQuotedCell[];
  selection?: string;
}

/** An error output, as nbformat saves it. */
export interface IErrorOutput {
  ename: string;
  evalue: string;
  traceback: string[];
}

/** A request from the page, without its version (PanelConnection.send adds it). */
export type PanelRequest =
  | { op: Extract<PanelOp, 'hello' | 'stop' | 'new' | 'resume'> }
  | { op: Extract<PanelOp, 'send'>; prompt: string; context?: IPromptContext }
  | { op: Extract<PanelOp, 'fix' | 'explain'>; cell: IQuotedCell; error: IErrorOutput; above: IQuotedCell[] }
  | { op: Extract<PanelOp, 'mode'>; mode: string }
  | { op: Extract<PanelOp, 'undo'>; run: string }
  | { op: Extract<PanelOp, 'compact'>; instruction?: string }
  | {
      op: Extract<PanelOp, 'approve'>;
      request: string | number;
      tool_use_id?: string;
      choice: ApprovalChoice;
      feedback: string;
    };
