/**
 * The two comm protocols between the kernel and this page, defined once for TypeScript.
 * jupyter_agent/jupyter/protocol.py defines the same names with the same values for the
 * kernel; tests/jupyter/test_protocol_parity.py parses this file and fails when a constant
 * differs or exists on one side only. docs/bridge.md describes the messages.
 *
 * The live-notebook bridge (bridge.ts ⇄ jupyter_agent/jupyter/bridge.py):
 * Request (kernel -> page):  {v, id, to, op, ...arguments}
 * Reply   (page -> kernel):  {v, re, from, ok: true, result, ms, at} | {v, re, from, ok: false, code, error}
 * Hello   (page -> kernel):  {v, op: "hello", from, result}  (unsolicited, when a comm opens)
 * `read` takes an optional `known_state`: the `state` of the caller's last read (or of its
 * last edit's reply); when the document has not changed at all since (outputs included),
 * the reply is only `{state, unchanged: true}`. `insert`, `replace`, `delete`, `restore`
 * and `run` take it too: when it is still the document's state, their reply carries a
 * `state` naming the document as the change left it (a run: only if nothing but its cell
 * changed meanwhile), and the caller applies the change to its copy instead of reading.
 * Any request may carry `notify: true`: after its reply the page sends one
 * `{v, op: "changed", from, sources}` on the next change of its document that is not an
 * agent edit (its hello's result says `notices: true`); after `sources: false` (outputs or
 * metadata only) a `sources: true` notice follows on the next change of the cells' sources.
 * `show_run` (`cell_id`, `msg_id`): the kernel's own execute request `msg_id` runs that
 * cell; the page shows it there and replies once it has (its hello says `kernel_runs: true`).
 * Each output is cut to BRIDGE_MAX_OUTPUT_CHARS, and all of
 * them to BRIDGE_MAX_READ_OUTPUT_CHARS, with a note of what was left out.
 * `ask` (`ask_id`, `asker`, `what`): an outside agent's call waits for the user's approval on
 * this page's notebook while it is not the current one; the page shows a notification until
 * `ask_end` (`ask_id`) (bridgeAsks.ts; its hello says `asks: true`).
 * `show_outputs` (`cell_id`, `outputs`): a run of that `%%agent` cell goes on while this page
 * loaded (a reload): the page shows the run's outputs there (displays.ts, showOutputs).
 * `run` takes `timeout_s`: past it the page interrupts the kernel and replies with status
 * "timeout".
 * `ms` is how long the page spent answering and `at` the wall-clock times (ms) it received
 * the request and sent the reply (figures for benchmarks only).
 */

// -- the live-notebook bridge ------------------------------------------------------------

/** The comm target both sides use. */
export const BRIDGE_TARGET = 'jupyter_agent.bridge';

/** Bumped on any incompatible change; a mismatch is refused with code "version". */
export const BRIDGE_VERSION = 2;

/** Operations the page answers. */
export const BRIDGE_OPS = [
  'hello',
  'version',
  'read',
  'insert',
  'replace',
  'delete',
  'run',
  'restore',
  'show_run',
  'ask',
  'ask_end',
  'focus',
  'open',
  'show_outputs'
] as const;
export type Op = (typeof BRIDGE_OPS)[number];

/** Bytes of JSON one bridge message may have: well under the 10 MiB a Tornado websocket
 * accepts (a larger message closes the page's kernel connection). */
export const BRIDGE_MAX_MESSAGE_BYTES = 4194304;

/** In a live read, the characters of one output's data beyond which it is cut, with a note. */
export const BRIDGE_MAX_OUTPUT_CHARS = 100000;

/** In a live read, the characters of all outputs beyond which later ones are left out. */
export const BRIDGE_MAX_READ_OUTPUT_CHARS = 1000000;

/** What is kept of a cut output: the first characters of its text, then the note. */
export const BRIDGE_CUT_OUTPUT_KEEP_CHARS = 2000;

/** The output_type of the note that stands for what a live read left out. */
export const BRIDGE_OMITTED_OUTPUT = 'stream';

/** What a run's reply says in `status`. */
export const BRIDGE_RUN_STATUSES = ['ok', 'error', 'interrupted', 'timeout'] as const;

/** Error codes of a refused request (the kernel adds "gone" and "no_answer"). */
export const BRIDGE_PAGE_CODES = {
  badRequest: 'bad_request',
  version: 'version',
  unknownOp: 'unknown_op',
  stale: 'stale',
  notFound: 'not_found',
  noKernel: 'no_kernel',
  tooLarge: 'too_large',
  sendFailed: 'send_failed',
  failed: 'failed'
} as const;

export interface IRequest {
  v: number;
  id: string;
  to?: string;
  op: Op;
  [key: string]: unknown;
}

/** A request's shape problem, or null when it can be handled. */
export function checkRequest(data: unknown): { code: string; error: string } | null {
  if (typeof data !== 'object' || data === null || Array.isArray(data)) {
    return { code: BRIDGE_PAGE_CODES.badRequest, error: 'a request must be a JSON object' };
  }
  const req = data as Record<string, unknown>;
  if (typeof req.id !== 'string' || !req.id) {
    return { code: BRIDGE_PAGE_CODES.badRequest, error: 'a request needs a string "id"' };
  }
  if (req.v !== BRIDGE_VERSION) {
    return {
      code: BRIDGE_PAGE_CODES.version,
      error: `protocol version ${String(req.v)} is not supported by this page (it speaks version ${BRIDGE_VERSION}): install matching jupyter-agent versions in the kernel and the server, then reload the page`
    };
  }
  if (typeof req.op !== 'string' || !(BRIDGE_OPS as readonly string[]).includes(req.op)) {
    return { code: BRIDGE_PAGE_CODES.unknownOp, error: `unknown operation ${JSON.stringify(req.op)}` };
  }
  return null;
}

/** A refusal that carries its protocol code. */
export class BridgeError extends Error {
  constructor(
    readonly code: string,
    message: string
  ) {
    super(message);
  }
}

// -- the side panel (panel.ts ⇄ jupyter_agent/jupyter/panel_comm.py) ---------------------

/** The comm target the panel opens (registered by `%load_ext jupyter_agent`). */
export const PANEL_TARGET = 'jupyter_agent.panel';

/** Bumped on any incompatible change of the panel's messages. */
export const PANEL_VERSION = 1;

/** Page -> kernel `op`s. */
export const PANEL_OPS = [
  'hello',
  'send',
  'stop',
  'new',
  'mode',
  'approve',
  'undo',
  'compact',
  'fix',
  'explain',
  'resume'
] as const;

/** Kernel -> page `type`s. */
export const PANEL_MESSAGE_TYPES = ['state', 'update', 'error', 'note'] as const;

/** The `kind` of a run's item as the panel draws it. */
export const PANEL_ITEM_KINDS = ['prompt', 'text', 'thinking', 'tool', 'notice', 'block', 'unknown'] as const;

/** An approval's answers (`approve`'s `choice`). */
export const PANEL_CHOICES = ['allow', 'always', 'deny'] as const;

// -- chat() (jupyter_agent/jupyter/chat.py, ipywidgets) ⇄ chatKeys.ts ---------------------

/** The class of chat()'s box: its input and Send button are found inside it. */
export const CHAT_CLASS = 'ja-chat';

/** The class of chat()'s input (an ipywidgets Textarea): Enter there sends (the send mark). */
export const CHAT_INPUT_CLASS = 'ja-chat-input';

/** The class of chat()'s Send button. */
export const CHAT_SEND_CLASS = 'ja-chat-send';

/** Ends chat()'s input value when the page asks to send it (U+2063, an invisible separator:
 * nothing shows while a busy kernel has not taken it yet): the input's own values reach the
 * kernel in order, a click on Send might overtake them. */
export const CHAT_SEND_MARK = '\u2063';
