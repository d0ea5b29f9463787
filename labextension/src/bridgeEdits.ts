/**
 * The live-notebook bridge's edits, page side: `insert`, `replace`, `delete` and `restore`
 * (docs/bridge.md).
 *
 * Every edit goes through the notebook's shared model, so it shows at once, is saved as a
 * person's edit would be, and is exactly one undo step (stopCapturing around it). Each is
 * refused (`stale`) when the request's `expected_version` is not the document's version.
 * The reply leaves as soon as the document holds the edit, before JupyterLab has built its
 * view of it (applyEdit).
 */

import { BridgeDocument, JSONObject } from './bridgeDocument';
import { BRIDGE_PAGE_CODES as CODES, BridgeError, IRequest } from './protocol';
import { applySteps, CellGone, checkSteps, stepsDone } from './restore';

/** Sends a request's success reply (at most once). */
export type Reply = (result: JSONObject) => void;

/** The edit operations on one notebook's document. */
export class BridgeEdits {
  /**
   * @param doc the notebook's document
   * @param changedAfterReply tells the kernels waiting for a notice that the document
   *   changed after a reply (an observer changed it further within an edit's transaction)
   */
  constructor(
    private readonly doc: BridgeDocument,
    private readonly changedAfterReply: () => void
  ) {}

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
    const doc = this.doc;
    const followed = doc.holdsKnownState(req);
    const shared = doc.shared;
    const ydoc = shared.ydoc;
    const managers = [shared.undoManager];
    const cell = cellIndex !== undefined ? shared.cells[cellIndex] : undefined;
    if (cell?.undoManager && cell.undoManager !== shared.undoManager) {
      managers.push(cell.undoManager);
    }
    let done = false;
    let result: T | undefined;
    let answer: JSONObject | null = null;
    const name = doc.nameEdit();
    const answerOf = (): JSONObject | null => {
      const found = outcome(result as T);
      return found === null || !followed ? found : { ...found, state: name };
    };
    let sentEarly = false;
    const early = (transaction: any) => {
      // The cells it changed are hashed afresh, whichever of the document's listeners runs first.
      doc.hashes.forget(transaction);
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
    doc.watch();
    const updates = doc.updates;
    doc.applying = true;
    try {
      shared.transact(() => {
        result = edit();
        done = true;
      });
    } finally {
      doc.applying = false;
      ydoc.off('beforeObserverCalls', early);
      managers.forEach(m => m?.stopCapturing());
    }
    answer = answer ?? answerOf();
    if (answer === null) {
      throw new BridgeError(CODES.failed, 'The edit did not reach the notebook in the page.');
    }
    if (doc.updates !== updates + 1) {
      // An observer changed the document further, within the edit's transaction: that is
      // not in the reply. The name stands for no state, and a kernel told of no change
      // since the reply is told now.
      doc.forgetEdit();
      if (sentEarly) {
        this.changedAfterReply();
      } else {
        delete answer.state;
      }
      return answer;
    }
    if (typeof answer.version === 'string') {
      // The version the reply read from the document is still the version.
      doc.keepVersion(answer.version);
    }
    if (followed) {
      // The transaction has ended (its observers and update events ran, nothing else did):
      // the state the reply's name stands for.
      doc.editLeft(name);
    }
    return answer;
  }

  /** Insert a cell at `index`. */
  insert(req: IRequest, reply: Reply): JSONObject {
    this.doc.checkVersion(req);
    const shared = this.doc.shared;
    const index = req.index;
    const count = (shared.cells as any[]).length;
    if (typeof index !== 'number' || !Number.isInteger(index) || index < 0 || index > count) {
      throw new BridgeError(CODES.badRequest, `insert position must be 0..${count}`);
    }
    const type = req.cell_type === 'markdown' || req.cell_type === 'raw' ? req.cell_type : 'code';
    if (typeof req.source !== 'string') {
      throw new BridgeError(CODES.badRequest, 'insert needs a string "source"');
    }
    // The new cell's id when the agent chose it (so that later calls of its answer can name it).
    const id = req.cell_id;
    if (id !== undefined && (typeof id !== 'string' || !/^[a-zA-Z0-9_-]{1,64}$/.test(id))) {
      throw new BridgeError(CODES.badRequest, 'a new cell\'s "cell_id" is 1-64 letters, digits, - or _');
    }
    if (id !== undefined && (shared.cells as any[]).some(cell => cell.id === id)) {
      throw new BridgeError(CODES.badRequest, `A cell with id "${id}" is already in the notebook.`);
    }
    const chosen = id === undefined ? {} : { id };
    return this.applyEdit(
      req,
      () => shared.insertCell(index, { ...chosen, cell_type: type, source: req.source, metadata: {} }),
      cell => this.edited(cell, index),
      reply
    );
  }

  /** An edit's reply when the document holds `cell` at `index`, else null. */
  private edited(cell: any, index: number, source?: string): JSONObject | null {
    const ycells = this.doc.ycells();
    if (!cell || ycells.get(index) !== cell.ymodel) {
      return null;
    }
    if (source !== undefined && cell.getSource() !== source) {
      return null;
    }
    return { cell: cell.toJSON(), index, version: this.doc.computeVersion() };
  }

  /** Replace a cell's source (and its type: then a new cell with the same id). */
  replace(req: IRequest, reply: Reply): JSONObject {
    this.doc.checkVersion(req);
    if (typeof req.source !== 'string') {
      throw new BridgeError(CODES.badRequest, 'replace needs a string "source"');
    }
    const source = req.source;
    const shared = this.doc.shared;
    const index = this.doc.indexOf(req.cell_id);
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

  /** Delete a cell (the `delete` operation). */
  remove(req: IRequest, reply: Reply): JSONObject {
    this.doc.checkVersion(req);
    const shared = this.doc.shared;
    const index = this.doc.indexOf(req.cell_id);
    const old = shared.cells[index];
    const json = old.toJSON();
    const count = this.doc.ycells().length;
    return this.applyEdit(
      req,
      () => shared.deleteCell(index),
      () => {
        const ycells = this.doc.ycells();
        const gone = ycells.length === count - 1 && !ycells.toArray().includes(old.ymodel);
        return gone ? { cell: json, index, version: this.doc.computeVersion() } : null;
      },
      reply
    );
  }

  /** Put cells back as they were before an agent run (its undo): one undo step. */
  restore(req: IRequest, reply: Reply): JSONObject {
    this.doc.checkVersion(req);
    const steps = checkSteps(req.steps);
    if (typeof steps === 'string') {
      throw new BridgeError(CODES.badRequest, steps);
    }
    const shared = this.doc.shared;
    return this.applyEdit(
      req,
      () => {
        try {
          return applySteps(shared, steps);
        } catch (problem) {
          throw problem instanceof CellGone ? new BridgeError(CODES.notFound, problem.message) : problem;
        }
      },
      placed => (stepsDone(shared, steps, placed) ? { placed, version: this.doc.computeVersion() } : null),
      reply
    );
  }
}
