/**
 * The side panel's protocol, page side: its names in one place. The kernel side is
 * jupyter_agent/jupyter/panel_comm.py.
 *
 * Page -> kernel: {v, op, ...arguments}: hello, send (prompt), stop, new, mode (mode),
 * approve (request, choice, feedback; tool_use_id when the approval carried one).
 * Kernel -> page: {v, type, ...}: state (everything), update (what changed), error (text).
 *
 * The constants have the names and shapes of the panel section of protocol.ts on the
 * branch that defines both protocols once: once both are in, they are re-exported from there.
 */

/** The comm target of the kernel side (panel_comm.TARGET). */
export const PANEL_TARGET = 'jupyter_agent.panel';
/** panel_comm.PROTOCOL_VERSION: a message of another version is refused and said. */
export const PANEL_VERSION = 1;
/** Page -> kernel `op`s (panel_comm.OPS). */
export const PANEL_OPS = ['hello', 'send', 'stop', 'new', 'mode', 'approve'] as const;
/** Kernel -> page `type`s. */
export const PANEL_MESSAGE_TYPES = ['state', 'update', 'error'] as const;
/** An approval's answers (`approve`'s `choice`). */
export const PANEL_CHOICES = ['allow', 'always', 'deny'] as const;

export type PanelOp = (typeof PANEL_OPS)[number];
export type PanelMessageType = (typeof PANEL_MESSAGE_TYPES)[number];
export type ApprovalChoice = (typeof PANEL_CHOICES)[number];

/** A request from the page, without its version (PanelConnection.send adds it). */
export type PanelRequest =
  | { op: Extract<PanelOp, 'hello' | 'stop' | 'new'> }
  | { op: Extract<PanelOp, 'send'>; prompt: string }
  | { op: Extract<PanelOp, 'mode'>; mode: string }
  | {
      op: Extract<PanelOp, 'approve'>;
      request: string | number;
      tool_use_id?: string;
      choice: ApprovalChoice;
      feedback: string;
    };
