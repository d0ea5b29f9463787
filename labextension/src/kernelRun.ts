/**
 * A cell run the kernel made itself, shown in its cell (docs/bridge.md, "Runs the kernel
 * makes itself").
 *
 * For a NotebookRun of this notebook the agent's kernel sends the cell's source as an
 * execute request to its own shell socket and collects the result itself, so the agent
 * never waits for this page's event loop (jupyter_agent/jupyter/self_run.py). Just before,
 * it tells the page over the bridge "request M runs cell C" (`show_run`); IOPub is ordered,
 * so that comes before any message of M. The cell's OutputArea is then given a stand-in
 * for the kernel future of M (this page did not send M, so the kernel connection has no
 * future for it), fed with M's IOPub messages: JupyterLab's own output handling applies
 * (streams merged, clear_output with wait, display ids and their updates, results and
 * errors), the prompt shows [*] while M runs and M's execution count when it is done, and
 * the outputs land in the notebook's document (saved with it, seen by a later read).
 */

import { ICodeCellModel } from '@jupyterlab/cells';
import { OutputArea } from '@jupyterlab/outputarea';
import { Kernel, KernelMessage } from '@jupyterlab/services';
import { PromiseDelegate } from '@lumino/coreutils';

/** The execution count a shown run ended with (null: the run was replaced or the kernel went). */
type Shown = number | null;

const KERNEL_GONE: ReadonlyArray<Kernel.Status> = ['dead', 'restarting', 'autorestarting'];

/**
 * A stand-in for the future of an execute request another client sent: what an OutputArea
 * needs of a future (onIOPub, onReply, onStdin, done, dispose), fed from the kernel
 * connection's `iopubMessage` signal with the messages whose parent is that request.
 * Like JupyterLab's own futures it lives on after the run (until the cell runs again), so
 * a later `update_display_data` of a display this run made reaches it.
 */
export class ObservedRun {
  onIOPub: (msg: KernelMessage.IIOPubMessage) => void | PromiseLike<void> = () => undefined;
  onReply: (msg: KernelMessage.IExecuteReplyMsg) => void | PromiseLike<void> = () => undefined;
  onStdin: (msg: KernelMessage.IStdinMessage) => void | PromiseLike<void> = () => undefined;
  private readonly shown = new PromiseDelegate<Shown>();
  private count: number | null = null;
  private finished = false;
  private disposedFlag = false;
  /** Display ids this run's outputs carry: another request's updates of them are ours too. */
  private readonly displayIds = new Set<string>();

  constructor(
    private readonly kernel: Kernel.IKernelConnection,
    readonly msgId: string
  ) {
    kernel.iopubMessage.connect(this.onMessage, this);
    kernel.statusChanged.connect(this.onStatus, this);
  }

  /** Resolves with the run's execution count once its `idle` status has been handled. */
  get done(): Promise<Shown> {
    return this.shown.promise;
  }

  get isDisposed(): boolean {
    return this.disposedFlag;
  }

  /** JupyterLab's futures take message hooks; an observed run has none to run. */
  registerMessageHook(): void {
    return;
  }

  removeMessageHook(): void {
    return;
  }

  /** The cell was run again (or went): stop listening; a run not yet done ends here. */
  dispose(): void {
    if (this.disposedFlag) {
      return;
    }
    this.disposedFlag = true;
    this.kernel.iopubMessage.disconnect(this.onMessage, this);
    this.kernel.statusChanged.disconnect(this.onStatus, this);
    this.finish(null);
  }

  private finish(count: Shown): void {
    if (!this.finished) {
      this.finished = true;
      this.shown.resolve(count);
    }
  }

  private onStatus(_: Kernel.IKernelConnection, status: Kernel.Status): void {
    if (KERNEL_GONE.includes(status)) {
      this.finish(null); // no idle will come for this run
    }
  }

  private onMessage(_: Kernel.IKernelConnection, msg: KernelMessage.IIOPubMessage): void {
    const parent = msg.parent_header as Partial<KernelMessage.IHeader>;
    const type = msg.header.msg_type;
    const displayId = ((msg.content as any).transient ?? {}).display_id;
    if (parent?.msg_id !== this.msgId) {
      // Another request updating a display this run made, as JupyterLab routes it to
      // the futures it has (a display_data with a known id is an update there).
      if (typeof displayId === 'string' && this.displayIds.has(displayId)) {
        if (type === 'update_display_data') {
          void this.onIOPub(msg);
        } else if (type === 'display_data') {
          void this.onIOPub({ ...msg, header: { ...msg.header, msg_type: 'update_display_data' } } as any);
        }
      }
      return;
    }
    if (type === 'execute_input') {
      this.count = (msg as KernelMessage.IExecuteInputMsg).content.execution_count;
    }
    if (type === 'display_data' && typeof displayId === 'string') {
      this.displayIds.add(displayId);
    }
    void this.onIOPub(msg);
    if (type === 'status' && (msg as KernelMessage.IStatusMsg).content.execution_state === 'idle') {
      this.finish(this.count);
    }
  }
}

/** What a shown run needs of its cell: the model and the output area (a CodeCell). */
export interface IRunCell {
  readonly model: ICodeCellModel;
  readonly outputArea: OutputArea;
  outputHidden: boolean;
}

/**
 * Show request `msgId` of the kernel in `cell` as a Shift+Enter run of it would show:
 * cleared first, [*] while it runs, its outputs as they come, its count at the end.
 * Resolves once the run is done in the page (its idle status handled).
 */
export async function showKernelRun(cell: IRunCell, kernel: Kernel.IKernelConnection, msgId: string): Promise<void> {
  const model = cell.model;
  model.sharedModel.transact(
    () => {
      model.clearExecution();
      cell.outputHidden = false;
    },
    false,
    'silent-change'
  );
  model.executionState = 'running';
  model.trusted = true;
  const run = new ObservedRun(kernel, msgId);
  cell.outputArea.future = run as unknown as Kernel.IShellFuture<
    KernelMessage.IExecuteRequestMsg,
    KernelMessage.IExecuteReplyMsg
  >;
  const count = await run.done;
  if (cell.outputArea.future !== (run as unknown)) {
    return; // the cell was run again meanwhile: that run owns its prompt now
  }
  if (count !== null) {
    model.executionCount = count; // also ends the running state, as a reply's count does
  } else {
    model.executionState = 'idle';
  }
}
