/**
 * Fix with agent and Explain under a notebook's error outputs, and the cell the user is on.
 *
 * Each code cell whose outputs hold an error (a traceback) gets a small bar under its
 * outputs with two buttons, in notebooks whose kernel has loaded jupyter_agent
 * (agentPresence.ts); no other output gets anything. A click asks the side panel to send
 * the cell, its error and the cells above it (cellContext.ts) to that notebook's kernel,
 * where the run goes on as any of the panel's. The bar is a Lumino widget in the cell's
 * own layout, right after its outputs, so JupyterLab moves, hides and disposes it with the
 * cell; its buttons are real buttons (Tab reaches them; Enter and Space press them: the
 * bar keeps the notebook's shortcuts off them). Every text here is ours, set as text.
 */

import type { Cell, CodeCell } from '@jupyterlab/cells';
import { INotebookTracker, Notebook, NotebookPanel } from '@jupyterlab/notebook';
import { PanelLayout, Widget } from '@lumino/widgets';
import { agentPresence } from './agentPresence';
import { ErrorAction, ICellLike, IErrorButton, errorButtons, errorHelpRequest, promptContext } from './cellContext';
import { PanelRequest } from './panelProtocol';

/** The class of the bar under an error output. */
export const ERROR_BAR_CLASS = 'jp-AgentErrorActions';

/** Where a click goes: the side panel, which sends it to `notebook`'s kernel. */
export type HelpWith = (notebook: NotebookPanel, request: PanelRequest) => void;

/** A notebook's cells as cellContext.ts reads them; `withOutputs` gets its outputs too. */
function cellsOf(notebook: Notebook, withOutputs = -1): ICellLike[] {
  return notebook.widgets.map((widget, i) => ({
    id: widget.model.id,
    cell_type: widget.model.type,
    source: widget.model.sharedModel.getSource(),
    ...(i === withOutputs ? { outputs: (widget.model.toJSON() as { outputs?: unknown[] }).outputs ?? [] } : {})
  }));
}

/** What a side-panel prompt says about where the user is in `panel`: its active cell, the
 * selected cells, the text selected in the active cell's editor. */
export function activeCellContext(panel: NotebookPanel | null): ReturnType<typeof promptContext> {
  const notebook = panel?.content;
  if (!notebook || notebook.activeCellIndex < 0) {
    return null;
  }
  const cells = cellsOf(notebook);
  const selected = notebook.widgets.flatMap((w, i) => (notebook.isSelectedOrActive(w) ? [i] : []));
  let selection = '';
  const editor = notebook.activeCell?.editor;
  if (editor) {
    const range = editor.getSelection();
    const [a, b] = [editor.getOffsetAt(range.start), editor.getOffsetAt(range.end)].sort((x, y) => x - y);
    selection = editor.model.sharedModel.getSource().slice(a, b);
  }
  return promptContext(cells, notebook.activeCellIndex, selected, selection);
}

/** The bar of one error output. */
class ErrorBar extends Widget {
  constructor(cell: CodeCell, buttons: readonly IErrorButton[], onClick: (action: ErrorAction) => void) {
    super();
    this.addClass(ERROR_BAR_CLASS);
    this.node.setAttribute('role', 'group');
    this.node.setAttribute('aria-label', 'jupyter-agent: this error');
    this.node.setAttribute('data-lm-suppress-shortcuts', 'true'); // Enter and Space press the buttons
    for (const spec of buttons) {
      const b = document.createElement('button');
      b.type = 'button';
      b.className = `jp-mod-styled jp-AgentErrorActions-${spec.action}`;
      b.textContent = spec.label;
      b.title = spec.title;
      b.onclick = () => onClick(spec.action);
      this.node.appendChild(b);
    }
    this.cell = cell;
  }

  readonly cell: CodeCell;
}

/** Keeps the bars of one notebook right: one under each error output, none elsewhere. */
class NotebookErrorActions {
  private readonly bars = new Map<Cell, ErrorBar>();
  private readonly wired = new WeakSet<Cell>();

  constructor(
    private readonly panel: NotebookPanel,
    private readonly helpWith: HelpWith
  ) {
    const notebook = panel.content;
    notebook.model?.cells.changed.connect(this.refreshSoon, this);
    notebook.modelChanged.connect(() => {
      notebook.model?.cells.changed.connect(this.refreshSoon, this);
      this.refreshSoon();
    });
    notebook.cellInViewportChanged.connect((_, cell) => this.refresh(cell));
    agentPresence.changed.connect(this.onPresence, this);
    panel.disposed.connect(() => agentPresence.changed.disconnect(this.onPresence, this));
    this.refreshSoon();
  }

  private onPresence(_: unknown, panel: NotebookPanel): void {
    if (panel === this.panel) {
      this.refreshAll();
    }
  }

  /** After JupyterLab made the widgets of new cells. */
  private refreshSoon(): void {
    window.setTimeout(() => this.refreshAll(), 0);
  }

  private refreshAll(): void {
    if (this.panel.isDisposed) {
      return;
    }
    for (const cell of this.panel.content.widgets) {
      this.refresh(cell);
    }
    for (const cell of Array.from(this.bars.keys())) {
      if (cell.isDisposed || !this.panel.content.widgets.includes(cell)) {
        this.drop(cell);
      }
    }
  }

  private refresh(cell: Cell): void {
    // A deleted cell's model may be disposed before its widget (an undo, a restore): its
    // outputs are gone then, and a late `changed` must find nothing to do.
    if (cell.isDisposed || cell.model.isDisposed || cell.model.type !== 'code') {
      this.drop(cell);
      return;
    }
    this.refreshCode(cell as CodeCell);
  }

  private refreshCode(cell: CodeCell): void {
    if (!this.wired.has(cell)) {
      this.wired.add(cell);
      cell.model.outputs.changed.connect(() => this.refresh(cell));
      cell.disposed.connect(() => this.bars.delete(cell));
    }
    const models = cell.model.outputs;
    if (!models) {
      this.drop(cell);
      return;
    }
    const outputs = Array.from({ length: models.length }, (_, i) => ({ output_type: models.get(i).type }));
    const buttons = errorButtons({ cell_type: 'code', outputs }, agentPresence.has(this.panel));
    if (!buttons.length) {
      this.drop(cell);
      return;
    }
    if (this.bars.has(cell)) {
      return;
    }
    const layout = cell.layout as PanelLayout | null;
    const wrapper = layout?.widgets.find(w => w.hasClass('jp-Cell-outputWrapper'));
    if (!layout || !wrapper) {
      return; // not drawn yet (a windowed notebook): cellInViewportChanged comes back here
    }
    const bar = new ErrorBar(cell, buttons, action => this.click(cell, action));
    layout.insertWidget(layout.widgets.indexOf(wrapper) + 1, bar);
    this.bars.set(cell, bar);
  }

  private drop(cell: Cell): void {
    this.bars.get(cell)?.dispose();
    this.bars.delete(cell);
  }

  private click(cell: CodeCell, action: ErrorAction): void {
    const notebook = this.panel.content;
    const index = notebook.widgets.indexOf(cell);
    const request = index < 0 ? null : errorHelpRequest(action, cellsOf(notebook, index), index);
    if (request) {
      this.helpWith(this.panel, request);
    }
  }
}

/** Put the bars on every notebook's error outputs; a click goes to `helpWith`. */
export function activateErrorActions(tracker: INotebookTracker, helpWith: HelpWith): void {
  const watch = (panel: NotebookPanel) => new NotebookErrorActions(panel, helpWith);
  tracker.forEach(watch);
  tracker.widgetAdded.connect((_, panel) => watch(panel));
}
