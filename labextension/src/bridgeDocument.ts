/**
 * One notebook's document as the live-notebook bridge sees it, page side (docs/bridge.md).
 *
 * Three names of the document's content, each kept as cheap as it can be:
 * - the version, a hash of the cells' ids, types and sources (what an agent edit or run
 *   must not race with: a request's `expected_version`), kept until the document changes
 *   and then hashed again only for the cells that changed (bridgeVersion.ts);
 * - the state, which moves with any change (outputs and metadata too) and with the
 *   document itself (a reload): what a read may be reused for (`known_state`);
 * - an agent edit's name, which its reply carries before the edit's transaction has ended
 *   and which stands for the state the transaction ended in (bridgeEdits.ts).
 *
 * Every update of the document's Yjs doc is handed to `onUpdate`: the bridge's `changed`
 * notices (bridge.ts).
 */

import { NotebookPanel } from '@jupyterlab/notebook';
import { NotebookVersion } from './bridgeVersion';
import { BRIDGE_PAGE_CODES as CODES, BridgeError, IRequest } from './protocol';

/** A JSON object of the bridge's messages (a reply's result, a cell as nbformat). */
export type JSONObject = Record<string, any>;

/** The document of one notebook panel: its shared model, version and state. */
export class BridgeDocument {
  /** True while an agent edit's own transaction runs: its change is in its reply. */
  applying = false;
  /** Each cell's hash, behind the version (bridgeVersion.ts). */
  readonly hashes = new NotebookVersion();
  private cachedVersion: string | null = null;
  private watchedDoc: any = null;
  private updateCount = 0;
  /** The state an agent edit's reply names (`<doc>:edit-<n>`): the reply leaves before
   * the edit's transaction has ended (see bridgeEdits.ts), so before the state it ends in
   * is known; once it has ended, in the same synchronous task, `afterEdit` maps the name
   * to that state. A read that knows the name is then "unchanged" exactly when the
   * document is still as the edit left it (only the latest edit's name is kept). */
  private edits = 0;
  private afterEdit: { name: string; state: string } | null = null;

  constructor(
    readonly panel: NotebookPanel,
    private readonly onUpdate: (transaction: unknown) => void
  ) {}

  /** Stop watching the document. */
  dispose(): void {
    this.watchedDoc?.off?.('update', this.onDocUpdate);
    this.watchedDoc = null;
    this.hashes.dispose();
  }

  /** The notebook's shared model (a BridgeError while the notebook is not loaded). */
  get shared(): any {
    const model = this.panel.content.model;
    if (!model) {
      throw new BridgeError(CODES.failed, 'the notebook is not loaded in the page');
    }
    return model.sharedModel;
  }

  /** How many updates of the document this page has seen (an edit is one, or more when
   * an observer changed the document further within its transaction). */
  get updates(): number {
    return this.updateCount;
  }

  private readonly onDocUpdate = (_update: unknown, _origin: unknown, _doc: unknown, transaction: unknown): void => {
    this.cachedVersion = null;
    this.updateCount++;
    this.onUpdate(transaction);
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

  /** The version a reply read from the document is still the version: the next request
   * need not hash every cell again. */
  keepVersion(version: string): void {
    this.cachedVersion = version;
  }

  /** The document's Yjs doc, its updates watched (they clear the version and move the state). */
  watch(): any {
    const ydoc = this.shared.ydoc;
    if (ydoc !== this.watchedDoc) {
      this.watchedDoc?.off?.('update', this.onDocUpdate);
      this.watchedDoc = ydoc;
      this.cachedVersion = null;
      ydoc?.on?.('update', this.onDocUpdate);
    }
    return ydoc;
  }

  /** The version hashed from the document now (only the cells changed since are hashed). */
  computeVersion(): string {
    return this.hashes.compute(this.shared.ydoc);
  }

  /** The document's Yjs array of cells (each a Y.Map): what is saved and undone. */
  ycells(): any {
    return this.shared.ydoc.getArray('cells');
  }

  /** Changes with any change of the document (outputs and metadata too, unlike the
   * version), and with the document itself (a reload): what a read may be reused for. */
  state(): string {
    const ydoc = this.watch();
    return `${ydoc?.guid ?? 'doc'}:${this.updateCount}`;
  }

  /** A new agent edit's name (`<doc>:edit-<n>`), for its reply. */
  nameEdit(): string {
    return `${this.shared.ydoc?.guid ?? 'doc'}:edit-${++this.edits}`;
  }

  /** The edit named `name` has ended: its name stands for the state it left. */
  editLeft(name: string): void {
    this.afterEdit = { name, state: this.state() };
  }

  /** The latest edit's name stands for no state (the document changed within it). */
  forgetEdit(): void {
    this.afterEdit = null;
  }

  /** A caller's `known_state` as a state (an edit's name maps to the state it left). */
  resolveState(known: unknown): unknown {
    return this.afterEdit !== null && known === this.afterEdit.name ? this.afterEdit.state : known;
  }

  /** Whether the caller's copy, read at the request's `known_state`, is the document now:
   * only then may the reply of its edit or run name a state to read against (the caller
   * brings its copy up to date with the change it asked for, and nothing else). */
  holdsKnownState(req: IRequest): boolean {
    return typeof req.known_state === 'string' && this.resolveState(req.known_state) === this.state();
  }

  /** Refuse (`stale`) a request whose `expected_version` is not the version now. */
  checkVersion(req: IRequest): void {
    const expected = req.expected_version;
    if (typeof expected === 'string' && expected !== this.version()) {
      throw new BridgeError(
        CODES.stale,
        'The notebook was changed in the page since it was read (the user typed, or cells moved).'
      );
    }
  }

  /** The index of the cell with this id (a BridgeError when there is none). */
  indexOf(id: unknown): number {
    if (typeof id !== 'string') {
      throw new BridgeError(CODES.badRequest, 'a "cell_id" (string) is required');
    }
    const index = (this.shared.cells as any[]).findIndex(cell => cell.id === id);
    if (index < 0) {
      throw new BridgeError(CODES.notFound, `Cell with ID "${id}" not found in the open notebook.`);
    }
    return index;
  }
}
