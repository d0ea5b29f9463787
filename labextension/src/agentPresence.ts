/**
 * Which open notebooks' kernels have loaded jupyter_agent, as the bridge (bridge.ts) sees
 * it: a bridge comm the kernel opened (`%load_ext`), or one the page opened that the kernel
 * kept (a kernel without the extension closes it at once). A restart or another kernel
 * forgets it. The Fix with agent buttons (errorActions.ts) show only where it is loaded.
 */

import { NotebookPanel } from '@jupyterlab/notebook';
import { Kernel } from '@jupyterlab/services';
import { ISignal, Signal } from '@lumino/signaling';

/** The notebooks whose kernel has jupyter_agent loaded; `changed` names a notebook whose answer changed. */
export class AgentPresence {
  private readonly comms = new WeakMap<NotebookPanel, Set<Kernel.IComm>>();
  private readonly changed_ = new Signal<this, NotebookPanel>(this);

  /** A notebook whose answer to `has` changed. */
  get changed(): ISignal<this, NotebookPanel> {
    return this.changed_;
  }

  /** Whether `panel`'s kernel has loaded jupyter_agent. */
  has(panel: NotebookPanel): boolean {
    return Array.from(this.comms.get(panel) ?? []).some(comm => !comm.isDisposed);
  }

  /** The kernel of `panel` keeps a bridge comm: jupyter_agent is loaded there. */
  add(panel: NotebookPanel, comm: Kernel.IComm): void {
    this.update(panel, comms => comms.add(comm));
  }

  /** That comm closed. */
  remove(panel: NotebookPanel, comm: Kernel.IComm): void {
    this.update(panel, comms => comms.delete(comm));
  }

  /** The kernel restarted, died or was replaced: nothing is loaded until it says so again. */
  clear(panel: NotebookPanel): void {
    this.update(panel, comms => comms.clear());
  }

  private update(panel: NotebookPanel, change: (comms: Set<Kernel.IComm>) => void): void {
    const before = this.has(panel);
    let comms = this.comms.get(panel);
    if (!comms) {
      comms = new Set();
      this.comms.set(panel, comms);
    }
    change(comms);
    if (this.has(panel) !== before) {
      this.changed_.emit(panel);
    }
  }
}

/** The page's one record of where jupyter_agent is loaded. */
export const agentPresence = new AgentPresence();

/** Keep `agentPresence` true of `panel` only while its current kernel is the one that loaded it. */
export function forgetOnRestart(panel: NotebookPanel): void {
  const context = panel.sessionContext;
  const forget = () => agentPresence.clear(panel);
  context.kernelChanged.connect(forget);
  context.statusChanged.connect((_, status) => {
    if (status === 'restarting' || status === 'autorestarting' || status === 'dead') {
      forget();
    }
  });
}
