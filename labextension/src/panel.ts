/**
 * The jupyter-agent side panel: a chat in a JupyterLab sidebar, bound to the current
 * notebook's kernel, driving the same conversation as that notebook's `%%agent` cells and
 * `jupyter_agent.chat()`.
 *
 * Three parts: the transport (panelTransport.ts: the comm to the kernel), the state
 * (panelState.ts: what the panel knows, pure) and the view (panelView.ts: the DOM). This
 * module wires them into a widget and puts it in the shell. An outside agent's approval
 * cards show under its notebook too (notebookApprovals.ts), from the same state, answered
 * once for both places.
 */

import { ILayoutRestorer, JupyterFrontEnd } from '@jupyterlab/application';
import { INotebookTracker, NotebookPanel } from '@jupyterlab/notebook';
import { IRenderMimeRegistry } from '@jupyterlab/rendermime';
import { ISettingRegistry } from '@jupyterlab/settingregistry';
import type { Message } from '@lumino/messaging';
import { Widget } from '@lumino/widgets';
import { NotebookApprovals } from './notebookApprovals';
import { AnswerApproval, answeredOnce } from './panelApprovals';
import { PanelRequest } from './panelProtocol';
import { activeCellContext } from './errorActions';
import { IChange, ISay, LOAD_CODE, PanelState, loadOutcome, opensOnStart } from './panelState';
import { Disconnected, PanelConnection } from './panelTransport';
import { CARD_ICONS, PanelView, agentIcon } from './panelView';

export { agentIcon };

/** The panel plugin's id, and so its settings' (schema/panel.json). */
export const PANEL_PLUGIN_ID = 'jupyter-agent:panel';

/** The panel's settings (schema/panel.json). */
export interface IPanelSettings {
  /** The sidebar that holds the panel. */
  side: 'left' | 'right';
  /** Open the panel when JupyterLab starts. */
  openOnStart: boolean;
}

export const DEFAULT_SETTINGS: IPanelSettings = { side: 'right', openOnStart: false };

/** The sidebar widget. */
export class AgentSidePanel extends Widget {
  private readonly state = new PanelState();
  private readonly connection = new PanelConnection();
  private readonly view: PanelView;
  /** An answer to a card, in the panel or under a notebook: sent once. */
  private readonly answer: AnswerApproval;

  /** `docks`: the cards under the notebooks (none: the panel alone shows them). */
  constructor(
    rendermime: IRenderMimeRegistry,
    private readonly docks: NotebookApprovals | null = null
  ) {
    super();
    this.id = 'jupyter-agent-panel';
    this.addClass('jp-AgentPanel');
    this.title.icon = agentIcon;
    this.title.caption = 'jupyter-agent';
    this.answer = answeredOnce(
      () => [this.view.approvalsNode, ...(this.docks?.hosts() ?? [])],
      (ask, choice, feedback) => this.send(this.state.answer(ask, choice, feedback))
    );
    this.view = new PanelView(this.node, rendermime, {
      send: prompt => this.sendPrompt(prompt),
      stop: () => this.request({ op: 'stop' }),
      newConversation: () => this.request({ op: 'new' }),
      resume: () => this.request({ op: 'resume' }),
      compact: () => this.request({ op: 'compact' }),
      mode: mode => this.request({ op: 'mode', mode }),
      undo: run => this.request({ op: 'undo', run }),
      answer: (ask, choice, feedback) => this.answer(ask, choice, feedback),
      load: () => void this.load()
    });
    this.connection.received.connect(this.onMessage, this);
    this.connection.disconnected.connect(this.onDisconnected, this);
    this.draw(this.state.disconnect('no-notebook'));
  }

  /** Drive the kernel of `panel` (the current notebook), or nothing. */
  bind(panel: NotebookPanel | null): void {
    if (this.connection.bind(panel)) {
      this.pending = null; // a click in another notebook is not for this kernel
      this.view.setTitle(panel?.context.path ?? null);
    }
  }

  /** A request a click on `notebook`'s page made (Fix with agent, Explain): the panel drives
   * that notebook's kernel and sends it, now or as soon as the kernel sent its state. */
  helpWith(notebook: NotebookPanel, request: PanelRequest): void {
    this.bind(notebook);
    if (this.state.connected && this.connection.send(request)) {
      return;
    }
    this.pending = request;
  }

  /** What helpWith could not send yet. */
  private pending: PanelRequest | null = null;

  /** Called when the user closes or opens the panel (Notebook 7 remembers a close). */
  onVisibilityChanged: ((visible: boolean) => void) | null = null;

  protected onAfterShow(msg: Message): void {
    super.onAfterShow(msg);
    this.view.shown();
    this.onVisibilityChanged?.(true);
  }

  protected onAfterHide(msg: Message): void {
    super.onAfterHide(msg);
    this.onVisibilityChanged?.(false);
  }

  dispose(): void {
    if (this.isDisposed) {
      return;
    }
    this.connection.dispose();
    this.docks?.dispose();
    this.view.dispose();
    super.dispose();
  }

  private onMessage(_: PanelConnection, data: unknown): void {
    this.draw(this.state.receive(data));
    if (this.pending && this.state.connected) {
      const request = this.pending;
      this.pending = null;
      this.send(this.state.request(request));
    }
  }

  private onDisconnected(_: PanelConnection, reason: Disconnected): void {
    this.draw(this.state.disconnect(reason));
  }

  private draw(change: IChange): void {
    this.view.show(this.state, change);
    if (change.approvals || change.reset) {
      this.docks?.show(this.state.approvals, this.answer, change.reset);
    }
  }

  private sendPrompt(text: string): void {
    const { request, say } = this.state.prompt(text, activeCellContext(this.connection.notebook));
    this.view.say(say);
    if (request && this.connection.send(request)) {
      this.view.clearInput();
    }
  }

  /** The hint's Load button: `%load_ext jupyter_agent` in the kernel, then connect (or say why not). */
  private async load(): Promise<void> {
    const reply = await this.connection.load(LOAD_CODE);
    const say = loadOutcome(reply);
    if (say.error) {
      this.view.loadFailed();
    }
    if (!this.state.connected || say.error) {
      this.view.say(say);
    }
  }

  private request(request: PanelRequest): void {
    this.send(this.state.request(request));
  }

  private send(outcome: { request: PanelRequest | null; say?: ISay }): void {
    if (outcome.say) {
      this.view.say(outcome.say);
    }
    if (outcome.request) {
      this.connection.send(outcome.request);
    }
  }
}

/** The panel's settings, or the defaults when the registry has none (a build without the schema). */
async function loadSettings(settings: ISettingRegistry | null): Promise<IPanelSettings> {
  if (!settings) {
    return DEFAULT_SETTINGS;
  }
  try {
    const loaded = await settings.load(PANEL_PLUGIN_ID);
    const side = loaded.get('side').composite === 'left' ? 'left' : 'right';
    return { side, openOnStart: loaded.get('openOnStart').composite === true };
  } catch (err) {
    console.warn('jupyter-agent: the panel settings could not be read; using the defaults', err);
    return DEFAULT_SETTINGS;
  }
}

/** Add the panel to its sidebar, restore it with the layout, keep it bound to the current notebook. */
export async function activatePanel(
  app: JupyterFrontEnd,
  tracker: INotebookTracker,
  rendermime: IRenderMimeRegistry,
  restorer: ILayoutRestorer | null,
  settings: ISettingRegistry | null
): Promise<AgentSidePanel> {
  const options = await loadSettings(settings);
  const docks = new NotebookApprovals(
    {
      panels: () => {
        const open: NotebookPanel[] = [];
        tracker.forEach(notebook => open.push(notebook));
        return open;
      },
      clientId: notebook => (notebook as NotebookPanel).sessionContext?.session?.kernel?.clientId ?? ''
    },
    CARD_ICONS
  );
  const panel = new AgentSidePanel(rendermime, docks);
  app.shell.add(panel, options.side, { rank: 600 });
  restorer?.add(panel, panel.id);
  const follow = () => panel.bind(tracker.currentWidget);
  tracker.currentChanged.connect(follow);
  panel.disposed.connect(() => tracker.currentChanged.disconnect(follow));
  follow();
  const notebook7 = app.name === NOTEBOOK7_APP_NAME;
  if (opensOnStart({ ...options, notebook7, closedByUser: closedByUser() })) {
    void app.restored.then(() => openWithNotebook(app, tracker, panel));
  }
  if (notebook7) {
    // Notebook 7 does not keep its sidebars across pages: remember whether the user closed
    // the panel, so it opens on the next notebook page unless they did.
    panel.onVisibilityChanged = visible => rememberClosed(!visible && !!tracker.currentWidget);
  }
  return panel;
}

/** `app.name` in Notebook 7 (the `notebook` package), whose shell starts with its sidebars closed. */
const NOTEBOOK7_APP_NAME = 'Jupyter Notebook';

/** Where a user's close of the panel in Notebook 7 is remembered (this browser only). */
const CLOSED_KEY = 'jupyter-agent:panel-closed';

function closedByUser(): boolean {
  try {
    return window.localStorage.getItem(CLOSED_KEY) === '1';
  } catch (err) {
    console.debug('jupyter-agent: no local storage; the panel opens', err);
    return false;
  }
}

function rememberClosed(closed: boolean): void {
  try {
    if (closed) {
      window.localStorage.setItem(CLOSED_KEY, '1');
    } else {
      window.localStorage.removeItem(CLOSED_KEY);
    }
  } catch (err) {
    console.debug('jupyter-agent: no local storage; the close is not remembered', err);
  }
}

/** Open the panel once a notebook is shown (not on a page without one, such as Notebook 7's file browser). */
function openWithNotebook(app: JupyterFrontEnd, tracker: INotebookTracker, panel: AgentSidePanel): void {
  if (tracker.currentWidget) {
    app.shell.activateById(panel.id);
    return;
  }
  const opened = () => {
    tracker.currentChanged.disconnect(opened);
    if (tracker.currentWidget && !panel.isDisposed) {
      app.shell.activateById(panel.id);
    }
  };
  tracker.currentChanged.connect(opened);
}
