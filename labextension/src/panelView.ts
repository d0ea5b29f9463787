/**
 * The side panel's drawing: the DOM for what PanelState knows, redrawn by what changed
 * (so an open <details>, a note typed in an approval card and the reading position stay).
 *
 * Everything the kernel sends is text (textContent), except the assistant's Markdown, which
 * goes through JupyterLab's Markdown renderer as untrusted (its sanitizer applies).
 */

import { IRenderMimeRegistry, IRenderMime, MimeModel } from '@jupyterlab/rendermime';
import { LabIcon, addIcon, checkIcon, closeIcon, runIcon, stopIcon } from '@jupyterlab/ui-components';
import { IDisposable } from '@lumino/disposable';
import { ApprovalChoice } from './panelProtocol';
import { drawMcpServers } from './panelMcp';
import {
  IApproval,
  IChange,
  LOAD_CODE,
  IItem,
  IRun,
  IRunChange,
  IRunHeader,
  ISay,
  PanelState,
  approvalParts,
  diffLineClass,
  endedNormally,
  isSendKey,
  shortPaths,
  turnsText,
  usageLine
} from './panelState';

const ICON_SVG =
  '<svg xmlns="http://www.w3.org/2000/svg" width="16" viewBox="0 0 24 24"><g class="jp-icon3" fill="#616161">' +
  '<path d="M12 2a2 2 0 0 1 1 3.73V7h4a3 3 0 0 1 3 3v8a3 3 0 0 1-3 3H7a3 3 0 0 1-3-3v-8a3 3 0 0 1 3-3h4V5.73A2 2 0 0 1 12 2zM9 12a1.5 1.5 0 1 0 0 3 1.5 1.5 0 0 0 0-3zm6 0a1.5 1.5 0 1 0 0 3 1.5 1.5 0 0 0 0-3zM1 12h2v5H1zm20 0h2v5h-2z"/>' +
  '</g></svg>';

/** The panel's icon (its sidebar tab). */
export const agentIcon = new LabIcon({ name: 'jupyter-agent:agent', svgstr: ICON_SVG });

/** What the user does in the panel. */
export interface IPanelActions {
  send(prompt: string): void;
  stop(): void;
  newConversation(): void;
  mode(mode: string): void;
  answer(ask: IApproval, choice: ApprovalChoice, feedback: string): void;
  /** Load the extension in the notebook's kernel (the hint's Load button). */
  load(): void;
  /** Undo an ended run's changes (its "Undo this run" button). */
  undo(run: string): void;
  /** Summarise the conversation now (its Compact button). */
  compact(): void;
}

function el<K extends keyof HTMLElementTagNameMap>(tag: K, className = '', text?: string): HTMLElementTagNameMap[K] {
  const node = document.createElement(tag);
  if (className) {
    node.className = className;
  }
  if (text !== undefined) {
    node.textContent = text;
  }
  return node;
}

/** A button named by its words: the icon is hidden from screen readers. */
function button(label: string, className: string, icon?: LabIcon): HTMLButtonElement {
  const node = el('button', className);
  if (icon) {
    const glyph = icon.element({ tag: 'span', className: 'jp-AgentPanel-buttonIcon' });
    glyph.setAttribute('aria-hidden', 'true');
    node.appendChild(glyph);
  }
  node.appendChild(el('span', 'jp-AgentPanel-buttonLabel', label));
  return node;
}

function details(summary: string, body: HTMLElement, open = false): HTMLDetailsElement {
  const d = el('details');
  d.appendChild(el('summary', '', summary));
  d.appendChild(body);
  d.open = open;
  return d;
}

function pre(text: string, className = 'jp-AgentPanel-pre'): HTMLElement {
  return el('pre', className, text);
}

function diffBlock(diff: string): HTMLElement {
  const block = el('pre', 'jp-AgentPanel-pre jp-AgentPanel-diff');
  for (const line of diff.split('\n')) {
    block.appendChild(el('span', diffLineClass(line), line + '\n'));
  }
  return block;
}

function str(value: unknown): string {
  return typeof value === 'string' ? value : value === undefined || value === null ? '' : String(value);
}

/** The sign of a task of the plan, by its status (JupyterLab's own icons; a to-do is an empty ring). */
const TODO_ICONS: Record<string, LabIcon | undefined> = { completed: checkIcon, in_progress: runIcon };

/** The run's plan (the model's TodoWrite list) as a checklist: every text is the kernel's,
 * set as text. The status word is for screen readers; the sign says it to the eye. */
export function drawPlan(node: HTMLElement, item: IItem): void {
  node.textContent = '';
  node.appendChild(el('div', 'jp-AgentPanel-planTitle', str(item.title)));
  const list = el('ul', 'jp-AgentPanel-planList');
  const todos = Array.isArray(item.todos) ? (item.todos as Record<string, unknown>[]) : [];
  for (const todo of todos) {
    const status = str(todo.status);
    const row = el('li', `jp-AgentPanel-todo jp-AgentPanel-todo-${status.replace(/[^a-z_]/g, '')}`);
    const icon = TODO_ICONS[status];
    const sign = icon
      ? icon.element({ tag: 'span', className: 'jp-AgentPanel-todoSign' })
      : el('span', 'jp-AgentPanel-todoSign jp-AgentPanel-todoRing');
    sign.setAttribute('aria-hidden', 'true');
    const label = el('span', 'jp-AgentPanel-todoLabel', `${str(todo.label)}: `);
    row.append(sign, label, el('span', 'jp-AgentPanel-todoText', str(todo.text)));
    list.appendChild(row);
  }
  node.appendChild(list);
}

/** One item's element, and the Markdown renderer of a text item. */
interface IItemView {
  node: HTMLElement;
  renderer?: IRenderMime.IRenderer;
}

/** One run's elements. */
interface IRunView {
  node: HTMLElement;
  body: HTMLElement;
  footer: HTMLElement;
  items: Map<string, IItemView>;
}

/** The panel's DOM inside `host`. */
export class PanelView implements IDisposable {
  private readonly title: HTMLElement;
  private readonly meta: HTMLElement;
  private readonly mcp: HTMLElement;
  private readonly modeSelect: HTMLSelectElement;
  private readonly newButton: HTMLButtonElement;
  private readonly compactButton: HTMLButtonElement;
  private readonly conversation: HTMLElement;
  private readonly approvals: HTMLElement;
  private readonly usage: HTMLElement;
  private readonly input: HTMLTextAreaElement;
  private readonly sendButton: HTMLButtonElement;
  private readonly stopButton: HTMLButtonElement;
  private readonly hint: HTMLElement;
  private readonly runs = new Map<string, IRunView>();
  private disposed = false;

  constructor(
    private readonly host: HTMLElement,
    private readonly rendermime: IRenderMimeRegistry,
    private readonly actions: IPanelActions
  ) {
    const top = el('div', 'jp-AgentPanel-top');
    this.title = el('div', 'jp-AgentPanel-title', 'jupyter-agent');
    this.meta = el('div', 'jp-AgentPanel-meta');
    const controls = el('div', 'jp-AgentPanel-controls');
    const modeLabel = el('label', 'jp-AgentPanel-modeLabel', 'Mode ');
    this.modeSelect = el('select', 'jp-AgentPanel-mode');
    this.modeSelect.title = 'Permission mode: what the agent may do without asking';
    modeLabel.appendChild(this.modeSelect);
    this.newButton = button('New conversation', 'jp-AgentPanel-new jp-mod-styled', addIcon);
    this.newButton.title = 'Forget the history: the next prompt starts a new conversation';
    controls.append(modeLabel, this.newButton);
    this.mcp = el('div', 'jp-AgentPanel-mcp');
    top.append(this.title, this.meta, this.mcp, controls);
    this.conversation = el('div', 'jp-AgentPanel-conversation');
    this.approvals = el('div', 'jp-AgentPanel-approvals');
    const bottom = el('div', 'jp-AgentPanel-bottom');
    this.usage = el('div', 'jp-AgentPanel-usage');
    this.input = el('textarea', 'jp-AgentPanel-input');
    this.input.placeholder = 'Ask the agent… (Enter sends, Shift+Enter for a new line)';
    this.input.rows = 3;
    const buttons = el('div', 'jp-AgentPanel-buttons');
    this.sendButton = button('Send', 'jp-AgentPanel-send jp-mod-styled jp-mod-accept', runIcon);
    this.stopButton = button('Stop', 'jp-AgentPanel-stop jp-mod-styled jp-mod-warn', stopIcon);
    this.stopButton.disabled = true;
    this.compactButton = button('Compact', 'jp-AgentPanel-compact jp-mod-styled');
    this.compactButton.title =
      'Summarise the conversation now, keeping your own messages word for word (`%agent compact WHAT TO KEEP` says what the summary must keep)';
    buttons.append(this.sendButton, this.stopButton, this.compactButton);
    this.hint = el('div', 'jp-AgentPanel-hint');
    bottom.append(this.usage, this.input, buttons, this.hint);
    host.append(top, this.conversation, this.approvals, bottom);

    // Handlers on the panel's own elements: they go with them.
    this.sendButton.onclick = () => actions.send(this.input.value);
    this.stopButton.onclick = () => actions.stop();
    this.newButton.onclick = () => actions.newConversation();
    this.compactButton.onclick = () => actions.compact();
    this.modeSelect.onchange = () => actions.mode(this.modeSelect.value);
    this.input.onkeydown = (event: KeyboardEvent) => {
      if (isSendKey(event)) {
        event.preventDefault();
        actions.send(this.input.value);
      }
    };
  }

  get isDisposed(): boolean {
    return this.disposed;
  }

  /** The Markdown renderers go; the elements go with the panel's node. */
  dispose(): void {
    if (this.disposed) {
      return;
    }
    this.disposed = true;
    this.clearRuns();
  }

  /** The notebook the panel drives (its file name), or none. */
  setTitle(path: string | null): void {
    this.title.textContent = path ? `jupyter-agent · ${path.split('/').pop()}` : 'jupyter-agent';
  }

  /** The line under the input. */
  say(say: ISay): void {
    this.hint.textContent = say.text;
    this.hint.className = `jp-AgentPanel-hint${say.error ? ' jp-AgentPanel-error' : ''}`;
  }

  /** A prompt went: the input is empty again. */
  clearInput(): void {
    this.input.value = '';
  }

  /** Draw what `change` says changed in `state`. */
  show(state: PanelState, change: IChange): void {
    if (change.reset) {
      this.redraw(state);
    }
    for (const id of change.removedRuns) {
      const view = this.runs.get(id);
      if (view) {
        this.disposeItems(view);
        view.node.remove();
        this.runs.delete(id);
      }
    }
    for (const runChange of change.runs) {
      const run = state.runs.get(runChange.id);
      if (run) {
        this.drawRun(run, runChange);
      }
    }
    if (change.approvals) {
      this.drawApprovals(state.approvals);
    }
    if (change.session) {
      this.drawSession(state);
    }
    if (change.say) {
      this.say(change.say);
    }
  }

  private clearRuns(): void {
    for (const view of this.runs.values()) {
      this.disposeItems(view);
    }
    this.runs.clear();
  }

  private disposeItems(view: IRunView): void {
    for (const item of view.items.values()) {
      item.renderer?.dispose();
    }
  }

  private redraw(state: PanelState): void {
    this.clearRuns();
    this.conversation.textContent = '';
    this.approvals.textContent = ''; // a state starts over (another kernel's asks may share ids)
    this.host.classList.toggle('jp-AgentPanel-disconnected', !state.connected);
    if (!state.connected) {
      const hint = el('div', 'jp-AgentPanel-hintBox', state.disconnectedText);
      if (state.loadable) {
        hint.appendChild(this.loadButton());
      }
      this.conversation.appendChild(hint);
      return;
    }
    for (const run of state.runs.values()) {
      this.drawRun(run, { id: run.header.id, items: Array.from(run.items.keys()), removed: [], reordered: true });
    }
    if (!state.runs.size) {
      this.conversation.appendChild(
        el(
          'div',
          'jp-AgentPanel-empty',
          'Ask for something below. The agent works on this notebook, in its kernel; every edit and run waits for your Allow.'
        )
      );
    }
  }

  /** Runs `%load_ext jupyter_agent` in the kernel; the panel connects when it is loaded, and
   * says under the input what went wrong when it is not. */
  private loadButton(): HTMLElement {
    const row = el('div', 'jp-AgentPanel-buttons');
    const load = button('Load', 'jp-AgentPanel-load jp-mod-styled jp-mod-accept');
    load.title = `Run ${LOAD_CODE} in this notebook's kernel (no cell is added)`;
    load.onclick = () => {
      load.disabled = true;
      load.querySelector('.jp-AgentPanel-buttonLabel')!.textContent = 'Loading…';
      this.actions.load();
    };
    row.appendChild(load);
    return row;
  }

  /** The Load button can be pressed again (the load failed). */
  loadFailed(): void {
    const load = this.conversation.querySelector<HTMLButtonElement>('.jp-AgentPanel-load');
    if (load) {
      load.disabled = false;
      load.querySelector('.jp-AgentPanel-buttonLabel')!.textContent = 'Load';
    }
  }

  private drawSession(state: PanelState): void {
    const session = state.session;
    const modes = session?.modes ?? [];
    if (
      Array.from(this.modeSelect.options)
        .map(o => o.value)
        .join() !== modes.join()
    ) {
      this.modeSelect.textContent = '';
      for (const mode of modes) {
        const option = el('option', '', mode);
        option.value = mode;
        this.modeSelect.appendChild(option);
      }
    }
    this.modeSelect.value = session?.permission_mode ?? 'default';
    this.meta.textContent = '';
    if (!session) {
      this.usage.textContent = '';
      this.sendButton.disabled = true;
      this.stopButton.disabled = true;
      return;
    }
    this.meta.appendChild(el('code', '', session.model ?? ''));
    drawMcpServers(this.mcp, session.mcp ?? []);
    if (session.replay) {
      const badge = el('span', 'jp-AgentPanel-offline', 'offline replay');
      badge.title = `No API key: runs replay the recorded session ${session.replay}`;
      this.meta.appendChild(badge);
    }
    const busy = state.busy;
    this.sendButton.disabled = busy;
    this.stopButton.disabled = !busy;
    this.newButton.disabled = busy;
    this.compactButton.disabled = busy || !session.context;
    this.usage.textContent = `${usageLine(session.usage, session.context)}${busy ? ' · running…' : ''}`;
    this.usage.title = 'Tokens and estimated cost of this conversation, and how full its context window is';
  }

  private drawRun(run: IRun, runChange: IRunChange): void {
    // keep following the end, unless the user scrolled up to read
    const box = this.conversation;
    const follow = box.scrollHeight - box.scrollTop - box.clientHeight < 40;
    let view = this.runs.get(runChange.id);
    if (!view) {
      this.conversation.querySelector('.jp-AgentPanel-empty')?.remove();
      const node = el('div', 'jp-AgentPanel-run');
      node.dataset.origin = str(run.header.origin);
      const body = el('div', 'jp-AgentPanel-runBody');
      const footer = el('div', 'jp-AgentPanel-runFooter');
      node.append(body, footer);
      this.conversation.appendChild(node);
      view = { node, body, footer, items: new Map() };
      this.runs.set(runChange.id, view);
    }
    for (const key of runChange.removed) {
      view.items.get(key)?.renderer?.dispose();
      view.items.get(key)?.node.remove();
      view.items.delete(key);
    }
    for (const key of runChange.items) {
      const item = run.items.get(key);
      if (item) {
        this.drawItem(view, item);
      }
    }
    if (runChange.reordered) {
      for (const key of run.order) {
        const entry = view.items.get(key);
        if (entry) {
          view.body.appendChild(entry.node); // moves it into place
        }
      }
    }
    this.drawFooter(view, run);
    if (follow) {
      box.scrollTop = box.scrollHeight;
    }
  }

  /** An ended run's changes: the kernel's names its cells changed, Undo this run, and
   * what the undo did (all text the kernel redacted; set as text, never markup). */
  private drawUndo(view: IRunView, h: IRunHeader): void {
    if (h.variables) {
      view.footer.appendChild(el('div', 'jp-AgentPanel-status', h.variables));
    }
    if (h.undo === 'available' || h.undo === 'running') {
      const undo = button('Undo this run', 'jp-AgentPanel-undo jp-mod-styled');
      undo.disabled = h.undo === 'running';
      undo.onclick = () => {
        undo.disabled = true;
        this.actions.undo(h.id);
      };
      view.footer.appendChild(undo);
    }
    for (const line of h.undo_lines ?? []) {
      view.footer.appendChild(el('div', 'jp-AgentPanel-status', line)); // each line starts with its sign
    }
  }

  private drawFooter(view: IRunView, run: IRun): void {
    const h = run.header;
    view.footer.textContent = '';
    view.footer.className = 'jp-AgentPanel-runFooter';
    if (!h.ended) {
      view.footer.appendChild(el('span', 'jp-AgentPanel-status', `${str(h.status)} · ${turnsText(h.turns)}`));
      return;
    }
    view.footer.classList.add(endedNormally(h) ? 'jp-AgentPanel-ok' : 'jp-AgentPanel-bad');
    const line = el('div');
    // A normal end is one quiet line; the others say what happened and what to do.
    line.append(el('b', '', h.meaning ? `${str(h.title)} ` : `✓ ${str(h.title)} `), el('code', '', str(h.reason)));
    if (h.meaning) {
      line.append(document.createTextNode(` — ${h.meaning}`));
    }
    view.footer.appendChild(line);
    if (h.error) {
      view.footer.appendChild(el('div', 'jp-AgentPanel-error', h.error));
    }
    view.footer.appendChild(
      el('div', 'jp-AgentPanel-status', `${turnsText(h.turns)} · ${usageLine(h.usage, h.context)}`)
    );
    this.drawUndo(view, h);
  }

  private drawItem(view: IRunView, item: IItem): void {
    let entry = view.items.get(item.key);
    if (!entry) {
      entry = { node: el('div', `jp-AgentPanel-item jp-AgentPanel-${item.kind}`) };
      view.items.set(item.key, entry);
      view.body.appendChild(entry.node);
    }
    const node = entry.node;
    switch (item.kind) {
      case 'prompt':
        node.textContent = str(item.text);
        break;
      case 'text':
        this.drawMarkdown(entry, str(item.text));
        break;
      case 'thinking':
        this.drawThinking(node, item);
        break;
      case 'tool':
        this.drawTool(node, item);
        break;
      case 'notice':
        node.className = `jp-AgentPanel-item jp-AgentPanel-notice jp-AgentPanel-level-${str(item.level)}`;
        node.textContent = str(item.text);
        break;
      case 'block':
        node.textContent = '';
        node.appendChild(details(`${str(item.block_type)} block`, pre(str(item.json))));
        break;
      case 'plan':
        drawPlan(node, item);
        break;
      default:
        node.textContent = '';
    }
  }

  /** Assistant text, through JupyterLab's Markdown renderer, untrusted: sanitized. */
  private drawMarkdown(entry: IItemView, text: string): void {
    if (!entry.renderer) {
      entry.renderer = this.rendermime.createRenderer('text/markdown');
      entry.node.textContent = '';
      entry.node.appendChild(entry.renderer.node);
    }
    const model = new MimeModel({ trusted: false, data: { 'text/markdown': text } });
    void entry.renderer.renderModel(model).catch(err => {
      console.debug('jupyter-agent: Markdown not rendered, shown as text', err);
      entry.node.textContent = text;
    });
  }

  private drawThinking(node: HTMLElement, item: IItem): void {
    const wasOpen = node.querySelector('details')?.open ?? false;
    node.textContent = '';
    const text = str(item.text);
    const size = `${text.length.toLocaleString('en-US')} chars`;
    if (item.redacted) {
      node.appendChild(el('i', '', 'Thinking (redacted by the API)'));
    } else if (!item.done) {
      node.appendChild(el('i', '', `Thinking… (${size})`));
    } else {
      node.appendChild(details(`Thinking (${size})`, pre(text), wasOpen));
    }
  }

  private drawTool(node: HTMLElement, item: IItem): void {
    const open = new Set(
      Array.from(node.querySelectorAll('details'))
        .filter(d => d.open)
        .map(d => d.dataset.part)
    );
    const state = str(item.state);
    node.className = `jp-AgentPanel-item jp-AgentPanel-tool jp-AgentPanel-state-${state}`;
    node.dataset.tool = str(item.name);
    node.textContent = '';
    const head = el('div', 'jp-AgentPanel-toolHead');
    const summary = el('code', '', shortPaths(str(item.summary)));
    summary.title = str(item.summary);
    const duration = typeof item.duration_s === 'number' && item.duration_s ? ` · ${item.duration_s.toFixed(1)} s` : '';
    head.append(
      el('span', 'jp-AgentPanel-dot'),
      el('b', '', `${str(item.name)} `),
      summary,
      el('span', 'jp-AgentPanel-toolState', ` ${str(item.label)}${duration}`)
    );
    node.appendChild(head);
    if (item.receiving) {
      node.appendChild(el('div', 'jp-AgentPanel-muted', `receiving input (${str(item.receiving)} chars)`));
    }
    const part = (name: string, title: string, body: HTMLElement, openByDefault = false) => {
      const d = details(title, body, openByDefault || open.has(name));
      d.dataset.part = name;
      node.appendChild(d);
    };
    if (item.input) {
      part('input', 'input', pre(str(item.input)));
    }
    if (item.decision) {
      node.appendChild(el('div', 'jp-AgentPanel-decision', str(item.decision)));
    }
    if (item.progress) {
      node.appendChild(pre(str(item.progress)));
    }
    const result = Array.isArray(item.result) ? (item.result as [string, string][]) : [];
    if (result.length) {
      const body = el('div');
      for (const [kind, value] of result) {
        if (kind === 'image' && str(value).startsWith('data:image/')) {
          const img = el('img', 'jp-AgentPanel-image');
          img.src = value;
          body.appendChild(img);
        } else {
          body.appendChild(pre(str(value)));
        }
      }
      const isError = state === 'error';
      part('result', isError ? 'error' : 'result', body, isError);
    }
  }

  /** One card per pending ask; a card already shown stays as it is (with what was typed in it). */
  private drawApprovals(approvals: IApproval[]): void {
    const pending = new Set(approvals.map(a => String(a.id)));
    for (const card of Array.from(this.approvals.children) as HTMLElement[]) {
      if (!pending.has(card.dataset.request ?? '')) {
        card.remove();
      }
    }
    const shown = new Set((Array.from(this.approvals.children) as HTMLElement[]).map(c => c.dataset.request));
    for (const ask of approvals) {
      if (!shown.has(String(ask.id))) {
        this.approvals.appendChild(this.approvalCard(ask));
      }
    }
  }

  /** A card as the cell's: what will run or change (its box scrolls), then the note and
   * Allow / Always allow / Deny, which stay in view however long the code is. */
  private approvalCard(ask: IApproval): HTMLElement {
    const card = el('div', 'jp-AgentPanel-approval');
    card.dataset.request = String(ask.id);
    if (ask.tool_use_id) {
      card.dataset.toolUseId = ask.tool_use_id;
    }
    const body = el('div', 'jp-AgentPanel-approvalBody');
    const title = el('div', 'jp-AgentPanel-approvalTitle');
    title.append(el('span', '', 'Allow '), el('b', '', str(ask.tool)), el('span', '', '?'));
    body.appendChild(title);
    const parts = approvalParts(ask);
    if (parts.line) {
      body.appendChild(el('div', 'jp-AgentPanel-muted', parts.line));
    }
    if (ask.warning) {
      body.appendChild(el('div', 'jp-AgentPanel-error jp-AgentPanel-warning', ask.warning));
    }
    const shown = parts.shown;
    body.appendChild(
      shown.kind === 'diff'
        ? diffBlock(shown.text)
        : pre(shown.text, `jp-AgentPanel-pre${shown.kind === 'code' ? ' jp-AgentPanel-code' : ''}`)
    );
    if (parts.rawInput) {
      body.appendChild(details('raw input', pre(parts.rawInput)));
    }
    const actions = el('div', 'jp-AgentPanel-approvalActions');
    const feedback = el('input', 'jp-AgentPanel-feedback');
    feedback.type = 'text';
    feedback.placeholder = 'Optional note for the agent (sent with Deny)';
    const buttons = el('div', 'jp-AgentPanel-buttons');
    const allow = button('Allow', 'jp-mod-styled jp-AgentPanel-allow', checkIcon);
    const always = button('Always allow', 'jp-mod-styled jp-AgentPanel-always');
    always.title = `Allow, and from now on in this session: ${(ask.rules ?? []).join(', ')}`;
    const deny = button('Deny', 'jp-mod-styled jp-AgentPanel-deny', closeIcon);
    const answer = (choice: ApprovalChoice) => {
      for (const b of [allow, always, deny]) {
        b.disabled = true;
      }
      this.actions.answer(ask, choice, feedback.value);
    };
    allow.onclick = () => answer('allow');
    always.onclick = () => answer('always');
    deny.onclick = () => answer('deny');
    buttons.append(allow, deny, always); // the two answers first: a narrow panel wraps the third
    actions.append(feedback, buttons);
    card.append(body, actions);
    return card;
  }
}
