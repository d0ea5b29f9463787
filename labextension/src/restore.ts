/**
 * The bridge's `restore` operation: put cells back as they were before an agent run (an
 * undo of the run), in one transaction of the notebook's shared model, so that it is one
 * step of the notebook's own undo (the bridge wraps it in stopCapturing).
 *
 * Each step deletes a cell the run inserted, puts a cell back (type, source, outputs,
 * execution count, metadata: the cell is swapped for one with the same id, a change of
 * the cell list, which the notebook's undo manager records), or inserts a cell the run
 * deleted after the cell it followed, or moves a cell as it is (the notebook's own move:
 * its id, outputs, metadata and attachments kept) to just after a cell. The kernel decided
 * which cells to touch: it compared each with what the run left (jupyter_agent/tools/undo.py).
 * A move is also how an outside agent's `move_cell` moves a cell (jupyter/outside/outside_move.py).
 */

import { JSONObject } from '@lumino/coreutils';

/** One step, as the kernel sends it (jupyter_agent/notebook/document.py, CellRestore). */
export interface IRestoreStep {
  op: 'delete' | 'restore' | 'insert' | 'move';
  cell_id: string;
  cell_type: string;
  source: string;
  outputs: JSONObject[];
  execution_count: number | null;
  metadata: JSONObject;
  after_id: string;
  index: number;
}

const OPS = ['delete', 'restore', 'insert', 'move'];

/** A cell to delete or restore is no longer in the notebook. */
export class CellGone extends Error {}
const TYPES = ['code', 'markdown', 'raw'];

/** The request's steps, checked; a string says what is wrong with them. */
export function checkSteps(steps: unknown): IRestoreStep[] | string {
  if (!Array.isArray(steps)) {
    return 'restore needs a list of "steps"';
  }
  for (const step of steps) {
    if (typeof step !== 'object' || step === null || !OPS.includes(step.op) || typeof step.cell_id !== 'string') {
      return 'each restore step needs an "op" (delete, restore, insert, move) and a "cell_id"';
    }
    if (step.op === 'move' && typeof step.after_id !== 'string') {
      return 'a move step needs an "after_id" (the cell it goes after, "" for first)';
    }
    if (
      step.op !== 'delete' &&
      step.op !== 'move' &&
      (typeof step.source !== 'string' || !TYPES.includes(step.cell_type))
    ) {
      return 'a restore or insert step needs a "source" and a "cell_type"';
    }
  }
  return steps as IRestoreStep[];
}

/** The cell a step puts in place, as nbformat JSON. */
function cellOf(step: IRestoreStep, id: string | undefined): JSONObject {
  const cell: JSONObject = { cell_type: step.cell_type, source: step.source, metadata: step.metadata ?? {} };
  if (id !== undefined) {
    cell.id = id;
  }
  if (step.cell_type === 'code') {
    cell.outputs = Array.isArray(step.outputs) ? step.outputs : [];
    cell.execution_count = typeof step.execution_count === 'number' ? step.execution_count : null;
  }
  return cell;
}

/** Where a cell goes after `after_id` ("": first; gone: at `index`) among the ids `now`. */
function positionIn(now: string[], afterId: string, index: number): number {
  const after = afterId ? now.indexOf(afterId) : -1;
  return !afterId ? 0 : after >= 0 ? after + 1 : Math.min(typeof index === 'number' ? index : now.length, now.length);
}

/**
 * The cells as the steps find them: the document's own Yjs array. Inside the edit's
 * transaction the shared model's `cells` list is not brought up to date until the
 * transaction ends (its observers), so after a first step it names the cells at the wrong
 * places: a second delete would take the cell after the one meant.
 */
function yCells(shared: any): any[] {
  return shared.ydoc.getArray('cells').toArray();
}

/** A cell as it is now, whole (id, outputs, attachments), from its Yjs map. */
function cellJson(shared: any, ymodel: any): JSONObject {
  const model = (shared.cells as any[]).find(cell => cell.ymodel === ymodel);
  return model ? model.toJSON() : ymodel.toJSON(); // (a cell a step before this one put in: its map)
}

/** Apply the steps to the shared model (call inside one transaction); returns the ids
 * of the cells put in place. Throws CellGone when a cell to delete, restore or move is gone. */
export function applySteps(shared: any, steps: IRestoreStep[]): string[] {
  const placed: string[] = [];
  const ids = (): string[] => yCells(shared).map(cell => cell.get('id'));
  for (const step of steps) {
    const at = ids().indexOf(step.cell_id);
    if (step.op !== 'insert' && at < 0) {
      throw new CellGone(`Cell with ID "${step.cell_id}" is no longer in the open notebook.`);
    }
    if (step.op === 'delete') {
      shared.deleteCell(at);
    } else if (step.op === 'move') {
      // As the notebook's own move does: the cell's JSON (its id too) taken out and put in
      // at its new place, within this transaction.
      const json = cellJson(shared, yCells(shared)[at]);
      const to = positionIn(
        ids().filter(id => id !== step.cell_id),
        step.after_id,
        step.index
      );
      if (to !== at) {
        shared.deleteCell(at);
        shared.insertCell(to, json);
      }
      placed.push(step.cell_id);
    } else if (step.op === 'restore') {
      shared.deleteCell(at);
      placed.push(shared.insertCell(at, cellOf(step, step.cell_id)).id);
    } else {
      const index = positionIn(ids(), step.after_id, step.index);
      placed.push(shared.insertCell(index, cellOf(step, at < 0 ? step.cell_id : undefined)).id);
    }
  }
  return placed;
}

/** Does the document show the steps done (deleted cells gone, the others in place)? */
export function stepsDone(shared: any, steps: IRestoreStep[], placed: string[]): boolean {
  const ids = new Set(yCells(shared).map(cell => cell.get('id')));
  const deleted = steps.filter(step => step.op === 'delete').map(step => step.cell_id);
  return deleted.every(id => !ids.has(id) || placed.includes(id)) && placed.every(id => ids.has(id));
}
