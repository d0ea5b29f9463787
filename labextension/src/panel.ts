/**
 * The jupyter-agent side panel: a chat in a JupyterLab sidebar, bound to the current
 * notebook's kernel, driving the same conversation as that notebook's `%%agent` cells and
 * `jupyter_agent.chat()`.
 *
 * Three parts: the transport (panelTransport.ts: the comm to the kernel), the state
 * (panelState.ts: what the panel knows, pure) and the view (panelView.ts: the DOM). This
 * module wires them into a widget and puts it in the shell.
 */

import { ILayoutRestorer, JupyterFrontEnd } from '@jupyterlab/application';
import { INotebookTracker, NotebookPanel } from '@jupyterlab/notebook';
import { IRenderMimeRegistry } from '@jupyterlab/rendermime';
import { ISettingRegistry } from '@jupyterlab/settingregistry';
import { Widget } from '@lumino/widgets';
import { ApprovalChoice, PanelRequest } from './panelProtocol';
import { IApproval, IChange, ISay, PanelState } from './panelState';
import { Disconnected, PanelConnection } from './panelTransport';
import { PanelView, agentIcon } from './panelView';

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

  constructor(rendermime: IRenderMimeRegistry) {
    super();
    this.id = 'jupyter-agent-panel';
    this.addClass('jp-AgentPanel');
    this.title.icon = agentIcon;
    this.title.caption = 'jupyter-agent';
    this.view = new PanelView(this.node, rendermime, {
      send: prompt => this.sendPrompt(prompt),
      stop: () => this.request({ op: 'stop' }),
      newConversation: () => this.request({ op: 'new' }),
      mode: mode => this.request({ op: 'mode', mode }),
      undo: run => this.request({ op: 'undo', run }),
      answer: (ask: IApproval, choice: ApprovalChoice, feedback: string) =>
        this.send(this.state.answer(ask, choice, feedback))
    });
    this.connection.received.connect(this.onMessage, this);
    this.connection.disconnected.connect(this.onDisconnected, this);
    this.draw(this.state.disconnect('no-notebook'));
  }

  /** Drive the kernel of `panel` (the current notebook), or nothing. */
  bind(panel: NotebookPanel | null): void {
    if (this.connection.bind(panel)) {
      this.view.setTitle(panel?.context.path ?? null);
    }
  }

  dispose(): void {
    if (this.isDisposed) {
      return;
    }
    this.connection.dispose();
    this.view.dispose();
    super.dispose();
  }

  private onMessage(_: PanelConnection, data: unknown): void {
    this.draw(this.state.receive(data));
  }

  private onDisconnected(_: PanelConnection, reason: Disconnected): void {
    this.draw(this.state.disconnect(reason));
  }

  private draw(change: IChange): void {
    this.view.show(this.state, change);
  }

  private sendPrompt(text: string): void {
    const { request, say } = this.state.prompt(text);
    this.view.say(say);
    if (request && this.connection.send(request)) {
      this.view.clearInput();
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
  const panel = new AgentSidePanel(rendermime);
  app.shell.add(panel, options.side, { rank: 600 });
  restorer?.add(panel, panel.id);
  const follow = () => panel.bind(tracker.currentWidget);
  tracker.currentChanged.connect(follow);
  panel.disposed.connect(() => tracker.currentChanged.disconnect(follow));
  follow();
  if (options.openOnStart) {
    void app.restored.then(() => app.shell.activateById(panel.id));
  }
  return panel;
}
