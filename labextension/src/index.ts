/**
 * jupyter-agent's JupyterLab extension: a list of plugins. Each feature lives in its
 * own module (bridge.ts: the live-notebook bridge; panel.ts: the side panel); add a
 * plugin here to add one.
 */

import { JupyterFrontEnd, JupyterFrontEndPlugin } from '@jupyterlab/application';
import { INotebookTracker } from '@jupyterlab/notebook';
import { activateBridge } from './bridge';
import { activatePanel } from './panel';

/** The bridge that lets the agent in the kernel read, edit and run the open notebook. */
const bridgePlugin: JupyterFrontEndPlugin<void> = {
  id: 'jupyter-agent:bridge',
  description: 'Lets the agent running in the kernel read, edit and run the open notebook.',
  autoStart: true,
  requires: [INotebookTracker],
  activate: (app: JupyterFrontEnd, tracker: INotebookTracker) => activateBridge(app, tracker)
};

/** The side panel: a chat bound to the current notebook's kernel (panel.ts). */
const panelPlugin: JupyterFrontEndPlugin<void> = {
  id: 'jupyter-agent:panel',
  description: "A sidebar chat with the agent in the current notebook's kernel.",
  autoStart: true,
  requires: [INotebookTracker],
  activate: (app: JupyterFrontEnd, tracker: INotebookTracker) => {
    activatePanel(app, tracker);
  }
};

const plugins: JupyterFrontEndPlugin<any>[] = [bridgePlugin, panelPlugin];

export default plugins;
