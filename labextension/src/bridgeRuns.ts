/**
 * The live-notebook bridge's cell runs, page side: `run` and `show_run` (docs/bridge.md,
 * "Running a cell through the page" and "Runs the kernel makes itself").
 *
 * `run` uses NotebookActions.runCells: the Shift+Enter path; past the request's time limit
 * the page interrupts the kernel (the kernel's own loop is busy with the cell). `show_run`
 * shows in its cell a run the kernel makes itself (kernelRun.ts). While either goes on, a
 * click on the run widget's Stop interrupts the kernel from here.
 */

import { NotebookActions } from '@jupyterlab/notebook';
import { Kernel } from '@jupyterlab/services';
import { BridgeDocument, JSONObject } from './bridgeDocument';
import { capOutputs } from './bridgeRead';
import { IRunCell, showKernelRun } from './kernelRun';
import { BRIDGE_PAGE_CODES as CODES, BridgeError, IRequest } from './protocol';

/** The class of the run widget's Stop button (jupyter_agent/jupyter/runview.py). */
const STOP_BUTTON_CLASS = 'jupyter-agent-stop';

/** Whether the Yjs `type` is `root` or inside it. */
function within(type: any, root: any): boolean {
  for (let t = type; t; t = t._item?.parent) {
    if (t === root) {
      return true;
    }
  }
  return false;
}

/**
 * Watch the document while a cell runs: `followed()` stays true while every change since
 * is inside the cell (its outputs, count, metadata), starting from `followed` (whether the
 * caller's copy was the document when the run began); `stop()` ends the watch.
 */
function followCell(ydoc: any, ycell: any, followed: boolean): { followed: () => boolean; stop: () => void } {
  const watch = (transaction: any): void => {
    transaction.changed?.forEach((_keys: unknown, type: any) => {
      followed = followed && within(type, ycell);
    });
  };
  ydoc.on('afterTransaction', watch);
  return { followed: () => followed, stop: () => ydoc.off('afterTransaction', watch) };
}

/** The cell runs of one notebook's page, and its Stop clicks while one goes on. */
export class BridgeRuns {
  private runs = 0;

  constructor(private readonly doc: BridgeDocument) {
    // Capture: the click is seen before the widget's own handler, whatever that does with it.
    doc.panel.node.addEventListener('click', this.interruptOnStop, true);
  }

  /** Remove the Stop click listener. */
  dispose(): void {
    this.doc.panel.node.removeEventListener('click', this.interruptOnStop, true);
  }

  private get kernel(): Kernel.IKernelConnection | null {
    return this.doc.panel.sessionContext.session?.kernel ?? null;
  }

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

  /** Run one cell as Shift+Enter would, in this page's kernel; reply when it is done. */
  async run(req: IRequest): Promise<JSONObject> {
    const doc = this.doc;
    doc.checkVersion(req);
    const index = doc.indexOf(req.cell_id);
    const notebook = doc.panel.content;
    const widget = notebook.widgets[index];
    const kernel = this.kernel;
    if (!kernel) {
      throw new BridgeError(CODES.noKernel, 'the notebook has no kernel in the page');
    }
    // The reply names the state the run leaves the document in only when the caller's copy
    // was the document when the run began and nothing but this cell changed meanwhile (its
    // outputs, count, metadata): the caller then takes the cell from the reply.
    const follow = followCell(doc.shared.ydoc, (widget.model.sharedModel as any).ymodel, doc.holdsKnownState(req));
    const wasEditing = notebook.mode === 'edit';
    const execution = NotebookActions.runCells(notebook, [widget], doc.panel.sessionContext);
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
      follow.stop();
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
      version: doc.version(),
      ...(follow.followed() ? { state: doc.state() } : {})
    };
  }

  /**
   * Show in its cell a run the kernel makes itself (kernelRun.ts); reply once the page has
   * shown all of it, with the cell as the document holds it then (and, as `run` does, the
   * state the run left the document in when nothing but this cell changed meanwhile). The
   * run is the kernel's: nothing here refuses it, and the kernel keeps its time limit.
   */
  async showRun(req: IRequest): Promise<JSONObject> {
    const doc = this.doc;
    const index = doc.indexOf(req.cell_id);
    const widget = doc.panel.content.widgets[index];
    const kernel = this.kernel;
    if (!kernel) {
      throw new BridgeError(CODES.noKernel, 'the notebook has no kernel in the page');
    }
    if (widget.model.type !== 'code' || typeof req.msg_id !== 'string') {
      throw new BridgeError(CODES.badRequest, 'show_run needs a code cell and the msg_id of its run');
    }
    const follow = followCell(doc.shared.ydoc, (widget.model.sharedModel as any).ymodel, doc.holdsKnownState(req));
    this.runs++; // a click on the run's Stop interrupts the kernel, as for a run made here
    try {
      await showKernelRun(widget as unknown as IRunCell, kernel, req.msg_id);
    } finally {
      this.runs--;
      follow.stop();
    }
    const json = widget.model.toJSON() as JSONObject;
    capOutputs([json]);
    return { cell: json, index, version: doc.version(), ...(follow.followed() ? { state: doc.state() } : {}) };
  }
}
