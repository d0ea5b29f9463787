/**
 * The live-notebook bridge, page side (docs/bridge.md).
 *
 * The kernel (jupyter_agent.jupyter.bridge) opens a comm to TARGET on %load_ext; this
 * page registers that target on every notebook's kernel, and also opens a comm itself
 * when a notebook's kernel connects (a page loaded after %load_ext, or reloaded). Each
 * comm is answered with a hello that says who this page is (its connection's clientId,
 * the session of its execute requests) and which notebook it shows. Requests carry
 * `to`: the clientId of the page that started the agent's run; other pages ignore them.
 *
 * Every edit goes through the notebook's shared model, so it shows at once, is saved
 * as a person's edit would be, and is exactly one undo step (stopCapturing around it).
 * Runs use NotebookActions.runCells: the Shift+Enter path; past the request's time limit
 * the page interrupts the kernel (the kernel's own loop is busy with the cell).
 *
 * No message may come near the 10 MiB a Tornado websocket accepts (a larger one closes
 * the page's kernel connection): a read cuts each output and all of them to a budget, with
 * a note of what was left out, and a reply still over BRIDGE_MAX_MESSAGE_BYTES is sent as
 * a "too_large" refusal instead.
 */

import { JupyterFrontEnd } from '@jupyterlab/application';
import { Notification } from '@jupyterlab/apputils';
import { PageConfig } from '@jupyterlab/coreutils';
import { INotebookTracker, NotebookActions, NotebookPanel } from '@jupyterlab/notebook';
import { Kernel, KernelMessage } from '@jupyterlab/services';
import { IDisposable } from '@lumino/disposable';
import { agentPresence, forgetOnRestart } from './agentPresence';
import { applySteps, CellGone, checkSteps, stepsDone } from './restore';
import {
  BRIDGE_CUT_OUTPUT_KEEP_CHARS,
  BRIDGE_MAX_MESSAGE_BYTES,
  BRIDGE_MAX_OUTPUT_CHARS,
  BRIDGE_MAX_READ_OUTPUT_CHARS,
  BRIDGE_OMITTED_OUTPUT,
  BRIDGE_PAGE_CODES as CODES,
  BRIDGE_TARGET as TARGET,
  BRIDGE_VERSION as PROTOCOL_VERSION,
  BridgeError,
  IRequest,
  checkRequest
} from './protocol';

type JSONObject = Record<string, any>;
/** Sends a request's success reply (at most once). */
type Reply = (result: JSONObject) => void;

/** Wall-clock time in ms (sub-ms), comparable with the kernel's time.time(): the
 * timestamps replies carry for the benchmark's per-hop figures. */
function now(): number {
  return Math.round((performance.timeOrigin + performance.now()) * 100) / 100;
}

/** Whether the Yjs `type` is `root` or inside it. */
function within(type: any, root: any): boolean {
  for (let t = type; t; t = t._item?.parent) {
    if (t === root) {
      return true;
    }
  }
  return false;
}

/** The class of the run widget's Stop button (jupyter_agent/jupyter/runview.py). */
const STOP_BUTTON_CLASS = 'jupyter-agent-stop';

/** Bytes of a message as the comm sends it (JSON, UTF-8). */
function jsonBytes(data: JSONObject): number {
  return new TextEncoder().encode(JSON.stringify(data)).length;
}

/** The readable text of an output (what is kept of it when it is cut). */
function outputText(output: JSONObject): string {
  const join = (value: unknown) => (Array.isArray(value) ? value.join('') : typeof value === 'string' ? value : '');
  switch (output.output_type) {
    case 'stream':
      return join(output.text);
    case 'error':
      return `${String(output.ename)}: ${String(output.evalue)}\n${join(output.traceback)}`;
    default:
      return join(output.data?.['text/plain']);
  }
}

const thousands = (n: number) => n.toLocaleString('en-US');

/**
 * Cut each output of `cells` over BRIDGE_MAX_OUTPUT_CHARS, and every output once all of
 * them reach BRIDGE_MAX_READ_OUTPUT_CHARS (characters of their JSON), to the start of its
 * text and a note saying how much was left out and why: the model reads the note and can
 * ask for less.
 */
function capOutputs(cells: JSONObject[]): void {
  let budget = BRIDGE_MAX_READ_OUTPUT_CHARS;
  for (const cell of cells) {
    if (!Array.isArray(cell.outputs)) {
      continue;
    }
    cell.outputs = cell.outputs.map((output: JSONObject) => {
      const size = JSON.stringify(output).length;
      if (size <= BRIDGE_MAX_OUTPUT_CHARS && size <= budget) {
        budget -= size;
        return output;
      }
      const head = outputText(output).slice(0, Math.min(BRIDGE_CUT_OUTPUT_KEEP_CHARS, budget));
      budget = Math.max(0, budget - head.length);
      const why =
        size > BRIDGE_MAX_OUTPUT_CHARS
          ? `a live read carries at most ${thousands(BRIDGE_MAX_OUTPUT_CHARS)} characters of one output`
          : `a live read carries at most ${thousands(BRIDGE_MAX_READ_OUTPUT_CHARS)} characters of outputs in all`;
      const shown = head.length
        ? `only its first ${thousands(head.length)} characters of text are shown`
        : 'it was left out';
      const note =
        `[jupyter-agent: this ${String(output.output_type)} output has ${thousands(size)} characters; ${shown} ` +
        `(${why}). To see more of it, run code that shows less at a time: a slice, a summary, a search.]`;
      return { output_type: BRIDGE_OMITTED_OUTPUT, name: 'stdout', text: head ? `${head}\n${note}\n` : `${note}\n` };
    });
  }
}

/** Tell the user once per page that the kernel speaks another bridge version. */
let versionSaid = false;
function sayVersionMismatch(detail: string): void {
  if (versionSaid) {
    return;
  }
  versionSaid = true;
  Notification.error(
    `jupyter-agent: ${detail || 'the kernel speaks another bridge protocol version'} ` +
      '(reload the page; if it persists, install the same jupyter-agent version for the server and the kernel)',
    { autoClose: false }
  );
}

class NotebookBridge implements IDisposable {
  private comms = new Set<Kernel.IComm>();
  private runs = 0;
  private disposed = false;

  constructor(readonly panel: NotebookPanel) {
    // Say goodbye so the kernel fails a waiting request at once, not after a timeout.
    window.addEventListener('beforeunload', this.onUnload);
    // Capture: the click is seen before the widget's own handler, whatever that does with it.
    panel.node.addEventListener('click', this.interruptOnStop, true);
    panel.disposed.connect(() => this.dispose());
    // Another model (another document) is a change a kernel told of changes must hear of.
    panel.content.modelChanged.connect(() => this.sendNotices());
  }

  get isDisposed(): boolean {
    return this.disposed;
  }

  /** Say goodbye and remove every listener this bridge added. */
  dispose(): void {
    if (this.disposed) {
      return;
    }
    this.disposed = true;
    this.bye();
    window.removeEventListener('beforeunload', this.onUnload);
    this.panel.node.removeEventListener('click', this.interruptOnStop, true);
    this.watchedDoc?.off?.('update', this.onDocUpdate);
    this.watchedDoc = null;
  }

  private readonly onUnload = (): void => this.bye();

  /**
   * The run widget's Stop cannot reach the kernel while a cell the agent started through
   * this page is executing there: the click waits behind the cell. So a click on it also
   * interrupts that cell, as the toolbar's stop button would.
   */
  private readonly interruptOnStop = (event: MouseEvent): void => {
    const target = event.target as HTMLElement | null;
    if (this.runs > 0 && target?.closest?.(`.${STOP_BUTTON_CLASS}`)) {
      void this.kernel?.interrupt();
    }
  };

  bye(): void {
    const from = this.kernel?.clientId ?? '';
    this.comms.forEach(comm => this.send(comm, { v: PROTOCOL_VERSION, op: 'bye', from }));
    this.comms.clear();
  }

  get kernel(): Kernel.IKernelConnection | null {
    return this.panel.sessionContext.session?.kernel ?? null;
  }

  /** The unsolicited hello: who this page is and what it shows. */
  helloMessage(): JSONObject {
    return { v: PROTOCOL_VERSION, op: 'hello', from: this.kernel?.clientId ?? '', result: this.hello() };
  }

  /** Serve a comm: answer each request addressed to this page (and say hello first
   * when the kernel opened it). */
  attach(comm: Kernel.IComm, sayHello: boolean): void {
    const clientId = this.kernel?.clientId ?? '';
    // Never return the promise from onMsg: the page would stop handling kernel messages.
    comm.onMsg = (msg: KernelMessage.ICommMsgMsg) => {
      void this.handle(comm, clientId, msg.content.data);
    };
    this.comms.add(comm);
    comm.onClose = () => {
      this.comms.delete(comm);
      agentPresence.remove(this.panel, comm);
    };
    if (sayHello) {
      agentPresence.add(this.panel, comm); // the kernel opened it: %load_ext ran there
      this.send(comm, this.helloMessage());
    }
  }

  /** Send one message; a reply over BRIDGE_MAX_MESSAGE_BYTES, or one the comm could not
   * send, goes as a refusal with its code instead (the kernel then tells the real cause). */
  private send(comm: Kernel.IComm, data: JSONObject): void {
    if (comm.isDisposed) {
      return;
    }
    let message = data;
    const size = jsonBytes(data);
    if (size > BRIDGE_MAX_MESSAGE_BYTES && 're' in data) {
      message = {
        v: PROTOCOL_VERSION,
        re: data.re,
        from: data.from,
        ok: false,
        code: CODES.tooLarge,
        error: `the page's answer has ${thousands(size)} bytes (the notebook's cells are too large to send at once)`
      };
    }
    try {
      comm.send(message as any);
    } catch (err) {
      console.warn('jupyter-agent: could not answer the kernel', err);
      if ('re' in data && message.ok !== false) {
        this.send(comm, {
          v: PROTOCOL_VERSION,
          re: data.re,
          from: data.from,
          ok: false,
          code: CODES.sendFailed,
          error: String(err)
        });
      }
    }
  }

  private async handle(comm: Kernel.IComm, clientId: string, data: unknown): Promise<void> {
    const received = now();
    const req = data as IRequest;
    if (req && typeof req === 'object' && 're' in (req as any)) {
      const refusal = req as JSONObject;
      if (refusal.ok === false && refusal.code === CODES.version && refusal.re === null) {
        sayVersionMismatch(String(refusal.error ?? '')); // the kernel refused our hello
      }
      return; // otherwise a reply echoed back to us by another page: nothing to do
    }
    const problem = checkRequest(data);
    const re = req && typeof req === 'object' && typeof req.id === 'string' ? req.id : null;
    if (problem) {
      this.send(comm, { v: PROTOCOL_VERSION, re, from: clientId, ok: false, ...problem });
      return;
    }
    if (req.to !== undefined && req.to !== clientId) {
      return; // another tab's run: only the page that started it answers
    }
    // How long the page itself spent on the request (ms), so a benchmark can tell the
    // page's work from the transport and the page's event loop queue.
    const started = performance.now();
    let replied = false;
    const reply: Reply = result => {
      if (!replied) {
        replied = true;
        const ms = Math.round((performance.now() - started) * 10) / 10;
        this.send(comm, { v: PROTOCOL_VERSION, re, from: clientId, ok: true, result, ms, at: [received, now()] });
        this.armNotice(comm, req);
      }
    };
    try {
      reply(await this.answer(req, reply));
    } catch (err) {
      if (replied) {
        // An edit answered as soon as the document held it (see applyEdit); what failed
        // is JupyterLab's own work after it (its view of the change). The edit stands.
        console.error('jupyter-agent: after an applied edit', err);
        return;
      }
      const code = err instanceof BridgeError ? err.code : CODES.failed;
      const error = err instanceof Error ? err.message : String(err);
      this.send(comm, { v: PROTOCOL_VERSION, re, from: clientId, ok: false, code, error });
      this.armNotice(comm, req);
    }
  }

  /** Comms whose kernel asked (`notify: true`) to be told of the next change of the
   * document after the reply it got: one `changed` notice each, then nothing until its
   * next request is answered. The kernel trusts its last read of an unchanged document
   * without asking, until a notice comes (docs/bridge.md). */
  private notify = new Set<Kernel.IComm>();
  /** True while an agent edit's own transaction runs: its change is in its reply. */
  private applying = false;

  private armNotice(comm: Kernel.IComm, req: IRequest): void {
    if (req.notify === true) {
      this.notify.add(comm);
    }
  }

  private sendNotices(): void {
    const from = this.kernel?.clientId ?? '';
    this.notify.forEach(comm => this.send(comm, { v: PROTOCOL_VERSION, op: 'changed', from }));
    this.notify.clear();
  }

  private answer(req: IRequest, reply: Reply): Promise<JSONObject> | JSONObject {
    switch (req.op) {
      case 'hello':
        return this.hello();
      case 'version':
        return { version: this.version() };
      case 'read':
        return this.read(req);
      case 'insert':
        return this.insert(req, reply);
      case 'replace':
        return this.replace(req, reply);
      case 'delete':
        return this.remove(req, reply);
      case 'run':
        return this.run(req);
      case 'restore':
        return this.restore(req, reply);
    }
    throw new BridgeError(CODES.unknownOp, `unknown operation ${String(req.op)}`);
  }

  // -- the document ----------------------------------------------------------------
  private get shared(): any {
    const model = this.panel.content.model;
    if (!model) {
      throw new BridgeError(CODES.failed, 'the notebook is not loaded in the page');
    }
    return model.sharedModel;
  }

  hello(): JSONObject {
    return {
      path: this.panel.context.path,
      server_root: PageConfig.getOption('serverRoot'),
      version: this.version(),
      dirty: this.panel.context.model.dirty,
      app: PageConfig.getOption('appName') || 'JupyterLab',
      protocol: PROTOCOL_VERSION,
      notices: true
    };
  }

  private cachedVersion: string | null = null;
  private watchedDoc: any = null;
  private updates = 0;
  private readonly onDocUpdate = (): void => {
    this.cachedVersion = null;
    this.updates++;
    if (!this.applying && this.notify.size) {
      this.sendNotices();
    }
  };

  /** A hash of the cells' ids, types and sources: what an agent edit must not race with.
   * Outputs and execution counts are left out (running a cell is not an edit). Kept until
   * the document changes (any Yjs update), so a check costs nothing on an unchanged
   * notebook of thousands of cells. */
  version(): string {
    const ydoc = this.watch();
    if (this.cachedVersion === null || !ydoc) {
      this.cachedVersion = this.computeVersion();
    }
    return this.cachedVersion;
  }

  /** The document's Yjs doc, its updates watched (they clear the version and move the state). */
  private watch(): any {
    const ydoc = this.shared.ydoc;
    if (ydoc !== this.watchedDoc) {
      this.watchedDoc?.off?.('update', this.onDocUpdate);
      this.watchedDoc = ydoc;
      this.cachedVersion = null;
      ydoc?.on?.('update', this.onDocUpdate);
    }
    return ydoc;
  }

  private computeVersion(): string {
    let h = 0x811c9dc5;
    const mix = (text: string) => {
      for (let i = 0; i < text.length; i++) {
        h ^= text.charCodeAt(i);
        h = Math.imul(h, 0x01000193);
      }
      h ^= 0x1f;
      h = Math.imul(h, 0x01000193);
    };
    // From the Yjs document itself: an edit's reply needs the version before JupyterLab's
    // observers have brought `sharedModel.cells` up to date (see applyEdit).
    const cells = this.ycells().toArray();
    for (const cell of cells) {
      mix(String(cell.get('id')));
      mix(String(cell.get('cell_type')));
      mix(String(cell.get('source') ?? ''));
    }
    return `live-${cells.length}-${(h >>> 0).toString(16)}`;
  }

  /** The document's Yjs array of cells (each a Y.Map): what is saved and undone. */
  private ycells(): any {
    return this.shared.ydoc.getArray('cells');
  }

  /** Changes with any change of the document (outputs and metadata too, unlike the
   * version), and with the document itself (a reload): what a read may be reused for. */
  private state(): string {
    const ydoc = this.watch();
    return `${ydoc?.guid ?? 'doc'}:${this.updates}`;
  }

  /** The state an agent edit's reply names (`<doc>:edit-<n>`): the reply leaves before
   * the edit's transaction has ended (see applyEdit), so before the state it ends in is
   * known; once it has ended, in the same synchronous task, `afterEdit` maps the name to
   * that state. A read that knows the name is then "unchanged" exactly when the document
   * is still as the edit left it (only the latest edit's name is kept). */
  private edits = 0;
  private afterEdit: { name: string; state: string } | null = null;

  private resolveState(known: unknown): unknown {
    return this.afterEdit !== null && known === this.afterEdit.name ? this.afterEdit.state : known;
  }

  /** Whether the caller's copy, read at the request's `known_state`, is the document now:
   * only then may the reply of its edit or run name a state to read against (the caller
   * brings its copy up to date with the change it asked for, and nothing else). */
  private holdsKnownState(req: IRequest): boolean {
    return typeof req.known_state === 'string' && this.resolveState(req.known_state) === this.state();
  }

  /** The whole notebook; only `{state, unchanged: true}` when the reader's copy, read at
   * `known_state` (a read's state, or an edit's), is still the document (a re-read of
   * 2,000 cells then costs nothing). */
  read(req: IRequest): JSONObject {
    const state = this.state();
    if (typeof req.known_state === 'string' && this.resolveState(req.known_state) === state) {
      return { state, unchanged: true };
    }
    const shared = this.shared;
    const cells = (shared.cells as any[]).map(cell => cell.toJSON());
    capOutputs(cells);
    const metadata = shared.getMetadata();
    return {
      path: this.panel.context.path,
      version: this.version(),
      state,
      cells,
      metadata: { kernelspec: metadata.kernelspec, language_info: metadata.language_info }
    };
  }

  private checkVersion(req: IRequest): void {
    const expected = req.expected_version;
    if (typeof expected === 'string' && expected !== this.version()) {
      throw new BridgeError(
        CODES.stale,
        'The notebook was changed in the page since it was read (the user typed, or cells moved).'
      );
    }
  }

  private indexOf(id: unknown): number {
    if (typeof id !== 'string') {
      throw new BridgeError(CODES.badRequest, 'a "cell_id" (string) is required');
    }
    const index = (this.shared.cells as any[]).findIndex(cell => cell.id === id);
    if (index < 0) {
      throw new BridgeError(CODES.notFound, `Cell with ID "${id}" not found in the open notebook.`);
    }
    return index;
  }

  /**
   * Apply one agent edit as exactly one undo step (stopCapturing before and after it) and
   * answer it as soon as the document holds it.
   *
   * JupyterLab builds its view of a change (for an insert, the cell's widget and editor)
   * synchronously in the Yjs observers at the end of the edit's transaction: most of the
   * page's time on a large notebook. The reply does not wait for that: on the document's
   * `beforeObserverCalls` (the transaction's changes are integrated, no observer has run
   * yet) `outcome(result)` reads the edit back from the Yjs document, and only when the
   * document shows it is the success reply sent, then the observers and the undo manager
   * run in the same synchronous task (nothing else runs in between). If the edit throws,
   * or the document does not show it, no success is sent: the error is the reply.
   */
  private applyEdit<T>(
    req: IRequest,
    edit: () => T,
    outcome: (result: T) => JSONObject | null,
    reply: Reply,
    cellIndex?: number
  ): JSONObject {
    const followed = this.holdsKnownState(req);
    const shared = this.shared;
    const ydoc = shared.ydoc;
    const managers = [shared.undoManager];
    const cell = cellIndex !== undefined ? shared.cells[cellIndex] : undefined;
    if (cell?.undoManager && cell.undoManager !== shared.undoManager) {
      managers.push(cell.undoManager);
    }
    let done = false;
    let result: T | undefined;
    let answer: JSONObject | null = null;
    const name = `${ydoc?.guid ?? 'doc'}:edit-${++this.edits}`;
    const answerOf = (): JSONObject | null => {
      const found = outcome(result as T);
      return found === null || !followed ? found : { ...found, state: name };
    };
    let sentEarly = false;
    const early = () => {
      if (done && answer === null) {
        answer = answerOf();
        if (answer !== null) {
          reply(answer);
          sentEarly = true;
        }
      }
    };
    managers.forEach(m => m?.stopCapturing());
    ydoc.on('beforeObserverCalls', early);
    this.watch();
    const updates = this.updates;
    this.applying = true;
    try {
      shared.transact(() => {
        result = edit();
        done = true;
      });
    } finally {
      this.applying = false;
      ydoc.off('beforeObserverCalls', early);
      managers.forEach(m => m?.stopCapturing());
    }
    answer = answer ?? answerOf();
    if (answer === null) {
      throw new BridgeError(CODES.failed, 'The edit did not reach the notebook in the page.');
    }
    if (this.updates !== updates + 1) {
      // An observer changed the document further, within the edit's transaction: that is
      // not in the reply. The name stands for no state, and a kernel told of no change
      // since the reply is told now.
      this.afterEdit = null;
      if (sentEarly) {
        this.sendNotices();
      } else {
        delete answer.state;
      }
      return answer;
    }
    if (typeof answer.version === 'string') {
      // The version the reply read from the document is still the version: the next
      // request need not hash every cell again.
      this.cachedVersion = answer.version;
    }
    if (followed) {
      // The transaction has ended (its observers and update events ran, nothing else did):
      // the state the reply's name stands for.
      this.afterEdit = { name, state: this.state() };
    }
    return answer;
  }

  insert(req: IRequest, reply: Reply): JSONObject {
    this.checkVersion(req);
    const shared = this.shared;
    const index = req.index;
    const count = (shared.cells as any[]).length;
    if (typeof index !== 'number' || !Number.isInteger(index) || index < 0 || index > count) {
      throw new BridgeError(CODES.badRequest, `insert position must be 0..${count}`);
    }
    const type = req.cell_type === 'markdown' || req.cell_type === 'raw' ? req.cell_type : 'code';
    if (typeof req.source !== 'string') {
      throw new BridgeError(CODES.badRequest, 'insert needs a string "source"');
    }
    return this.applyEdit(
      req,
      () => shared.insertCell(index, { cell_type: type, source: req.source, metadata: {} }),
      cell => this.edited(cell, index),
      reply
    );
  }

  /** An edit's reply when the document holds `cell` at `index`, else null. */
  private edited(cell: any, index: number, source?: string): JSONObject | null {
    const ycells = this.ycells();
    if (!cell || ycells.get(index) !== cell.ymodel) {
      return null;
    }
    if (source !== undefined && cell.getSource() !== source) {
      return null;
    }
    return { cell: cell.toJSON(), index, version: this.computeVersion() };
  }

  replace(req: IRequest, reply: Reply): JSONObject {
    this.checkVersion(req);
    if (typeof req.source !== 'string') {
      throw new BridgeError(CODES.badRequest, 'replace needs a string "source"');
    }
    const source = req.source;
    const shared = this.shared;
    const index = this.indexOf(req.cell_id);
    const old = shared.cells[index];
    const type = typeof req.cell_type === 'string' ? req.cell_type : old.cell_type;
    if (type !== old.cell_type) {
      // A cell cannot change type in place: swap it for a new one with the same id.
      return this.applyEdit(
        req,
        () => {
          const json = old.toJSON();
          shared.deleteCell(index);
          return shared.insertCell(index, { id: json.id, cell_type: type, source, metadata: json.metadata ?? {} });
        },
        cell => this.edited(cell, index, source),
        reply
      );
    }
    return this.applyEdit(
      req,
      () => {
        old.setSource(source);
        if (old.cell_type === 'code') {
          old.clearOutputs?.('jupyter-agent') ?? old.setOutputs([]);
          old.execution_count = null;
        }
        return old;
      },
      cell => this.edited(cell, index, source),
      reply,
      index
    );
  }

  remove(req: IRequest, reply: Reply): JSONObject {
    this.checkVersion(req);
    const shared = this.shared;
    const index = this.indexOf(req.cell_id);
    const old = shared.cells[index];
    const json = old.toJSON();
    const count = this.ycells().length;
    return this.applyEdit(
      req,
      () => shared.deleteCell(index),
      () => {
        const ycells = this.ycells();
        const gone = ycells.length === count - 1 && !ycells.toArray().includes(old.ymodel);
        return gone ? { cell: json, index, version: this.computeVersion() } : null;
      },
      reply
    );
  }

  /** Put cells back as they were before an agent run (its undo): one undo step. */
  restore(req: IRequest, reply: Reply): JSONObject {
    this.checkVersion(req);
    const steps = checkSteps(req.steps);
    if (typeof steps === 'string') {
      throw new BridgeError(CODES.badRequest, steps);
    }
    const shared = this.shared;
    return this.applyEdit(
      req,
      () => {
        try {
          return applySteps(shared, steps);
        } catch (problem) {
          throw problem instanceof CellGone ? new BridgeError(CODES.notFound, problem.message) : problem;
        }
      },
      placed => (stepsDone(shared, steps, placed) ? { placed, version: this.computeVersion() } : null),
      reply
    );
  }

  /** Run one cell as Shift+Enter would, in this page's kernel; reply when it is done. */
  async run(req: IRequest): Promise<JSONObject> {
    this.checkVersion(req);
    const index = this.indexOf(req.cell_id);
    const notebook = this.panel.content;
    const widget = notebook.widgets[index];
    const kernel = this.kernel;
    if (!kernel) {
      throw new BridgeError(CODES.noKernel, 'the notebook has no kernel in the page');
    }
    // The reply names the state the run leaves the document in only when the caller's copy
    // was the document when the run began and nothing but this cell changed meanwhile (its
    // outputs, count, metadata): the caller then takes the cell from the reply.
    let followed = this.holdsKnownState(req);
    const ydoc = this.shared.ydoc;
    const ycell = (widget.model.sharedModel as any).ymodel;
    const watch = (transaction: any): void => {
      transaction.changed?.forEach((_keys: unknown, type: any) => {
        followed = followed && within(type, ycell);
      });
    };
    ydoc.on('afterTransaction', watch);
    const wasEditing = notebook.mode === 'edit';
    const execution = NotebookActions.runCells(notebook, [widget], this.panel.sessionContext);
    if (wasEditing) {
      notebook.mode = 'edit'; // runCells switches to command mode; keep the user typing
    }
    this.runs++;
    // The time limit: the kernel cannot keep it (its loop is busy with this very cell), so
    // the page interrupts the kernel, as the run widget's Stop does.
    const limit = typeof req.timeout_s === 'number' && req.timeout_s > 0 ? req.timeout_s : null;
    let timedOut = false;
    const timer =
      limit === null
        ? null
        : window.setTimeout(() => {
            timedOut = true;
            void kernel.interrupt();
          }, limit * 1000);
    let ok: boolean;
    try {
      ok = await execution;
    } finally {
      if (timer !== null) {
        window.clearTimeout(timer);
      }
      this.runs--;
      ydoc.off('afterTransaction', watch);
    }
    const json = widget.model.toJSON() as JSONObject;
    const outputs = (json.outputs as JSONObject[]) ?? [];
    const error = outputs.find(o => o.output_type === 'error');
    let status = ok ? 'ok' : 'error';
    if (timedOut) {
      status = 'timeout';
    } else if (error && error.ename === 'KeyboardInterrupt') {
      status = 'interrupted';
    } else if (error) {
      status = 'error';
    }
    capOutputs([json]);
    return {
      cell: json,
      index,
      outputs: json.outputs ?? [],
      execution_count: json.execution_count ?? null,
      status,
      version: this.version(),
      ...(followed ? { state: this.state() } : {})
    };
  }
}

/**
 * Registers the bridge on every notebook's kernel and opens it from the page's side
 * when a kernel connects.
 */
export function activateBridge(app: JupyterFrontEnd, tracker: INotebookTracker): void {
  const registered = new WeakSet<Kernel.IKernelConnection>();

  const connect = (panel: NotebookPanel) => {
    const bridge = new NotebookBridge(panel);
    forgetOnRestart(panel);
    const onKernel = () => {
      const kernel = panel.sessionContext.session?.kernel;
      if (!kernel || registered.has(kernel)) {
        return;
      }
      registered.add(kernel);
      if (!kernel.handleComms) {
        // Only the first connection to a kernel in a page handles comms (docs/bridge.md).
        console.warn(
          `jupyter-agent: ${panel.context.path}'s kernel connection does not handle comms (another view opened it first); the agent cannot reach this notebook live.`
        );
        return;
      }
      kernel.registerCommTarget(TARGET, (comm: Kernel.IComm, msg: KernelMessage.ICommOpenMsg) => {
        const v = (msg.content.data as JSONObject | undefined)?.v;
        if (v !== PROTOCOL_VERSION) {
          // Still say hello: the kernel records the mismatch and tells the agent's run too.
          sayVersionMismatch(
            `the kernel's jupyter-agent speaks bridge protocol ${String(v)}, this page ${PROTOCOL_VERSION}`
          );
        }
        bridge.attach(comm, true);
      });
      // A kernel that loaded the extension before this page opened has its target
      // registered: say hello from here. Without it, the kernel just closes the comm.
      // kernel.info resolves once the connection has the kernel's info (requestKernelInfo
      // made here, before the connection is up, never resolves).
      void kernel.info.then(() => {
        if (kernel.isDisposed || panel.isDisposed) {
          return;
        }
        try {
          const comm = kernel.createComm(TARGET);
          bridge.attach(comm, false);
          // A kernel without the extension closes the comm while it handles the open: a
          // comm still open once that request is done means jupyter_agent is loaded there.
          void comm
            .open(bridge.helloMessage() as any)
            .done.then(() => {
              if (!comm.isDisposed && kernel === panel.sessionContext.session?.kernel) {
                agentPresence.add(panel, comm);
              }
            })
            .catch(err => console.debug('jupyter-agent: the bridge comm was not kept', err));
        } catch (err) {
          console.debug('jupyter-agent: bridge not opened', err);
        }
      });
    };
    panel.sessionContext.kernelChanged.connect(onKernel);
    void panel.sessionContext.ready.then(onKernel);
    onKernel();
  };

  tracker.forEach(connect);
  tracker.widgetAdded.connect((_, panel) => connect(panel));
  void app;
}
