/**
 * jupyter-agent's JupyterLab extension: a list of plugins. Each feature lives in its
 * own module (bridge.ts: the live-notebook bridge); add a plugin here to add one.
 */

import { JupyterFrontEnd, JupyterFrontEndPlugin } from '@jupyterlab/application';
import { INotebookTracker } from '@jupyterlab/notebook';
import { activateBridge } from './bridge';

/** The bridge that lets the agent in the kernel read, edit and run the open notebook. */
const bridgePlugin: JupyterFrontEndPlugin<void> = {
  id: 'jupyter-agent:bridge',
  description: 'Lets the agent running in the kernel read, edit and run the open notebook.',
  autoStart: true,
  requires: [INotebookTracker],
  activate: (app: JupyterFrontEnd, tracker: INotebookTracker) => activateBridge(app, tracker)
};

const plugins: JupyterFrontEndPlugin<any>[] = [bridgePlugin];

export default plugins;
