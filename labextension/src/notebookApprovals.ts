/**
 * An outside agent's approval cards under its notebook: a user whose side panel is closed
 * still sees that an agent over MCP (Claude Code, Cursor...) asks to change or run the
 * notebook, and answers it there.
 *
 * The cards come from the side panel's state (panel.ts: its comm to the notebook's kernel
 * gets every pending ask); an ask that names who asks (`asker`) and the page it is about
 * (`page`, the client id of that page's kernel connection) is also shown in a bar docked at
 * the bottom of that notebook panel, below its cells (it does not scroll with them). It is
 * the panel's card (panelApprovals.ts, every text set as textContent), answered once for
 * both places; the kernel's next update removes it from both.
 *
 * The bar is a Lumino widget in the notebook panel's own layout (a MainAreaWidget's
 * BoxLayout: toolbar, content header, content, then this bar), so JupyterLab hides, resizes
 * and disposes it with the panel; it is hidden while no ask waits.
 */

import type { Message } from '@lumino/messaging';
import { BoxLayout, Widget } from '@lumino/widgets';
import { AnswerApproval, ICardIcons, drawApprovals } from './panelApprovals';
import { el } from './panelDom';
import { IApproval } from './panelState';

/** The class of the bar under a notebook. */
export const DOCK_CLASS = 'jp-AgentNotebookApprovals';

/** The most of its notebook panel's height the bar takes (its cards scroll inside). */
const MAX_SHARE = 0.45;

/** The outside agents' asks of `approvals` about the page whose client id is `clientId`. */
export function asksFor(approvals: readonly IApproval[], clientId: string): IApproval[] {
  if (!clientId) {
    return [];
  }
  return approvals.filter(a => typeof a.asker === 'string' && a.asker !== '' && a.page === clientId);
}

/** The bar's first line: who asks, as text. */
export function whoAsks(asks: readonly IApproval[]): string {
  const names = Array.from(new Set(asks.map(a => a.asker ?? '')));
  const what = asks.length === 1 ? 'asks' : `asks (${asks.length} requests)`;
  return `${names.join(', ')}, an outside agent (MCP), ${what} to change or run this notebook:`;
}

/** The bar under one notebook: who asks, then the cards. */
export class ApprovalDock extends Widget {
  private readonly head: HTMLElement;
  /** The cards (panelApprovals.ts draws them here). */
  readonly cards: HTMLElement;
  private fitted = -1;

  constructor(private readonly icons: ICardIcons = {}) {
    super();
    this.addClass(DOCK_CLASS);
    this.node.setAttribute('role', 'region');
    this.node.setAttribute('aria-label', 'jupyter-agent: an outside agent asks');
    this.node.setAttribute('data-lm-suppress-shortcuts', 'true'); // Enter and Space press the buttons
    this.head = el('div', `${DOCK_CLASS}-head`);
    this.head.setAttribute('aria-live', 'polite'); // a screen reader hears that an agent asks
    this.cards = el('div', `${DOCK_CLASS}-cards`);
    const inner = el('div', `${DOCK_CLASS}-inner`);
    inner.append(this.head, this.cards);
    this.node.appendChild(inner);
    this.hide();
  }

  /** Show `asks` (none: the bar hides). A card already shown stays as it is, unless `fresh`
   * (the kernel sent its whole state: its cards are drawn anew, as the panel's are). */
  draw(asks: IApproval[], answer: AnswerApproval, fresh = false): void {
    if (fresh) {
      this.cards.textContent = '';
    }
    drawApprovals(this.cards, asks, answer, this.icons);
    this.head.textContent = asks.length ? whoAsks(asks) : '';
    this.setHidden(asks.length === 0);
    this.fitToContent();
  }

  protected onAfterShow(msg: Message): void {
    super.onAfterShow(msg);
    this.fitToContent();
  }

  protected onResize(msg: Widget.ResizeMessage): void {
    super.onResize(msg);
    this.fitToContent();
  }

  /** The notebook panel's layout gives a widget the height its CSS limits say: the bar's
   * are its cards' height, at most a share of the panel (its cards scroll beyond). */
  private fitToContent(): void {
    const inner = this.node.firstElementChild as HTMLElement | null;
    if (this.isHidden || !this.isVisible || !inner || !this.parent) {
      return;
    }
    const height = Math.ceil(Math.min(inner.scrollHeight, this.parent.node.clientHeight * MAX_SHARE));
    if (height === this.fitted) {
      return;
    }
    this.fitted = height;
    this.node.style.minHeight = `${height}px`;
    this.node.style.maxHeight = `${height}px`;
    this.parent.fit();
  }
}

/** Where the bars go: the notebook panels open now, and the client id of each one's kernel
 * connection ('' without a kernel). */
export interface INotebookPanels {
  panels(): Iterable<Widget>;
  clientId(panel: Widget): string;
}

/** The bars under the notebooks of this page: one per notebook an outside agent asks about. */
export class NotebookApprovals {
  private readonly docks = new Map<Widget, ApprovalDock>();
  private disposed = false;

  constructor(
    private readonly notebooks: INotebookPanels,
    private readonly icons: ICardIcons = {}
  ) {}

  get isDisposed(): boolean {
    return this.disposed;
  }

  /** The bars' card holders (an answer in one of them or in the panel is given once). */
  hosts(): HTMLElement[] {
    return Array.from(this.docks.values(), dock => dock.cards);
  }

  /** The bar under `panel`, when it has one. */
  dockOf(panel: Widget): ApprovalDock | undefined {
    return this.docks.get(panel);
  }

  /** Show the pending `approvals` under the notebooks they are about; the others' bars hide.
   * `fresh`: the kernel sent its whole state (every card is drawn anew). */
  show(approvals: readonly IApproval[], answer: AnswerApproval, fresh = false): void {
    if (this.disposed) {
      return;
    }
    const seen = new Set<Widget>();
    for (const panel of this.notebooks.panels()) {
      seen.add(panel);
      const asks = asksFor(approvals, this.notebooks.clientId(panel));
      const dock = asks.length > 0 ? this.dock(panel) : this.docks.get(panel);
      dock?.draw(asks, answer, fresh);
    }
    for (const [panel, dock] of Array.from(this.docks)) {
      if (!seen.has(panel)) {
        dock.draw([], answer, fresh); // (a closed panel's bar went with it)
      }
    }
  }

  /** Remove every bar (the extension goes; a notebook's own bar goes with it anyway). */
  dispose(): void {
    if (this.disposed) {
      return;
    }
    this.disposed = true;
    for (const dock of Array.from(this.docks.values())) {
      dock.dispose();
    }
    this.docks.clear();
  }

  private dock(panel: Widget): ApprovalDock | undefined {
    const known = this.docks.get(panel);
    if (known) {
      return known;
    }
    const layout = panel.layout;
    if (panel.isDisposed || !(layout instanceof BoxLayout)) {
      return undefined; // not a notebook panel as JupyterLab makes them: the side panel shows the ask
    }
    const dock = new ApprovalDock(this.icons);
    BoxLayout.setStretch(dock, 0);
    layout.addWidget(dock);
    this.docks.set(panel, dock);
    dock.disposed.connect(() => {
      if (this.docks.get(panel) === dock) {
        this.docks.delete(panel);
      }
    });
    return dock;
  }
}
