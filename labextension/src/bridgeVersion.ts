/**
 * The notebook's version as the bridge names it (docs/bridge.md): a hash of every cell's
 * id, type and source, in order. Outputs and execution counts are left out (running a
 * cell is not an edit). Every agent edit carries the version it was made against and the
 * page refuses it when the cells moved since, so the hash must stay exact.
 *
 * It is computed from the Yjs document itself (an edit's reply needs it before
 * JupyterLab's observers have brought the shared model's cells up to date). Each cell's
 * own hash is kept until a transaction touches that cell (anything inside its Y.Map: its
 * source, its id, its type, its outputs too), so a version of thousands of cells after an
 * edit of one costs one cell's hash and a pass over the kept numbers.
 */

/** FNV-1a, 32 bits. */
const FNV_OFFSET = 0x811c9dc5;
const FNV_PRIME = 0x01000193;

function mixText(h: number, text: string): number {
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, FNV_PRIME);
  }
  h ^= 0x1f; // a separator: ("ab", "c") and ("a", "bc") differ
  return Math.imul(h, FNV_PRIME);
}

function mixWord(h: number, word: number): number {
  for (let shift = 0; shift < 32; shift += 8) {
    h ^= (word >>> shift) & 0xff;
    h = Math.imul(h, FNV_PRIME);
  }
  return h;
}

/** The hash of one cell (a Y.Map of the notebook's `cells` array). */
function cellHash(cell: any): number {
  let h = mixText(FNV_OFFSET, String(cell.get('id')));
  h = mixText(h, String(cell.get('cell_type')));
  return mixText(h, String(cell.get('source') ?? ''));
}

/** The version of one Yjs notebook document, each cell's hash kept until the cell changes. */
export class NotebookVersion {
  private doc: any = null;
  private cells: any = null;
  private hashes = new WeakMap<object, number>();

  /** Forget the hash of every cell `transaction` changed (Yjs `beforeObserverCalls`:
   * before anything reads the version after it). Idempotent: an edit's reply calls it
   * too, whatever the order of the document's listeners. */
  readonly forget = (transaction: any): void => {
    transaction?.changed?.forEach((_keys: unknown, type: any) => {
      const cell = this.cellOf(type);
      if (cell !== null) {
        this.hashes.delete(cell);
      }
    });
  };

  /** The version of `ydoc`'s cells now. */
  compute(ydoc: any): string {
    this.follow(ydoc);
    // Inside a transaction (never so in the bridge, but cheap to be sure of) a cell made in
    // it could still change without the transaction naming it: hash everything afresh.
    const keep = ydoc._transaction === null;
    const cells = this.cells.toArray();
    let h = FNV_OFFSET;
    for (const cell of cells) {
      let own = keep ? this.hashes.get(cell) : undefined;
      if (own === undefined) {
        own = cellHash(cell);
        if (keep) {
          this.hashes.set(cell, own);
        }
      }
      h = mixWord(h, own);
    }
    return `live-${cells.length}-${(h >>> 0).toString(16)}`;
  }

  /** Stop listening to the document. */
  dispose(): void {
    this.doc?.off?.('beforeObserverCalls', this.forget);
    this.doc = null;
    this.cells = null;
  }

  private follow(ydoc: any): void {
    if (ydoc !== this.doc) {
      this.dispose();
      this.doc = ydoc;
      this.cells = ydoc.getArray('cells');
      this.hashes = new WeakMap();
      ydoc.on('beforeObserverCalls', this.forget);
    }
  }

  /** The cell (a direct child of the `cells` array) that `type` is, or is inside; null
   * for the array itself (cells added or removed: they are hashed, or not, by identity)
   * and for anything outside the cells (the notebook's metadata). */
  private cellOf(type: any): object | null {
    for (let t = type; t; t = t._item?.parent) {
      const parent = t._item?.parent;
      if (parent === this.cells) {
        return t;
      }
    }
    return null;
  }
}
