/**
 * The jupyter-agent side panel: a chat in JupyterLab's right sidebar, bound to the current
 * notebook's kernel, driving the same conversation as that notebook's `%%agent` cells and
 * `jupyter_agent.chat()`.
 *
 * The panel opens a comm to PANEL_TARGET on the kernel (registered by `%load_ext
 * jupyter_agent`; a kernel without it closes the comm at once, and the panel says what to
 * run). The kernel (jupyter_agent/jupyter/panel_comm.py) answers with the whole state,
 * then one `update` per frame: the runs' items as plain data (prompt, text, thinking,
 * tool, notice, block), the pending approvals, the session's model, mode, tokens, cost.
 * The panel sends `send`, `stop`, `new`, `mode` and `approve`. Nothing secret is in
 * what the kernel sends (it redacts); the panel sends only what the user typed or clicked.
 */

import { JupyterFrontEnd } from '@jupyterlab/application';
import { INotebookTracker, NotebookPanel } from '@jupyterlab/notebook';
import { Kernel, KernelMessage } from '@jupyterlab/services';
import { LabIcon } from '@jupyterlab/ui-components';
import { Widget } from '@lumino/widgets';
import { PANEL_TARGET, PANEL_VERSION as PANEL_PROTOCOL } from './protocol';
export const HINT = 'Run %load_ext jupyter_agent in this notebook to use the agent here.';

type JSONObject = Record<string, any>;

const ICON_SVG =
  '<svg xmlns="http://www.w3.org/2000/svg" width="16" viewBox="0 0 24 24"><g class="jp-icon3" fill="#616161">' +
  '<path d="M12 2a2 2 0 0 1 1 3.73V7h4a3 3 0 0 1 3 3v8a3 3 0 0 1-3 3H7a3 3 0 0 1-3-3v-8a3 3 0 0 1 3-3h4V5.73A2 2 0 0 1 12 2zM9 12a1.5 1.5 0 1 0 0 3 1.5 1.5 0 0 0 0-3zm6 0a1.5 1.5 0 1 0 0 3 1.5 1.5 0 0 0 0-3zM1 12h2v5H1zm20 0h2v5h-2z"/>' +
  '</g></svg>';

export const agentIcon = new LabIcon({ name: 'jupyter-agent:agent', svgstr: ICON_SVG });

/** Absolute paths shortened to their last part: the panel is narrow (the full text is the tooltip). */
function shortPaths(text: string): string {
  return text.replace(/(?:\/[^\s/]+)+\/([^\s/]+)/g, '…/$1');
}

function el<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  className = '',
  text?: string
): HTMLElementTagNameMap[K] {
  const node = document.createElement(tag);
  if (className) {
    node.className = className;
  }
  if (text !== undefined) {
    node.textContent = text;
  }
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
    let cls = '';
    if (line.startsWith('+') && !line.startsWith('+++')) {
      cls = 'jp-AgentPanel-add';
    } else if (line.startsWith('-') && !line.startsWith('---')) {
      cls = 'jp-AgentPanel-del';
    } else if (line.startsWith('@@')) {
      cls = 'jp-AgentPanel-hunk';
    }
    block.appendChild(el('span', cls, line + '\n'));
  }
  return block;
}

function formatUsage(usage: JSONObject | undefined): string {
  if (!usage) {
    return '';
  }
  const n = (x: number) => (x || 0).toLocaleString('en-US');
  return `${n(usage.input_tokens)} in · ${n(usage.output_tokens)} out · ≈ $${(usage.cost_usd || 0).toFixed(4)}`;
}

/** One run as shown: its element, its items' elements, what they last drew. */
interface IRunView {
  node: HTMLElement;
  body: HTMLElement;
  footer: HTMLElement;
  items: Map<string, { node: HTMLElement; data: JSONObject; renderer?: any }>;
  header: JSONObject;
}

/** The sidebar widget. */
export class AgentSidePanel extends Widget {
  private notebook: NotebookPanel | null = null;
  private kernel: Kernel.IKernelConnection | null = null;
  private comm: Kernel.IComm | null = null;
  private connected = false;
  /** A cell ran since the last idle: it may have been `%load_ext jupyter_agent`. */
  private cellRan = false;
  /** A cell finished while an attempt to connect was on its way: try again if refused. */
  private retryIfRefused = false;
  private runs = new Map<string, IRunView>();
  private readonly title_: HTMLElement;
  private readonly meta: HTMLElement;
  private readonly modeSelect: HTMLSelectElement;
  private readonly newButton: HTMLButtonElement;
  private readonly conversation: HTMLElement;
  private readonly approvals: HTMLElement;
  private readonly usage: HTMLElement;
  private readonly input: HTMLTextAreaElement;
  private readonly sendButton: HTMLButtonElement;
  private readonly stopButton: HTMLButtonElement;
  private readonly hint: HTMLElement;

  constructor() {
    super();
    this.id = 'jupyter-agent-panel';
    this.addClass('jp-AgentPanel');
    this.title.icon = agentIcon;
    this.title.caption = 'jupyter-agent';
    const top = el('div', 'jp-AgentPanel-top');
    this.title_ = el('div', 'jp-AgentPanel-title', 'jupyter-agent');
    this.meta = el('div', 'jp-AgentPanel-meta');
    const controls = el('div', 'jp-AgentPanel-controls');
    const modeLabel = el('label', 'jp-AgentPanel-modeLabel', 'Mode ');
    this.modeSelect = el('select', 'jp-AgentPanel-mode');
    this.modeSelect.title = 'Permission mode: what the agent may do without asking';
    modeLabel.appendChild(this.modeSelect);
    this.newButton = el('button', 'jp-AgentPanel-new jp-mod-styled', 'New conversation');
    this.newButton.title = 'Forget the history: the next prompt starts a new conversation';
    controls.append(modeLabel, this.newButton);
    top.append(this.title_, this.meta, controls);
    this.conversation = el('div', 'jp-AgentPanel-conversation');
    this.approvals = el('div', 'jp-AgentPanel-approvals');
    const bottom = el('div', 'jp-AgentPanel-bottom');
    this.usage = el('div', 'jp-AgentPanel-usage');
    this.input = el('textarea', 'jp-AgentPanel-input');
    this.input.placeholder = 'Ask the agent… (Enter sends, Shift+Enter for a new line)';
    this.input.rows = 3;
    const buttons = el('div', 'jp-AgentPanel-buttons');
    this.sendButton = el('button', 'jp-AgentPanel-send jp-mod-styled jp-mod-accept', 'Send');
    this.stopButton = el('button', 'jp-AgentPanel-stop jp-mod-styled jp-mod-warn', 'Stop');
    this.stopButton.disabled = true;
    buttons.append(this.sendButton, this.stopButton);
    this.hint = el('div', 'jp-AgentPanel-hint');
    bottom.append(this.usage, this.input, buttons, this.hint);
    this.node.append(top, this.conversation, this.approvals, bottom);

    this.sendButton.onclick = () => this.sendPrompt();
    this.stopButton.onclick = () => this.request({ op: 'stop' });
    this.newButton.onclick = () => this.request({ op: 'new' });
    this.modeSelect.onchange = () => this.request({ op: 'mode', mode: this.modeSelect.value });
    this.input.onkeydown = (event: KeyboardEvent) => {
      if (event.key === 'Enter' && !event.shiftKey && !event.isComposing) {
        event.preventDefault();
        this.sendPrompt();
      }
    };
    this.showDisconnected('Open a notebook to use the agent.');
  }

  // -- which kernel -------------------------------------------------------------------
  /** Drive the kernel of `panel` (the current notebook), or nothing. */
  bind(panel: NotebookPanel | null): void {
    if (panel === this.notebook) {
      return;
    }
    if (this.notebook) {
      this.notebook.sessionContext.kernelChanged.disconnect(this.onKernelChanged, this);
      this.notebook.sessionContext.statusChanged.disconnect(this.onStatus, this);
      this.notebook.sessionContext.iopubMessage.disconnect(this.onIOPub, this);
    }
    this.notebook = panel;
    this.disconnect();
    if (!panel) {
      this.title_.textContent = 'jupyter-agent';
      this.showDisconnected('Open a notebook to use the agent.');
      return;
    }
    this.title_.textContent = `jupyter-agent · ${panel.context.path.split('/').pop()}`;
    panel.sessionContext.kernelChanged.connect(this.onKernelChanged, this);
    panel.sessionContext.statusChanged.connect(this.onStatus, this);
    panel.sessionContext.iopubMessage.connect(this.onIOPub, this);
    void panel.sessionContext.ready.then(() => {
      if (this.notebook === panel) {
        this.connect();
      }
    });
  }

  private onKernelChanged(): void {
    this.disconnect();
    this.connect();
  }

  private onIOPub(_: unknown, msg: KernelMessage.IMessage): void {
    if (msg.header.msg_type === 'execute_input') {
      this.cellRan = true;
    }
  }

  /** After each cell the kernel may have loaded the extension: try again. Only cells
   * count: the kernel's busy/idle around a refused comm must not start another try. */
  private onStatus(_: unknown, status: string): void {
    if (status === 'restarting' || status === 'dead') {
      this.disconnect();
      this.showDisconnected('The kernel is restarting. ' + HINT);
    } else if (status === 'idle' && this.cellRan) {
      this.cellRan = false;
      if (this.connected) {
        return;
      }
      if (this.comm) {
        this.retryIfRefused = true; // an earlier try is on its way; it may predate the cell
      } else {
        this.connect();
      }
    }
  }

  private disconnect(): void {
    const comm = this.comm;
    this.comm = null;
    this.connected = false;
    this.retryIfRefused = false;
    this.kernel = null;
    if (comm && !comm.isDisposed) {
      try {
        comm.close();
      } catch {
        // the kernel is gone: nothing to close
      }
    }
  }

  private connect(): void {
    const kernel = this.notebook?.sessionContext.session?.kernel ?? null;
    if (!kernel) {
      this.showDisconnected('This notebook has no kernel. Start one, then ' + HINT.charAt(0).toLowerCase() + HINT.slice(1));
      return;
    }
    if (this.comm && this.kernel === kernel) {
      return; // already asked
    }
    if (!kernel.handleComms) {
      this.showDisconnected(
        "This notebook's kernel connection cannot take comms (another view opened the kernel first): open the notebook in its own tab."
      );
      return;
    }
    this.kernel = kernel;
    let comm: Kernel.IComm;
    try {
      comm = kernel.createComm(PANEL_TARGET);
    } catch (err) {
      this.showDisconnected(HINT);
      return;
    }
    this.comm = comm;
    // Never return the promise from onMsg: the page would stop handling kernel messages.
    comm.onMsg = (msg: KernelMessage.ICommMsgMsg) => {
      if (this.comm === comm) {
        this.receive(msg.content.data as JSONObject);
      }
    };
    comm.onClose = () => {
      if (this.comm === comm) {
        this.comm = null;
        this.connected = false;
        this.showDisconnected(HINT);
        if (this.retryIfRefused) {
          this.retryIfRefused = false;
          this.connect();
        }
      }
    };
    void comm.open({ v: PANEL_PROTOCOL, op: 'hello' }).done.catch(() => undefined);
  }

  private request(data: JSONObject): void {
    if (!this.comm || !this.connected) {
      this.say(HINT, true);
      return;
    }
    this.comm.send({ v: PANEL_PROTOCOL, ...data });
  }

  private sendPrompt(): void {
    const prompt = this.input.value.trim();
    if (!prompt) {
      this.say('Write a message first.');
      return;
    }
    if (!this.connected) {
      this.say(HINT, true);
      return;
    }
    this.request({ op: 'send', prompt });
    this.input.value = '';
    this.say('');
  }

  // -- what the kernel says ---------------------------------------------------------------
  private receive(data: JSONObject): void {
    if (!data || data.v !== PANEL_PROTOCOL) {
      this.say(
        `This kernel's jupyter-agent speaks panel protocol ${String(data?.v)}, this page ${PANEL_PROTOCOL}: install the same version in the kernel and the server, then reload.`,
        true
      );
      return;
    }
    if (data.type === 'error') {
      this.say(String(data.text), true);
      return;
    }
    if (data.type === 'state') {
      this.connected = true;
      this.node.classList.remove('jp-AgentPanel-disconnected');
      this.say('');
      this.conversation.textContent = '';
      this.runs.clear();
      for (const run of data.runs ?? []) {
        this.drawRun(run);
      }
      this.approvals.textContent = ''; // a state starts over (another kernel's asks may share ids)
      this.drawApprovals(data.approvals ?? []);
      if (!(data.runs ?? []).length) {
        this.conversation.appendChild(
          el('div', 'jp-AgentPanel-empty', 'Ask for something below. The agent works on this notebook, in its kernel; every edit and run waits for your Allow.')
        );
      }
    } else if (data.type === 'update') {
      for (const run of data.runs ?? []) {
        this.drawRun(run);
      }
      const live = new Set<string>(data.run_ids ?? []);
      for (const [id, view] of this.runs) {
        if (!live.has(id)) {
          view.node.remove();
          this.runs.delete(id);
        }
      }
      if (data.approvals !== undefined) {
        this.drawApprovals(data.approvals);
      }
    }
    if (data.session) {
      this.drawSession(data.session);
    }
  }

  private drawSession(session: JSONObject): void {
    const modes: string[] = session.modes ?? [];
    if (Array.from(this.modeSelect.options).map(o => o.value).join() !== modes.join()) {
      this.modeSelect.textContent = '';
      for (const mode of modes) {
        const option = el('option', '', mode);
        option.value = mode;
        this.modeSelect.appendChild(option);
      }
    }
    this.modeSelect.value = session.permission_mode ?? 'default';
    this.meta.textContent = '';
    this.meta.appendChild(el('code', '', session.model ?? ''));
    if (session.replay) {
      const badge = el('span', 'jp-AgentPanel-offline', 'offline replay');
      badge.title = `No API key: runs replay the recorded session ${session.replay}`;
      this.meta.appendChild(badge);
    }
    const busy = !!session.busy;
    this.sendButton.disabled = busy;
    this.stopButton.disabled = !busy;
    this.newButton.disabled = busy;
    this.usage.textContent = `${formatUsage(session.usage)}${busy ? ' · running…' : ''}`;
    this.usage.title = 'Tokens and estimated cost of this conversation';
  }

  private drawRun(run: JSONObject): void {
    const header = run.header;
    // keep following the end, unless the user scrolled up to read
    const box = this.conversation;
    const follow = box.scrollHeight - box.scrollTop - box.clientHeight < 40;
    let view = this.runs.get(header.id);
    if (!view) {
      this.conversation.querySelector('.jp-AgentPanel-empty')?.remove();
      const node = el('div', 'jp-AgentPanel-run');
      node.dataset.origin = header.origin;
      const body = el('div', 'jp-AgentPanel-runBody');
      const footer = el('div', 'jp-AgentPanel-runFooter');
      node.append(body, footer);
      this.conversation.appendChild(node);
      view = { node, body, footer, items: new Map(), header };
      this.runs.set(header.id, view);
    }
    view.header = header;
    for (const item of run.items ?? []) {
      this.drawItem(view, item);
    }
    if (run.order) {
      const order: string[] = run.order;
      for (const key of Array.from(view.items.keys())) {
        if (!order.includes(key)) {
          view.items.get(key)?.renderer?.dispose();
          view.items.get(key)?.node.remove();
          view.items.delete(key);
        }
      }
      for (const key of order) {
        const entry = view.items.get(key);
        if (entry) {
          view.body.appendChild(entry.node); // moves it into place
        }
      }
    }
    this.drawFooter(view);
    if (follow) {
      this.conversation.scrollTop = this.conversation.scrollHeight;
    }
  }

  private drawFooter(view: IRunView): void {
    const h = view.header;
    view.footer.textContent = '';
    view.footer.className = 'jp-AgentPanel-runFooter';
    if (!h.ended) {
      view.footer.appendChild(el('span', 'jp-AgentPanel-status', `${h.status} · ${h.turns} turn${h.turns === 1 ? '' : 's'}`));
      return;
    }
    const ok = h.reason === 'completed' || h.reason === 'max_turns';
    view.footer.classList.add(ok ? 'jp-AgentPanel-ok' : 'jp-AgentPanel-bad');
    const line = el('div');
    // A normal end is one quiet line; the others say what happened and what to do.
    line.append(el('b', '', h.meaning ? `${h.title} ` : `✓ ${h.title} `), el('code', '', h.reason));
    if (h.meaning) {
      line.append(document.createTextNode(` — ${h.meaning}`));
    }
    view.footer.appendChild(line);
    if (h.error) {
      view.footer.appendChild(el('div', 'jp-AgentPanel-error', h.error));
    }
    view.footer.appendChild(
      el('div', 'jp-AgentPanel-status', `${h.turns} turn${h.turns === 1 ? '' : 's'} · ${formatUsage(h.usage)}`)
    );
  }

  private drawItem(view: IRunView, item: JSONObject): void {
    let entry = view.items.get(item.key);
    if (!entry) {
      entry = { node: el('div', `jp-AgentPanel-item jp-AgentPanel-${item.kind}`), data: item };
      view.items.set(item.key, entry);
      view.body.appendChild(entry.node);
    }
    entry.data = item;
    const node = entry.node;
    switch (item.kind) {
      case 'prompt':
        node.textContent = item.text;
        break;
      case 'text':
        this.drawMarkdown(entry, item.text);
        break;
      case 'thinking':
        this.drawThinking(node, item);
        break;
      case 'tool':
        this.drawTool(node, item);
        break;
      case 'notice':
        node.className = `jp-AgentPanel-item jp-AgentPanel-notice jp-AgentPanel-level-${item.level}`;
        node.textContent = item.text;
        break;
      case 'block':
        node.textContent = '';
        node.appendChild(details(`${item.block_type} block`, pre(item.json)));
        break;
      default:
        node.textContent = '';
    }
  }

  /** Assistant text, through JupyterLab's own Markdown renderer (sanitized: untrusted). */
  private drawMarkdown(entry: { node: HTMLElement; renderer?: any }, text: string): void {
    const rendermime = (this.notebook?.content as any)?.rendermime;
    if (!rendermime) {
      entry.node.textContent = text;
      return;
    }
    if (!entry.renderer) {
      entry.renderer = rendermime.createRenderer('text/markdown');
      entry.node.textContent = '';
      entry.node.appendChild(entry.renderer.node);
    }
    const model = { trusted: false, data: { 'text/markdown': text }, metadata: {}, setData: () => undefined };
    void entry.renderer.renderModel(model).catch(() => {
      entry.node.textContent = text;
    });
  }

  private drawThinking(node: HTMLElement, item: JSONObject): void {
    const wasOpen = (node.querySelector('details') as HTMLDetailsElement | null)?.open ?? false;
    node.textContent = '';
    const size = `${(item.text as string).length.toLocaleString('en-US')} chars`;
    if (item.redacted) {
      node.appendChild(el('i', '', 'Thinking (redacted by the API)'));
    } else if (!item.done) {
      node.appendChild(el('i', '', `Thinking… (${size})`));
    } else {
      node.appendChild(details(`Thinking (${size})`, pre(item.text), wasOpen));
    }
  }

  private drawTool(node: HTMLElement, item: JSONObject): void {
    const open = new Set(
      Array.from(node.querySelectorAll('details'))
        .filter(d => (d as HTMLDetailsElement).open)
        .map(d => (d as HTMLDetailsElement).dataset.part)
    );
    node.className = `jp-AgentPanel-item jp-AgentPanel-tool jp-AgentPanel-state-${item.state}`;
    node.dataset.tool = item.name;
    node.textContent = '';
    const head = el('div', 'jp-AgentPanel-toolHead');
    const summary = el('code', '', shortPaths(item.summary));
    summary.title = item.summary;
    head.append(
      el('span', 'jp-AgentPanel-dot'),
      el('b', '', `${item.name} `),
      summary,
      el('span', 'jp-AgentPanel-toolState', ` ${item.label}${item.duration_s ? ` · ${item.duration_s.toFixed(1)} s` : ''}`)
    );
    node.appendChild(head);
    if (item.receiving) {
      node.appendChild(el('div', 'jp-AgentPanel-muted', `receiving input (${item.receiving} chars)`));
    }
    const part = (name: string, summary: string, body: HTMLElement, openByDefault = false) => {
      const d = details(summary, body, openByDefault || open.has(name));
      d.dataset.part = name;
      node.appendChild(d);
    };
    if (item.input) {
      part('input', 'input', pre(item.input));
    }
    if (item.decision) {
      node.appendChild(el('div', 'jp-AgentPanel-decision', item.decision));
    }
    if (item.progress) {
      node.appendChild(pre(item.progress));
    }
    const result: [string, string][] = item.result ?? [];
    if (result.length) {
      const body = el('div');
      for (const [kind, value] of result) {
        if (kind === 'image' && value.startsWith('data:image/')) {
          const img = el('img', 'jp-AgentPanel-image');
          img.src = value;
          body.appendChild(img);
        } else {
          body.appendChild(pre(value));
        }
      }
      const isError = item.state === 'error';
      part('result', isError ? 'error' : 'result', body, isError);
    }
  }

  /** One card per pending ask; a card already shown stays as it is (with what was typed in it). */
  private drawApprovals(approvals: JSONObject[]): void {
    const pending = new Set(approvals.map(a => String(a.id)));
    for (const card of Array.from(this.approvals.children) as HTMLElement[]) {
      if (!pending.has(card.dataset.request ?? '')) {
        card.remove();
      }
    }
    for (const ask of approvals) {
      if (this.approvals.querySelector(`[data-request="${String(ask.id)}"]`)) {
        continue;
      }
      const card = el('div', 'jp-AgentPanel-approval');
      card.dataset.request = String(ask.id);
      const title = el('div', 'jp-AgentPanel-approvalTitle');
      title.append(el('span', '', 'Allow '), el('b', '', ask.tool), el('span', '', '?'));
      card.appendChild(title);
      if (ask.message) {
        card.appendChild(el('div', 'jp-AgentPanel-muted', ask.message));
      }
      card.appendChild(ask.diff ? diffBlock(ask.diff) : pre(ask.input));
      const feedback = el('textarea', 'jp-AgentPanel-feedback');
      feedback.placeholder = 'Optional note for the agent (sent with Deny)';
      feedback.rows = 2;
      const buttons = el('div', 'jp-AgentPanel-buttons');
      const allow = el('button', 'jp-mod-styled jp-mod-accept', 'Allow');
      const always = el('button', 'jp-mod-styled', 'Always allow');
      always.title = `Allow, and from now on in this session: ${(ask.rules ?? []).join(', ')}`;
      const deny = el('button', 'jp-mod-styled jp-mod-reject', 'Deny');
      const answer = (choice: string) => {
        for (const b of [allow, always, deny]) {
          b.disabled = true;
        }
        this.request({ op: 'approve', request: ask.id, choice, feedback: choice === 'deny' ? feedback.value : '' });
      };
      allow.onclick = () => answer('allow');
      always.onclick = () => answer('always');
      deny.onclick = () => answer('deny');
      buttons.append(allow, always, deny);
      card.append(feedback, buttons);
      this.approvals.appendChild(card);
    }
  }

  // -- messages ---------------------------------------------------------------------------
  private showDisconnected(text: string): void {
    this.connected = false;
    this.node.classList.add('jp-AgentPanel-disconnected');
    this.conversation.textContent = '';
    this.approvals.textContent = '';
    this.runs.clear();
    this.meta.textContent = '';
    this.usage.textContent = '';
    this.sendButton.disabled = true;
    this.stopButton.disabled = true;
    this.conversation.appendChild(el('div', 'jp-AgentPanel-hintBox', text));
    this.say('');
  }

  private say(text: string, error = false): void {
    this.hint.textContent = text;
    this.hint.className = `jp-AgentPanel-hint${error ? ' jp-AgentPanel-error' : ''}`;
  }
}

/** Add the panel to the right sidebar and keep it bound to the current notebook. */
export function activatePanel(app: JupyterFrontEnd, tracker: INotebookTracker): AgentSidePanel {
  const panel = new AgentSidePanel();
  app.shell.add(panel, 'right', { rank: 600 });
  const follow = () => panel.bind(tracker.currentWidget);
  tracker.currentChanged.connect(follow);
  follow();
  return panel;
}
