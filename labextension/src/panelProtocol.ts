/**
 * The side panel's protocol, page side: its names in one place. The kernel side is
 * jupyter_agent/jupyter/panel_comm.py.
 *
 * Page -> kernel: {v, op, ...arguments}: hello, send (prompt), stop, new, mode (mode),
 * approve (request, choice, feedback; tool_use_id when the approval carried one).
 * Kernel -> page: {v, type, ...}: state (everything), update (what changed), error (text).
 */

/** The comm target of the kernel side (panel_comm.TARGET). */
export const PANEL_TARGET = 'jupyter_agent.panel';
/** panel_comm.PROTOCOL_VERSION: a message of another version is refused and said. */
export const PANEL_VERSION = 1;
/** What the kernel sends (`type`). */
export const PANEL_MESSAGE_TYPES = { state: 'state', update: 'update', error: 'error' } as const;
/** What the page asks (`op`, panel_comm.OPS). */
export type PanelOp = 'hello' | 'send' | 'stop' | 'new' | 'mode' | 'approve';
/** An approval's answer (`choice` of `approve`). */
export type ApprovalChoice = 'allow' | 'always' | 'deny';

/** A request from the page, without its version (PanelConnection.send adds it). */
export type PanelRequest =
  | { op: 'hello' | 'stop' | 'new' }
  | { op: 'send'; prompt: string }
  | { op: 'mode'; mode: string }
  | { op: 'approve'; request: string | number; tool_use_id?: string; choice: ApprovalChoice; feedback: string };
