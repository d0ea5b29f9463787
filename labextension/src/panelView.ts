/**
 * The side panel's drawing: the DOM for what PanelState knows, redrawn by what changed
 * (so an open <details>, a note typed in an approval card and the reading position stay).
 * This module draws the frame: the header (notebook, model, mode, MCP servers), the input
 * and its buttons, the line under it, and the hint of a panel not connected; the runs are
 * panelTranscript.ts's, the approval cards panelApprovals.ts's.
 *
 * Everything the kernel sends is text (textContent), except the assistant's Markdown, which
 * goes through JupyterLab's Markdown renderer as untrusted (its sanitizer applies).
 */

import { IRenderMimeRegistry } from '@jupyterlab/rendermime';
import { LabIcon, addIcon, checkIcon, closeIcon, runIcon, stopIcon } from '@jupyterlab/ui-components';
import { IDisposable } from '@lumino/disposable';
import { ApprovalChoice } from './panelProtocol';
import { ICardIcons, drawApprovals } from './panelApprovals';
import { button, el } from './panelDom';
import { drawMcpServers } from './panelMcp';
import { IApproval, IChange, LOAD_CODE, ISay, PanelState, isSendKey, offersResume, usageLine } from './panelState';
import { TranscriptView } from './panelTranscript';

const ICON_SVG =
  '<svg xmlns="http://www.w3.org/2000/svg" width="16" viewBox="0 0 24 24"><g class="jp-icon3" fill="#616161">' +
  '<path d="M12 2a2 2 0 0 1 1 3.73V7h4a3 3 0 0 1 3 3v8a3 3 0 0 1-3 3H7a3 3 0 0 1-3-3v-8a3 3 0 0 1 3-3h4V5.73A2 2 0 0 1 12 2zM9 12a1.5 1.5 0 1 0 0 3 1.5 1.5 0 0 0 0-3zm6 0a1.5 1.5 0 1 0 0 3 1.5 1.5 0 0 0 0-3zM1 12h2v5H1zm20 0h2v5h-2z"/>' +
  '</g></svg>';

/** The icons of an approval card's Allow and Deny (the panel's and those under a notebook). */
export const CARD_ICONS: ICardIcons = { allow: checkIcon, deny: closeIcon };

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
  /** Bring back the conversation saved for this notebook (its Resume button). */
  resume(): void;
}

/** The panel's DOM inside `host`. */
export class PanelView implements IDisposable {
  private readonly title: HTMLElement;
  private readonly meta: HTMLElement;
  private readonly mcp: HTMLElement;
  private readonly modeSelect: HTMLSelectElement;
  private readonly newButton: HTMLButtonElement;
  private readonly resumeButton: HTMLButtonElement;
  private readonly compactButton: HTMLButtonElement;
  private readonly transcript: TranscriptView;
  private readonly approvals: HTMLElement;
  private readonly usage: HTMLElement;
  private readonly input: HTMLTextAreaElement;
  private readonly sendButton: HTMLButtonElement;
  private readonly stopButton: HTMLButtonElement;
  private readonly hint: HTMLElement;
  private disposed = false;

  constructor(
    private readonly host: HTMLElement,
    rendermime: IRenderMimeRegistry,
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
    this.resumeButton = button('Resume', 'jp-AgentPanel-resume jp-mod-styled');
    this.resumeButton.title =
      'Bring back the conversation saved for this notebook (after a kernel restart): its history, its rules and its undo records (`%agent resume`)';
    this.resumeButton.hidden = true;
    controls.append(modeLabel, this.newButton, this.resumeButton);
    this.mcp = el('div', 'jp-AgentPanel-mcp');
    top.append(this.title, this.meta, this.mcp, controls);
    this.transcript = new TranscriptView(rendermime, run => actions.undo(run));
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
    host.append(top, this.transcript.node, this.approvals, bottom);

    // Handlers on the panel's own elements: they go with them.
    this.sendButton.onclick = () => actions.send(this.input.value);
    this.stopButton.onclick = () => actions.stop();
    this.newButton.onclick = () => actions.newConversation();
    this.resumeButton.onclick = () => actions.resume();
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

  /** Where the approval cards are (an answer there and under a notebook is given once). */
  get approvalsNode(): HTMLElement {
    return this.approvals;
  }

  /** The Markdown renderers go; the elements go with the panel's node. */
  dispose(): void {
    if (this.disposed) {
      return;
    }
    this.disposed = true;
    this.transcript.dispose();
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

  /** The panel was shown (it may have been drawn while hidden). */
  shown(): void {
    this.transcript.shown();
  }

  /** Draw what `change` says changed in `state`. */
  show(state: PanelState, change: IChange): void {
    if (change.reset) {
      this.redraw(state);
    }
    for (const id of change.removedRuns) {
      this.transcript.removeRun(id);
    }
    for (const runChange of change.runs) {
      const run = state.runs.get(runChange.id);
      if (run) {
        this.transcript.drawRun(run, runChange);
      }
    }
    if (change.approvals) {
      drawApprovals(
        this.approvals,
        state.approvals,
        (ask, choice, feedback) => this.actions.answer(ask, choice, feedback),
        CARD_ICONS
      );
    }
    if (change.session) {
      this.drawSession(state);
    }
    if (change.say) {
      this.say(change.say);
    }
  }

  private redraw(state: PanelState): void {
    this.transcript.clear();
    this.approvals.textContent = ''; // a state starts over (another kernel's asks may share ids)
    this.host.classList.toggle('jp-AgentPanel-disconnected', !state.connected);
    if (!state.connected) {
      const hint = el('div', 'jp-AgentPanel-hintBox', state.disconnectedText);
      if (state.loadable) {
        hint.appendChild(this.loadButton());
      }
      this.transcript.node.appendChild(hint);
      return;
    }
    this.transcript.drawAll(state.runs.values());
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
    const load = this.transcript.node.querySelector<HTMLButtonElement>('.jp-AgentPanel-load');
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
    this.resumeButton.hidden = !offersResume(session, state.busy);
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
}
