/**
 * The side panel's transport: the comm to the kernel's panel hub
 * (jupyter_agent/jupyter/panel_comm.py) and the messages that cross it.
 *
 * The panel opens a comm to PANEL_TARGET on the current notebook's kernel (registered by
 * `%load_ext jupyter_agent`; a kernel without it closes the comm at once). The kernel answers
 * with the whole state, then one `update` per frame. The page sends `send`, `stop`, `new`,
 * `mode` and `approve`. Nothing secret is in what the kernel sends (it redacts); the page
 * sends only what the user typed or clicked.
 *
 * After each cell the kernel may have loaded the extension: a refused panel tries again then.
 */

import { NotebookPanel } from '@jupyterlab/notebook';
import { Kernel, KernelMessage } from '@jupyterlab/services';
import { JSONObject } from '@lumino/coreutils';
import { IDisposable } from '@lumino/disposable';
import { ISignal, Signal } from '@lumino/signaling';
import { PANEL_TARGET, PANEL_VERSION, PanelRequest } from './panelProtocol';

/** Why the panel has no conversation to show (the state says it in words). */
export type Disconnected = 'no-notebook' | 'no-kernel' | 'no-comms' | 'refused' | 'restarting';

/** Drives one notebook's kernel at a time: opens, retries and closes the panel's comm. */
export class PanelConnection implements IDisposable {
  private notebook_: NotebookPanel | null = null;
  private kernel: Kernel.IKernelConnection | null = null;
  private comm: Kernel.IComm | null = null;
  /** The kernel answered on the current comm (it has the extension). */
  private answered = false;
  /** A cell ran since the last idle: it may have been `%load_ext jupyter_agent`. */
  private cellRan = false;
  /** A cell finished while an attempt to connect was on its way: try again if refused. */
  private retryIfRefused = false;
  private readonly received_ = new Signal<this, unknown>(this);
  private readonly disconnected_ = new Signal<this, Disconnected>(this);
  private disposed = false;

  /** Each message the kernel sends (its data, unchecked). */
  get received(): ISignal<this, unknown> {
    return this.received_;
  }

  /** The conversation is gone, and why. */
  get disconnected(): ISignal<this, Disconnected> {
    return this.disconnected_;
  }

  /** The notebook whose kernel is driven, or null. */
  get notebook(): NotebookPanel | null {
    return this.notebook_;
  }

  get isDisposed(): boolean {
    return this.disposed;
  }

  /** Drive the kernel of `panel` (the current notebook), or nothing. False if it is already. */
  bind(panel: NotebookPanel | null): boolean {
    if (panel === this.notebook_) {
      return false;
    }
    this.unwatch();
    this.notebook_ = panel;
    this.close();
    if (!panel) {
      this.disconnected_.emit('no-notebook');
      return true;
    }
    panel.sessionContext.kernelChanged.connect(this.onKernelChanged, this);
    panel.sessionContext.statusChanged.connect(this.onStatus, this);
    panel.sessionContext.iopubMessage.connect(this.onIOPub, this);
    void panel.sessionContext.ready.then(() => {
      if (this.notebook_ === panel) {
        this.open();
      }
    });
    return true;
  }

  /**
   * Run `code` (`%load_ext jupyter_agent`) in the kernel, silently as a user expects of a
   * button: no cell, no execution count, nothing in the notebook. Resolves with the
   * kernel's reply (null when there is no kernel or it did not answer); on "ok" the panel
   * connects again (a silent execute has no execute_input for onIOPub to see).
   */
  async load(code: string): Promise<KernelMessage.IExecuteReplyMsg['content'] | null> {
    const kernel = this.notebook_?.sessionContext.session?.kernel ?? null;
    if (!kernel) {
      return null;
    }
    let reply: KernelMessage.IExecuteReplyMsg['content'] | null = null;
    try {
      const future = kernel.requestExecute({ code, silent: true, store_history: false, allow_stdin: false });
      reply = (await future.done).content;
    } catch (err) {
      console.debug('jupyter-agent: the Load request got no reply', err); // the kernel went away
      return null;
    }
    if (reply.status === 'ok' && !this.disposed && kernel === this.notebook_?.sessionContext.session?.kernel) {
      this.close();
      this.open();
    }
    return reply;
  }

  /** Send a request to the kernel; false when no comm is open. */
  send(request: PanelRequest): boolean {
    if (!this.comm || this.comm.isDisposed) {
      return false;
    }
    // plain data (strings, numbers, arrays of them): JSON, though its interfaces do not say so
    this.comm.send({ v: PANEL_VERSION, ...request } as unknown as JSONObject);
    return true;
  }

  dispose(): void {
    if (this.disposed) {
      return;
    }
    this.disposed = true;
    this.unwatch();
    this.notebook_ = null;
    this.close();
    Signal.clearData(this);
  }

  private unwatch(): void {
    const context = this.notebook_?.sessionContext;
    if (context && !context.isDisposed) {
      context.kernelChanged.disconnect(this.onKernelChanged, this);
      context.statusChanged.disconnect(this.onStatus, this);
      context.iopubMessage.disconnect(this.onIOPub, this);
    }
  }

  private onKernelChanged(): void {
    this.close();
    this.open();
  }

  private onIOPub(_: unknown, msg: KernelMessage.IMessage): void {
    if (msg.header.msg_type === 'execute_input') {
      this.cellRan = true;
    }
  }

  /** After each cell the kernel may have loaded the extension: try again. Only cells
   * count: the kernel's busy/idle around a refused comm must not start another try. */
  private onStatus(_: unknown, status: string): void {
    if (status === 'restarting' || status === 'dead') {
      this.close();
      this.disconnected_.emit('restarting');
    } else if (status === 'idle' && this.cellRan) {
      this.cellRan = false;
      if (this.answered) {
        return;
      }
      if (this.comm) {
        this.retryIfRefused = true; // an earlier try is on its way; it may predate the cell
      } else {
        this.open();
      }
    }
  }

  private close(): void {
    const comm = this.comm;
    this.comm = null;
    this.answered = false;
    this.retryIfRefused = false;
    this.kernel = null;
    if (comm && !comm.isDisposed) {
      try {
        comm.close();
      } catch (err) {
        console.debug('jupyter-agent: the panel comm was already gone', err); // the kernel is gone
      }
    }
  }

  private open(): void {
    if (this.disposed) {
      return;
    }
    const kernel = this.notebook_?.sessionContext.session?.kernel ?? null;
    if (!kernel) {
      this.disconnected_.emit('no-kernel');
      return;
    }
    if (this.comm && this.kernel === kernel) {
      return; // already asked
    }
    if (!kernel.handleComms) {
      this.disconnected_.emit('no-comms');
      return;
    }
    this.kernel = kernel;
    let comm: Kernel.IComm;
    try {
      comm = kernel.createComm(PANEL_TARGET);
    } catch (err) {
      console.debug('jupyter-agent: the panel comm could not be created', err);
      this.disconnected_.emit('refused');
      return;
    }
    this.comm = comm;
    // Never return the promise from onMsg: the page would stop handling kernel messages.
    comm.onMsg = (msg: KernelMessage.ICommMsgMsg) => {
      if (this.comm === comm) {
        this.answered = true;
        this.received_.emit(msg.content.data);
      }
    };
    comm.onClose = () => {
      if (this.comm === comm) {
        this.comm = null;
        this.answered = false;
        this.disconnected_.emit('refused');
        if (this.retryIfRefused) {
          this.retryIfRefused = false;
          this.open();
        }
      }
    };
    void comm.open({ v: PANEL_VERSION, op: 'hello' }).done.catch(() => undefined);
  }
}
