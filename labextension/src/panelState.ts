/**
 * What the side panel knows: whether it is connected, the conversation's runs and their
 * items, the pending approvals, the session's header, and the line it says under the input.
 *
 * Pure (no DOM, no JupyterLab): each message from the kernel goes through `receive`, which
 * updates the state and returns what changed, so the view redraws only that. What the user
 * asks goes through `prompt`, `request` and `answer`, which return the request to send (or
 * null, with the line to say instead).
 */

import { ApprovalChoice, IPromptContext, PANEL_VERSION, PanelMessageType, PanelRequest } from './panelProtocol';
import type { Disconnected } from './panelTransport';
import type { IMcpServer } from './panelMcp';

export const HINT = 'Run %load_ext jupyter_agent in this notebook to use the agent here.';

/** What the Load button runs in the notebook's kernel (silently: no cell, no execution count). */
export const LOAD_CODE = '%load_ext jupyter_agent';

/** The reasons a Load button can help: the kernel is there but has not loaded the extension. */
const LOADABLE: ReadonlySet<Disconnected> = new Set<Disconnected>(['refused', 'restarting']);

/** What the panel says when it has no conversation, by reason. */
export const DISCONNECTED_TEXT: Record<Disconnected, string> = {
  'no-notebook': 'Open a notebook to use the agent.',
  'no-kernel': 'This notebook has no kernel. Start one, then ' + HINT.charAt(0).toLowerCase() + HINT.slice(1),
  'no-comms':
    "This notebook's kernel connection cannot take comms (another view opened the kernel first): open the notebook in its own tab.",
  refused: HINT,
  restarting: 'The kernel is restarting. ' + HINT
};

/** Tokens and cost (panel_json.usage_json). */
export interface IUsage {
  input_tokens?: number;
  output_tokens?: number;
  cost_usd?: number | null;
}

/** The session's header: model, mode, whether a run is going. */
export interface ISessionHeader {
  model?: string;
  permission_mode?: string;
  modes?: string[];
  replay?: string;
  busy?: boolean;
  usage?: IUsage;
  /** the context meter, "context 31k / 200k (16%), compacts at 160k", or "" before a request */
  context?: string;
  /** the conversation's MCP servers (`%agent mcp`) */
  mcp?: IMcpServer[];
  /** a conversation saved for this notebook can come back (`%agent resume`): the Resume button */
  resumable?: boolean;
}

/** Whether the panel offers Resume: a saved conversation waits, and nothing runs. */
export function offersResume(session: ISessionHeader | null, busy: boolean): boolean {
  return !!session && session.resumable === true && !busy;
}

/** A run's header; `reason`, `title`, `meaning` and `error` are set once it `ended`. */
export interface IRunHeader {
  id: string;
  origin?: string;
  status?: string;
  turns?: number;
  /** an outside agent's run (over MCP): its calls so far, shown instead of turns */
  calls?: number;
  usage?: IUsage;
  ended?: boolean;
  reason?: string;
  title?: string;
  meaning?: string;
  error?: string;
  /** the context meter as the run last measured it (see ISessionHeader.context) */
  context?: string;
  /** "variables changed: a, b" when the run's cells changed the kernel's names */
  variables?: string;
  /** whether the ended run can be undone: available, running, done, or "" */
  undo?: string;
  /** what its undo did, one line per change */
  undo_lines?: string[];
}

/** One item of a run as the kernel sends it (panel_json.item_json); `kind` says which fields it has. */
export interface IItem {
  key: string;
  kind: string;
  [field: string]: unknown;
}

/** A run in a message: its header, the items that changed, and (when it changed) the items' order. */
export interface IRunMessage {
  header: IRunHeader;
  items?: IItem[];
  order?: string[];
}

/** A pending approval. `id` answers it; `tool_use_id`, when the kernel sends it, names the call.
 * For NotebookRun, `question` and `code` are the message's question and the cell's code.
 * An outside agent's ask (over MCP) names who asks (`asker`: the client's name from its
 * `initialize`, text) and the page whose notebook it is about (`page`: that page's kernel
 * connection's client id); its card shows under that notebook too (notebookApprovals.ts). */
export interface IApproval {
  id: string | number;
  tool_use_id?: string | null;
  run?: string;
  tool: string;
  message?: string;
  question?: string;
  code?: string;
  diff?: string;
  input?: string;
  warning?: string;
  rules?: string[];
  asker?: string;
  page?: string;
}

/** What an approval card shows, in order: the line under its title, then the code (a cell
 * to run), the diff (an edit) or the input (anything else); `rawInput` is the input again,
 * folded, when the code or the diff is what is shown. */
export interface IApprovalParts {
  line: string;
  shown: { kind: 'code' | 'diff' | 'input'; text: string };
  rawInput: string | null;
}

/** The parts of an approval card, as the cell's card shows them: a NotebookRun shows the
 * cell's code, not the JSON of its input. */
export function approvalParts(ask: IApproval): IApprovalParts {
  const input = typeof ask.input === 'string' ? ask.input : '';
  if (typeof ask.code === 'string' && ask.code) {
    return { line: ask.question || ask.message || '', shown: { kind: 'code', text: ask.code }, rawInput: input };
  }
  if (typeof ask.diff === 'string' && ask.diff) {
    return { line: ask.message || '', shown: { kind: 'diff', text: ask.diff }, rawInput: input };
  }
  return { line: ask.message || '', shown: { kind: 'input', text: input }, rawInput: null };
}

/** A run as the panel knows it. */
export interface IRun {
  header: IRunHeader;
  items: Map<string, IItem>;
  order: string[];
}

/** What changed in one run. */
export interface IRunChange {
  id: string;
  /** Keys of the items drawn anew. */
  items: string[];
  /** Keys of the items gone. */
  removed: string[];
  /** The order changed: the view puts the items in `run.order`. */
  reordered: boolean;
}

/** What one step changed, for the view. */
export interface IChange {
  /** Everything is drawn anew (a connection or a disconnection). */
  reset: boolean;
  runs: IRunChange[];
  removedRuns: string[];
  approvals: boolean;
  session: boolean;
  /** The line under the input, when it changes. */
  say?: ISay;
}

/** The line under the input; `error` shows it as one. */
export interface ISay {
  text: string;
  error: boolean;
}

function change(fields: Partial<IChange> = {}): IChange {
  return { reset: false, runs: [], removedRuns: [], approvals: false, session: false, ...fields };
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** The side panel's state. */
export class PanelState {
  /** The kernel sent its state: requests can be sent. */
  connected = false;
  /** Why there is no conversation ('' when connected). */
  disconnectedText = DISCONNECTED_TEXT['no-notebook'];
  /** The kernel is there without the extension: the hint offers to load it. */
  loadable = false;
  session: ISessionHeader | null = null;
  /** The runs in the order they are shown. */
  readonly runs = new Map<string, IRun>();
  approvals: IApproval[] = [];

  /** A message from the kernel. */
  receive(data: unknown): IChange {
    if (!isObject(data) || data.v !== PANEL_VERSION) {
      const v = isObject(data) ? data.v : undefined;
      return change({
        say: {
          text: `This kernel's jupyter-agent speaks panel protocol ${String(v)}, this page ${PANEL_VERSION}: install the same version in the kernel and the server, then reload.`,
          error: true
        }
      });
    }
    const type = data.type as PanelMessageType;
    if (type === 'error') {
      return change({ say: { text: String(data.text), error: true } });
    }
    if (type === 'note') {
      return change({ say: { text: String(data.text), error: false } });
    }
    let out = change();
    if (type === 'state') {
      this.connected = true;
      this.disconnectedText = '';
      this.loadable = false;
      this.runs.clear();
      // a state starts over (another kernel's asks may share ids)
      this.approvals = [];
      out = change({ reset: true, say: { text: '', error: false } });
      this.mergeRuns(data.runs, out);
      this.setApprovals(data.approvals ?? [], out);
    } else if (type === 'update') {
      this.mergeRuns(data.runs, out);
      if (Array.isArray(data.run_ids)) {
        const live = new Set(data.run_ids.map(String));
        for (const id of Array.from(this.runs.keys())) {
          if (!live.has(id)) {
            this.runs.delete(id);
            out.removedRuns.push(id);
          }
        }
      }
      if (data.approvals !== undefined) {
        this.setApprovals(data.approvals, out);
      }
    }
    if (isObject(data.session)) {
      this.session = data.session as ISessionHeader;
      out.session = true;
    }
    return out;
  }

  /** The comm is gone (or was refused): nothing to show but why. */
  disconnect(reason: Disconnected): IChange {
    this.connected = false;
    this.disconnectedText = DISCONNECTED_TEXT[reason];
    this.loadable = LOADABLE.has(reason);
    this.runs.clear();
    this.approvals = [];
    this.session = null;
    return change({ reset: true, session: true, approvals: true, say: { text: '', error: false } });
  }

  /** A prompt typed by the user, with where the user is in the notebook (`context`, when
   * there is an active cell): the request to send, or null and why not. */
  prompt(text: string, context: IPromptContext | null = null): { request: PanelRequest | null; say: ISay } {
    const prompt = text.trim();
    if (!prompt) {
      return { request: null, say: { text: 'Write a message first.', error: false } };
    }
    if (!this.connected) {
      return { request: null, say: { text: HINT, error: true } };
    }
    return { request: { op: 'send', prompt, ...(context ? { context } : {}) }, say: { text: '', error: false } };
  }

  /** A click (stop, new, mode): the request, or null and the hint when not connected. */
  request(request: PanelRequest): { request: PanelRequest | null; say?: ISay } {
    return this.connected ? { request } : { request: null, say: { text: HINT, error: true } };
  }

  /** The answer to an approval: by the id the kernel sent, and the call's id when it sent one.
   * A note is sent with Deny only. */
  answer(ask: IApproval, choice: ApprovalChoice, feedback: string): { request: PanelRequest | null; say?: ISay } {
    const request: PanelRequest = {
      op: 'approve',
      request: ask.id,
      ...(typeof ask.tool_use_id === 'string' && ask.tool_use_id ? { tool_use_id: ask.tool_use_id } : {}),
      choice,
      feedback: choice === 'deny' ? feedback : ''
    };
    return this.request(request);
  }

  /** Whether a run is going (Send and New are off, Stop is on). */
  get busy(): boolean {
    return !!this.session?.busy;
  }

  private mergeRuns(runs: unknown, out: IChange): void {
    if (!Array.isArray(runs)) {
      return;
    }
    for (const message of runs as IRunMessage[]) {
      if (!isObject(message) || !isObject(message.header) || typeof message.header.id !== 'string') {
        continue;
      }
      out.runs.push(this.mergeRun(message));
    }
  }

  private mergeRun(message: IRunMessage): IRunChange {
    const id = message.header.id;
    let run = this.runs.get(id);
    if (!run) {
      run = { header: message.header, items: new Map(), order: [] };
      this.runs.set(id, run);
    }
    run.header = message.header;
    const runChange: IRunChange = { id, items: [], removed: [], reordered: false };
    for (const item of message.items ?? []) {
      if (!run.items.has(item.key)) {
        run.order.push(item.key); // shown last until an order says otherwise
      }
      run.items.set(item.key, item);
      runChange.items.push(item.key);
    }
    if (Array.isArray(message.order)) {
      const order = message.order;
      for (const key of Array.from(run.items.keys())) {
        if (!order.includes(key)) {
          run.items.delete(key);
          runChange.removed.push(key);
        }
      }
      run.order = order.filter(key => run.items.has(key));
      runChange.reordered = true;
    }
    return runChange;
  }

  private setApprovals(approvals: unknown, out: IChange): void {
    this.approvals = Array.isArray(approvals) ? (approvals as IApproval[]).filter(a => isObject(a)) : [];
    out.approvals = true;
  }
}

// -- derived text ------------------------------------------------------------------------
/**
 * "1,234 in · 56 out · ≈ $0.0123"; no cost when the kernel sends none (an offline replay), and
 * nothing when no token was spent (only an outside agent's calls, which use no model here).
 */
export function formatUsage(usage: IUsage | undefined): string {
  if (!usage || (!usage.input_tokens && !usage.output_tokens && !usage.cost_usd)) {
    return '';
  }
  const n = (x: number | undefined) => (x || 0).toLocaleString('en-US');
  const tokens = `${n(usage.input_tokens)} in · ${n(usage.output_tokens)} out`;
  return typeof usage.cost_usd === 'number' ? `${tokens} · ≈ $${usage.cost_usd.toFixed(4)}` : tokens;
}

/** The usage line: tokens, cost and, once a request was sent, the context meter. */
export function usageLine(usage: IUsage | undefined, context: string | undefined): string {
  return [formatUsage(usage), context ?? ''].filter(part => part).join(' · ');
}

/** "3 turns", or "2 calls" for an outside agent's run (it has no model, so no turns). */
export function turnsText(turns: number | undefined, calls?: number): string {
  if (typeof calls === 'number') {
    return `${calls} call${calls === 1 ? '' : 's'}`;
  }
  const n = turns ?? 0;
  return `${n} turn${n === 1 ? '' : 's'}`;
}

/** A normal end (one quiet line) rather than one that says what happened and what to do. */
export function endedNormally(header: IRunHeader): boolean {
  return header.reason === 'completed' || header.reason === 'max_turns';
}

/** Absolute paths shortened to their last part: the panel is narrow (the full text is the tooltip). */
export function shortPaths(text: string): string {
  return text.replace(/(?:\/[^\s/]+)+\/([^\s/]+)/g, '…/$1');
}

/** The class of one line of a unified diff: added, deleted, hunk header, or ''. */
export function diffLineClass(line: string): string {
  if (line.startsWith('+') && !line.startsWith('+++')) {
    return 'jp-AgentPanel-add';
  }
  if (line.startsWith('-') && !line.startsWith('---')) {
    return 'jp-AgentPanel-del';
  }
  return line.startsWith('@@') ? 'jp-AgentPanel-hunk' : '';
}

/** What a kernel's reply to the Load button's `%load_ext` says, as the line under the hint.
 * `reply` is the execute reply's content (status, ename, evalue). */
export function loadOutcome(reply: { status?: string; ename?: string; evalue?: string } | null): ISay {
  if (reply?.status === 'ok') {
    return { text: 'jupyter-agent is loaded in this kernel; connecting…', error: false };
  }
  if (reply?.status === 'error') {
    const what = [reply.ename, reply.evalue].filter(Boolean).join(': ') || 'an error';
    const missing = reply.ename === 'ModuleNotFoundError' || reply.ename === 'ImportError';
    return {
      text:
        `${LOAD_CODE} failed in this kernel (${what}).` +
        (missing
          ? " Install jupyter-agent in the kernel's environment (pip install jupyter-agent), restart the kernel, then Load again."
          : ' Run it in a cell to see the whole error.'),
      error: true
    };
  }
  return {
    text: `${LOAD_CODE} did not finish (${reply?.status ?? 'no reply'}): run it in a cell to see why.`,
    error: true
  };
}

/** Enter sends; Shift+Enter is a new line (and an input method composing text keeps Enter). */
export function isSendKey(event: { key: string; shiftKey: boolean; isComposing?: boolean }): boolean {
  return event.key === 'Enter' && !event.shiftKey && !event.isComposing;
}

/** Whether the panel opens when a notebook page starts: when the settings say so, and in
 * Notebook 7 (whose sidebars start closed, the panel hidden under View → Right Sidebar)
 * unless the user closed it there before. */
export function opensOnStart(options: { openOnStart: boolean; notebook7: boolean; closedByUser: boolean }): boolean {
  return options.openOnStart || (options.notebook7 && !options.closedByUser);
}
