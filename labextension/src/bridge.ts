/**
 * The live-notebook bridge, page side (docs/bridge.md): the comms and what comes on them.
 *
 * The kernel (jupyter_agent.jupyter.bridge) opens a comm to TARGET on %load_ext; this
 * page registers that target on every notebook's kernel, and also opens a comm itself
 * when a notebook's kernel connects (a page loaded after %load_ext, or reloaded). Each
 * comm is answered with a hello that says who this page is (its connection's clientId,
 * the session of its execute requests) and which notebook it shows. Requests carry
 * `to`: the clientId of the page that started the agent's run; other pages ignore them.
 * Each request is checked, answered once (a reply or a refusal with its code), and may
 * ask (`notify`) for a `changed` notice on the next change of the document after it.
 *
 * What the requests do is in their own modules: the document's version and state
 * (bridgeDocument.ts), `read` and its output budget (bridgeRead.ts), the edits
 * (bridgeEdits.ts), the cell runs (bridgeRuns.ts); sending one message, bridgeSend.ts.
 */

import { JupyterFrontEnd } from '@jupyterlab/application';
import { Notification } from '@jupyterlab/apputils';
import { PageConfig } from '@jupyterlab/coreutils';
import { INotebookTracker, NotebookPanel } from '@jupyterlab/notebook';
import { Kernel, KernelMessage } from '@jupyterlab/services';
import { IDisposable } from '@lumino/disposable';
import { agentPresence, forgetOnRestart } from './agentPresence';
import { BackgroundAsks } from './bridgeAsks';
import { BridgeDocument, JSONObject } from './bridgeDocument';
import { BridgeEdits, Reply } from './bridgeEdits';
import { readNotebook } from './bridgeRead';
import { BridgeRuns } from './bridgeRuns';
import { sendBridgeMessage } from './bridgeSend';
import { changesSources } from './changes';
import { showOutputs } from './displays';
import {
  BRIDGE_PAGE_CODES as CODES,
  BRIDGE_TARGET as TARGET,
  BRIDGE_VERSION as PROTOCOL_VERSION,
  BridgeError,
  IRequest,
  checkRequest
} from './protocol';

/** Wall-clock time in ms (sub-ms), comparable with the kernel's time.time(): the
 * timestamps replies carry for the benchmark's per-hop figures. */
function now(): number {
  return Math.round((performance.timeOrigin + performance.now()) * 100) / 100;
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

/** The bridge of one notebook panel: its comms, and the requests that come on them. */
class NotebookBridge implements IDisposable {
  private comms = new Set<Kernel.IComm>();
  private disposed = false;
  private readonly doc: BridgeDocument;
  private readonly edits: BridgeEdits;
  private readonly runs: BridgeRuns;
  /** An outside agent's asks while this notebook is in the background (bridgeAsks.ts). */
  private readonly asks: BackgroundAsks;

  /** When this notebook last became the page's current one, or its active cell changed (ms). */
  private focusedAt = 0;

  constructor(
    readonly panel: NotebookPanel,
    bringToFront: () => void,
    private readonly isCurrent: () => boolean = () => false,
    private readonly openPath: (path: string) => Promise<void> = async () => undefined
  ) {
    this.focusedAt = isCurrent() ? Date.now() : 0;
    panel.content.activeCellChanged.connect(this.onFocus, this);
    this.doc = new BridgeDocument(panel, transaction => this.onDocUpdate(transaction));
    this.edits = new BridgeEdits(this.doc, () => this.sendNotices());
    // Say goodbye so the kernel fails a waiting request at once, not after a timeout.
    window.addEventListener('beforeunload', this.onUnload);
    this.runs = new BridgeRuns(this.doc); // listens for clicks on the run widget's Stop
    this.asks = new BackgroundAsks(Notification, () => panel.context.path, bringToFront);
    // A kernel that restarts or is replaced cannot end its asks: they go with it.
    panel.sessionContext.kernelChanged.connect(this.onKernelChanged, this);
    panel.sessionContext.statusChanged.connect(this.onStatus, this);
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
    this.runs.dispose();
    this.doc.dispose();
    this.panel.sessionContext.kernelChanged.disconnect(this.onKernelChanged, this);
    this.panel.sessionContext.statusChanged.disconnect(this.onStatus, this);
    this.panel.content.activeCellChanged.disconnect(this.onFocus, this);
    this.asks.dispose();
  }

  /** The user worked in this notebook now: a `focus` answer says when. */
  onFocus(): void {
    if (this.isCurrent()) {
      this.focusedAt = Date.now();
    }
  }

  /** `focus`: whether the notebook is the page's current one, its active cell and the
   * cells selected (ids and indices; the kernel reads their sources itself). */
  private focus(): JSONObject {
    const notebook = this.panel.content;
    const active = notebook.activeCell;
    const selected: string[] = [];
    notebook.widgets.forEach(cell => {
      if (cell !== active && notebook.isSelectedOrActive(cell)) {
        selected.push(cell.model.id);
      }
    });
    return {
      path: this.panel.context.path,
      current: this.isCurrent(),
      focused_at: this.focusedAt,
      has_focus: document.hasFocus(),
      active_cell_id: active ? active.model.id : null,
      active_cell_type: active ? active.model.type : null,
      active_source: active ? active.model.sharedModel.getSource().slice(0, 100000) : null,
      active_index: notebook.activeCellIndex,
      selected_ids: selected.slice(0, 50)
    };
  }

  /** `open`: the notebook `path` (server-relative) opened in a tab of this page. */
  private async open(req: IRequest): Promise<JSONObject> {
    const path = req.path;
    if (typeof path !== 'string' || !path.endsWith('.ipynb')) {
      throw new BridgeError(CODES.badRequest, 'open needs the path of a notebook (.ipynb)');
    }
    await this.openPath(path);
    return { path };
  }

  private onKernelChanged(): void {
    this.asks.clear();
  }

  /** A restart from the page says `restarting`, a crash `autorestarting` or `dead`. A restart
   * through the server's API says nothing to the page; the fresh kernel's first status,
   * `starting`, may reach it (not always, measured: docs/mcp-server.md, "Not yet"). */
  private onStatus(_: unknown, status: string): void {
    if (status === 'restarting' || status === 'autorestarting' || status === 'starting' || status === 'dead') {
      this.asks.clear();
    }
  }

  private readonly onUnload = (): void => this.bye();

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
      this.asks.endFrom(comm);
      agentPresence.remove(this.panel, comm);
    };
    if (sayHello) {
      agentPresence.add(this.panel, comm); // the kernel opened it: %load_ext ran there
      this.send(comm, this.helloMessage());
    }
  }

  /** Send one message (bridgeSend.ts: its size budget, and no future kept for it). */
  private send(comm: Kernel.IComm, data: JSONObject): void {
    sendBridgeMessage(comm, data);
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
      reply(await this.answer(req, reply, comm));
    } catch (err) {
      if (replied) {
        // An edit answered as soon as the document held it (bridgeEdits.ts, applyEdit); what failed
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
  /** Comms told of a change of outputs only, waiting to hear of the next change of the
   * cells' sources (changes.ts): a second notice, `sources: true`, then nothing. */
  private notifySources = new Set<Kernel.IComm>();

  private armNotice(comm: Kernel.IComm, req: IRequest): void {
    if (req.notify === true) {
      this.notify.add(comm);
      this.notifySources.delete(comm);
    }
  }

  /** Tell the comms waiting for it of a change (`sources`: whether it may have changed
   * the cells' ids, types or sources). */
  private sendNotices(sources = true): void {
    const from = this.kernel?.clientId ?? '';
    const tell = (comm: Kernel.IComm) => this.send(comm, { v: PROTOCOL_VERSION, op: 'changed', from, sources });
    this.notify.forEach(tell);
    if (sources) {
      this.notifySources.forEach(comm => this.notify.has(comm) || tell(comm));
      this.notifySources.clear();
    } else {
      this.notify.forEach(comm => this.notifySources.add(comm));
    }
    this.notify.clear();
  }

  /** Each update of the document: a notice to the comms waiting for one (an agent edit's
   * own transaction aside: its change is in its reply). */
  private onDocUpdate(transaction: unknown): void {
    if (!this.doc.applying && (this.notify.size || this.notifySources.size)) {
      const sources = changesSources(transaction, this.doc.ycells());
      if (this.notify.size || sources) {
        this.sendNotices(sources);
      }
    }
  }

  private answer(req: IRequest, reply: Reply, comm: Kernel.IComm): Promise<JSONObject> | JSONObject {
    switch (req.op) {
      case 'hello':
        return this.hello();
      case 'version':
        return { version: this.doc.version() };
      case 'read':
        return readNotebook(this.doc, req);
      case 'insert':
        return this.edits.insert(req, reply);
      case 'replace':
        return this.edits.replace(req, reply);
      case 'delete':
        return this.edits.remove(req, reply);
      case 'run':
        return this.runs.run(req);
      case 'restore':
        return this.edits.restore(req, reply);
      case 'show_run':
        return this.runs.showRun(req);
      case 'ask':
        return this.asks.show(req, comm);
      case 'ask_end':
        return this.asks.end(req);
      case 'focus':
        return this.focus();
      case 'open':
        return this.open(req);
      case 'show_outputs':
        return showOutputs(this.panel, req);
    }
    throw new BridgeError(CODES.unknownOp, `unknown operation ${String(req.op)}`);
  }

  /** Who this page is and what it shows (a hello's result). */
  hello(): JSONObject {
    return {
      path: this.panel.context.path,
      server_root: PageConfig.getOption('serverRoot'),
      version: this.doc.version(),
      dirty: this.panel.context.model.dirty,
      app: PageConfig.getOption('appName') || 'JupyterLab',
      protocol: PROTOCOL_VERSION,
      notices: true,
      kernel_runs: true,
      asks: true,
      focus: true,
      open: true,
      moves: true
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
    const bridge = new NotebookBridge(
      panel,
      () => app.shell.activateById(panel.id),
      () => tracker.currentWidget === panel,
      async path => {
        await app.commands.execute('docmanager:open', { path, factory: 'Notebook' });
      }
    );
    const onCurrent = (_: unknown, current: NotebookPanel | null) => {
      if (current === panel) {
        bridge.onFocus();
      }
    };
    tracker.currentChanged.connect(onCurrent);
    panel.disposed.connect(() => tracker.currentChanged.disconnect(onCurrent));
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
}
