/**
 * The agent's display updates, for every view of a notebook.
 *
 * The kernel replaces a run's live widget by its transcript, and keeps the widget's
 * fallback output up to date, with `update_display_data` messages. JupyterLab applies
 * those only to outputs its page received live: a display id is not saved with the
 * notebook, so a reloaded page, a second tab or another person's view of a shared
 * notebook never sees a run end, and saving there keeps the run "still running".
 *
 * Each output of ours names its display id in its metadata (`jupyter_agent.display_id`,
 * jupyter_agent/jupyter/fallback.py's `display_metadata`). Here every notebook page
 * listens to its kernel's iopub and applies each update of ours to the outputs that carry
 * its id. The page that showed the output live gets the same update from JupyterLab too:
 * an output that already holds the update is left alone. The data comes from the
 * notebook's own kernel and goes into the output as it is; the output area renders it
 * as it would any output (an untrusted notebook's sanitized).
 *
 * In a shared document (jupyter-collaboration), every view applies an update: the view
 * that showed the output live and each other one. JupyterLab writes a replaced output as a
 * deletion and an insertion in the shared model, so two views replacing one output at once
 * leave both insertions: the output twice. Each view removes an output of ours that repeats
 * the display id of an earlier one in its cell; the shared model orders concurrent
 * insertions the same way in every view, so all of them remove the same copy, and a
 * deletion made twice is made once.
 *
 * A run's fallback says "still running" while the run goes on; its kernel cannot correct
 * it when it dies or is restarted (JupyterLab drops the old kernel's updates first). The
 * page can: when it sees its kernel restart or die, each output of ours that names an
 * `if_lost` ending in its metadata, and still ends with the running one, gets the other.
 */

import { INotebookTracker, NotebookPanel } from '@jupyterlab/notebook';
import { KernelMessage } from '@jupyterlab/services';
import { JSONExt, JSONObject } from '@lumino/coreutils';
import { BRIDGE_PAGE_CODES as CODES, BridgeError } from './protocol';

/** The metadata key under which an output names its display id. */
export const METADATA_KEY = 'jupyter_agent';

/** Every display id of ours starts with this. */
export const DISPLAY_PREFIX = 'jupyter-agent-';

/** An update of ours, as the output it makes. */
export interface IDisplayOutput {
  output_type: 'display_data';
  data: JSONObject;
  metadata: JSONObject;
}

/** What the relay uses of a code cell's outputs (JupyterLab's IOutputAreaModel). */
interface IOutputs {
  readonly length: number;
  get(index: number): { toJSON(): unknown; metadata: unknown };
  set(index: number, output: IDisplayOutput): void;
}

/** What of an output the relay reads. */
export interface IOutputLike {
  output_type: string;
  data?: unknown;
  metadata?: unknown;
}

/** The display id an output names in its metadata, if it is one of ours. */
export function displayIdOf(output: IOutputLike): string | null {
  const metadata = output.metadata as JSONObject | undefined;
  const ours = metadata?.[METADATA_KEY] as JSONObject | undefined;
  const id = ours?.display_id;
  return typeof id === 'string' && id.startsWith(DISPLAY_PREFIX) ? id : null;
}

/** An update of ours: its display id and the output it makes, or null for any other
 * message. */
export function displayUpdate(msg: KernelMessage.IMessage): { id: string; output: IDisplayOutput } | null {
  if (msg.header.msg_type !== 'update_display_data') {
    return null;
  }
  const content = msg.content as KernelMessage.IUpdateDisplayDataMsg['content'];
  const id = content.transient?.display_id;
  if (typeof id !== 'string' || !id.startsWith(DISPLAY_PREFIX)) {
    return null;
  }
  return {
    id,
    output: {
      output_type: 'display_data',
      data: (content.data ?? {}) as JSONObject,
      metadata: (content.metadata ?? {}) as JSONObject
    }
  };
}

/** The indices of `outputs` that name display id `id` and do not hold `output` yet. */
export function outputsToUpdate(
  outputs: ReadonlyArray<IOutputLike>,
  id: string,
  output: { data: JSONObject; metadata: JSONObject }
): number[] {
  const stale: number[] = [];
  outputs.forEach((o, i) => {
    if (displayIdOf(o) !== id) {
      return;
    }
    const same =
      JSONExt.deepEqual((o.data ?? {}) as JSONObject, output.data) &&
      JSONExt.deepEqual((o.metadata ?? {}) as JSONObject, output.metadata);
    if (!same) {
      stale.push(i);
    }
  });
  return stale;
}

/** The indices of `outputs` that name the display id of an earlier output (copies that
 * two views of a shared document made at once; see the module comment). */
export function repeatedOutputs(outputs: ReadonlyArray<IOutputLike>): number[] {
  const seen = new Set<string>();
  const repeated: number[] = [];
  outputs.forEach((o, i) => {
    const id = displayIdOf(o);
    if (id === null) {
      return;
    }
    if (seen.has(id)) {
      repeated.push(i);
    }
    seen.add(id);
  });
  return repeated;
}

/** What `show_outputs` needs of a code cell's outputs (JupyterLab's IOutputAreaModel). */
interface IShownOutputs {
  readonly length: number;
  get(index: number): { toJSON(): unknown };
  clear(wait?: boolean): void;
  add(output: JSONObject): number;
}

/** The outputs of a `show_outputs` request, checked: each one of ours (a display_data
 * naming one of our display ids), or a string saying what is wrong. */
export function checkShownOutputs(outputs: unknown): IDisplayOutput[] | string {
  if (!Array.isArray(outputs) || outputs.length === 0) {
    return 'show_outputs needs a list of "outputs"';
  }
  for (const output of outputs) {
    if (
      typeof output !== 'object' ||
      output === null ||
      output.output_type !== 'display_data' ||
      typeof output.data !== 'object' ||
      displayIdOf(output) === null
    ) {
      return 'show_outputs takes display_data outputs of the agent only (naming their display id)';
    }
  }
  return outputs as IDisplayOutput[];
}

/** A run of the `%%agent` cell `cell_id` goes on while this page loaded (a reload): show
 * its outputs (the live widget and its fallback) there instead of what the file held.
 * Left alone when the cell already shows them (this page showed the run live). */
export async function showOutputs(panel: NotebookPanel, req: { [key: string]: unknown }): Promise<JSONObject> {
  const outputs = checkShownOutputs(req.outputs);
  if (typeof outputs === 'string') {
    throw new BridgeError(CODES.badRequest, outputs);
  }
  await panel.context.ready; // (the hello may come before the notebook's cells are loaded)
  const cells = panel.content.model?.cells;
  for (let c = 0; cells && c < cells.length; c++) {
    const cell = cells.get(c);
    if (cell.id !== req.cell_id || cell.type !== 'code') {
      continue;
    }
    const area = (cell as unknown as { outputs: IShownOutputs }).outputs;
    const shownIds: (string | null)[] = [];
    for (let i = 0; i < area.length; i++) {
      shownIds.push(displayIdOf(area.get(i).toJSON() as IOutputLike));
    }
    if (outputs.every(o => shownIds.includes(displayIdOf(o)))) {
      return { shown: false };
    }
    area.clear();
    outputs.forEach(o => area.add(o as unknown as JSONObject));
    return { shown: true };
  }
  throw new BridgeError(CODES.notFound, `Cell with ID "${String(req.cell_id)}" not found in the open notebook.`);
}

/** The kernel statuses that mean its runs are gone. */
export const LOST_STATUSES = ['restarting', 'autorestarting', 'dead'];

/** What `output` becomes once its kernel is gone: its `if_lost` ending instead of the
 * running one, or null when it names none or no longer ends with it. */
export function lostOutput(output: IOutputLike): IDisplayOutput | null {
  const id = displayIdOf(output);
  const ours = (output.metadata as JSONObject | undefined)?.[METADATA_KEY] as JSONObject | undefined;
  const ifLost = ours?.if_lost as JSONObject | undefined;
  const data = (output.data ?? {}) as JSONObject;
  const markdown = data['text/markdown'];
  const ending = ifLost?.ending;
  const lost = ifLost?.lost;
  if (
    id === null ||
    typeof markdown !== 'string' ||
    typeof ending !== 'string' ||
    typeof lost !== 'string' ||
    !markdown.endsWith(ending)
  ) {
    return null;
  }
  return {
    output_type: 'display_data',
    data: { ...data, 'text/markdown': markdown.slice(0, markdown.length - ending.length) + lost },
    metadata: { [METADATA_KEY]: { display_id: id } }
  };
}

/** What the removal of copies uses of a code cell's shared model. */
interface ISharedOutputs {
  getOutputs(): IOutputLike[];
  updateOutputs(start: number, end: number, outputs: JSONObject[]): void;
}

/** Each code cell of the notebook shown in `panel`: its outputs and its shared model. */
function eachCodeCell(panel: NotebookPanel, visit: (outputs: IOutputs, shared: ISharedOutputs) => void): void {
  const cells = panel.content.model?.cells;
  if (!cells) {
    return;
  }
  for (let c = 0; c < cells.length; c++) {
    const cell = cells.get(c);
    if (cell.type === 'code') {
      visit((cell as unknown as { outputs: IOutputs }).outputs, cell.sharedModel as unknown as ISharedOutputs);
    }
  }
}

/** Each code cell's outputs in the notebook shown in `panel`. */
function eachOutputs(panel: NotebookPanel, visit: (outputs: IOutputs, current: IOutputLike[]) => void): void {
  eachCodeCell(panel, outputs => {
    const current: IOutputLike[] = [];
    for (let i = 0; i < outputs.length; i++) {
      current.push(outputs.get(i).toJSON() as IOutputLike);
    }
    visit(outputs, current);
  });
}

/** The kernel of `panel` is gone: its runs still going read as interrupted. */
function markLost(panel: NotebookPanel): void {
  eachOutputs(panel, (outputs, current) => {
    current.forEach((output, index) => {
      const lost = lostOutput(output);
      if (lost) {
        outputs.set(index, lost);
      }
    });
  });
}

/** Apply one kernel message to the outputs of the notebook shown in `panel`. */
function relay(panel: NotebookPanel, msg: KernelMessage.IMessage): void {
  const update = displayUpdate(msg);
  if (!update) {
    return;
  }
  eachOutputs(panel, (outputs, current) => {
    for (const index of outputsToUpdate(current, update.id, update.output)) {
      outputs.set(index, update.output);
    }
  });
}

/** Remove the copies of our outputs in the notebook shown in `panel`, in the order and
 * through the API of each cell's shared model (the output area follows it; its own list
 * can order concurrent insertions otherwise, and its removal of an output at an index
 * above 0 does not reach the shared model). From the last, so that the indices of the
 * others stay. */
function removeCopies(panel: NotebookPanel): void {
  eachCodeCell(panel, (outputs, shared) => {
    // (the output area's metadata first: cheap, and this runs after every change)
    const metadata: IOutputLike[] = [];
    for (let i = 0; i < outputs.length; i++) {
      metadata.push({ output_type: 'display_data', metadata: outputs.get(i).metadata });
    }
    if (repeatedOutputs(metadata).length > 0) {
      for (const index of repeatedOutputs(shared.getOutputs()).reverse()) {
        shared.updateOutputs(index, index + 1, []);
      }
    }
  });
}

/** Relay the agent's display updates in every notebook page, and mark its runs lost with
 * their kernel (see the module comment). */
export function activateDisplays(tracker: INotebookTracker): void {
  const follow = (panel: NotebookPanel) => {
    const onMessage = (_: unknown, msg: KernelMessage.IMessage) => relay(panel, msg);
    // After the change that brought them is applied (a copy shows through the shared
    // model's change event, which must not be changed again while it is handled).
    let pending = false;
    const onContent = () => {
      // (only a shared document gets copies: one view alone writes each update once)
      if (!pending && panel.model?.collaborative) {
        pending = true;
        setTimeout(() => {
          pending = false;
          if (!panel.isDisposed) {
            removeCopies(panel);
          }
        }, 0);
      }
    };
    void panel.context.ready.then(() => panel.model?.contentChanged.connect(onContent));
    const onStatus = (_: unknown, status: string) => {
      if (LOST_STATUSES.includes(status)) {
        markLost(panel);
      }
    };
    panel.sessionContext.iopubMessage.connect(onMessage);
    panel.sessionContext.statusChanged.connect(onStatus);
    panel.disposed.connect(() => {
      panel.model?.contentChanged.disconnect(onContent);
      panel.sessionContext.iopubMessage.disconnect(onMessage);
      panel.sessionContext.statusChanged.disconnect(onStatus);
    });
  };
  tracker.forEach(follow);
  tracker.widgetAdded.connect((_, panel) => follow(panel));
}
