/**
 * jupyter-agent's JupyterLab extension: a list of plugins. Each feature lives in its
 * own module (bridge.ts: the live-notebook bridge; panel.ts: the side panel, with
 * errorActions.ts: Fix with agent / Explain under error outputs; chatKeys.ts:
 * Enter sends in chat(); displays.ts: the agent's display updates in every view of a
 * notebook); add a plugin here to add one.
 */

import { ILayoutRestorer, JupyterFrontEnd, JupyterFrontEndPlugin } from '@jupyterlab/application';
import { INotebookTracker } from '@jupyterlab/notebook';
import { IRenderMimeRegistry } from '@jupyterlab/rendermime';
import { ISettingRegistry } from '@jupyterlab/settingregistry';
import { activateBridge } from './bridge';
import { activateChatKeys } from './chatKeys';
import { activateDisplays } from './displays';
import { activateErrorActions } from './errorActions';
import { PANEL_PLUGIN_ID, activatePanel } from './panel';

/** The bridge that lets the agent in the kernel read, edit and run the open notebook. */
const bridgePlugin: JupyterFrontEndPlugin<void> = {
  id: 'jupyter-agent:bridge',
  description: 'Lets the agent running in the kernel read, edit and run the open notebook.',
  autoStart: true,
  requires: [INotebookTracker],
  activate: (app: JupyterFrontEnd, tracker: INotebookTracker) => activateBridge(app, tracker)
};

/** The side panel: a chat bound to the current notebook's kernel (panel.ts); its settings
 * are schema/panel.json. */
const panelPlugin: JupyterFrontEndPlugin<void> = {
  id: PANEL_PLUGIN_ID,
  description: "A sidebar chat with the agent in the current notebook's kernel.",
  autoStart: true,
  requires: [INotebookTracker, IRenderMimeRegistry],
  optional: [ILayoutRestorer, ISettingRegistry],
  activate: async (
    app: JupyterFrontEnd,
    tracker: INotebookTracker,
    rendermime: IRenderMimeRegistry,
    restorer: ILayoutRestorer | null,
    settings: ISettingRegistry | null
  ) => {
    const panel = await activatePanel(app, tracker, rendermime, restorer, settings);
    // Fix with agent / Explain under error outputs: the click goes on in this panel
    activateErrorActions(tracker, (notebook, request) => {
      app.shell.activateById(panel.id);
      panel.helpWith(notebook, request);
    });
  }
};

/** chat()'s keyboard: Enter sends, Shift+Enter adds a new line (chatKeys.ts). */
const chatKeysPlugin: JupyterFrontEndPlugin<void> = {
  id: 'jupyter-agent:chat-keys',
  description: 'In jupyter_agent.chat(), Enter sends and Shift+Enter adds a new line.',
  autoStart: true,
  activate: () => {
    activateChatKeys();
  }
};

/** The agent's display updates (a run's end, its transcript so far) in every view of a
 * notebook, also those that did not show the output live: a reloaded page, a second tab
 * (displays.ts). */
const displaysPlugin: JupyterFrontEndPlugin<void> = {
  id: 'jupyter-agent:displays',
  description: "Shows a run's end in every view of its notebook, also after a reload.",
  autoStart: true,
  requires: [INotebookTracker],
  activate: (_app: JupyterFrontEnd, tracker: INotebookTracker) => activateDisplays(tracker)
};

const plugins: JupyterFrontEndPlugin<void>[] = [bridgePlugin, panelPlugin, chatKeysPlugin, displaysPlugin];

export default plugins;
