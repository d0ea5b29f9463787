/**
 * An outside agent's ask about a notebook that is not the current one: a JupyterLab
 * notification that says so, with a button that brings the notebook to the front.
 *
 * The approval cards come through the side panel's comm, which follows the current notebook
 * (panel.ts): an ask about a notebook open in another tab would wait unseen. Its kernel knows
 * no panel follows it and sends this page the bridge request `ask` (`ask_id`, `asker`: the
 * client's name from MCP `initialize`, untrusted; `what`: the call in a few words), then
 * `ask_end` (`ask_id`) once the ask is settled (jupyter_agent/jupyter/outside_ask.py). The
 * notification is plain text (JupyterLab renders its message and labels as text); its button
 * brings the notebook to the front, where the panel connects and the card shows (under the
 * notebook and in the panel). A click on it closes the notification; otherwise it stays until
 * `ask_end`, the comm it came on closes, the kernel restarts or changes, or the notebook
 * closes (`clear`, `dispose`).
 */

import type { Notification } from '@jupyterlab/apputils';
import type { ReadonlyJSONValue } from '@lumino/coreutils';
import type { IDisposable } from '@lumino/disposable';
import type { JSONObject } from './bridgeDocument';
import { BRIDGE_PAGE_CODES as CODES, BridgeError } from './protocol';

/** What of JupyterLab's `Notification` this module uses (the namespace itself in the page). */
export interface INotifier {
  emit(message: string, type?: Notification.TypeOptions, options?: Notification.IOptions<ReadonlyJSONValue>): string;
  dismiss(id?: string): void;
}

/** Characters of the client's name shown (a notification shows at most 140 in all). */
export const ASKER_CHARS = 40;
/** Characters of the call's description shown. */
export const WHAT_CHARS = 24;
/** Characters of the notebook's name shown. */
export const NOTEBOOK_CHARS = 32;
/** The button's label. */
export const SHOW_LABEL = 'Show notebook';

/** `text` cut to `limit` characters (code points), the last one an ellipsis when cut. */
export function cut(text: string, limit: number): string {
  const chars = Array.from(text);
  return chars.length <= limit ? text : chars.slice(0, limit - 1).join('') + '…';
}

/** The notebook's file name, from its path. */
export function notebookName(path: string): string {
  return path.split('/').pop() || path;
}

/** The notification's text: who asks, to do what, in which notebook (each cut: at most 134 characters). */
export function askMessage(asker: string, what: string, path: string): string {
  return (
    `${cut(asker, ASKER_CHARS)}, an outside agent (MCP), asks to ${cut(what, WHAT_CHARS)} ` +
    `in ${cut(notebookName(path), NOTEBOOK_CHARS)}`
  );
}

/** An `ask` or `ask_end` request's fields, checked (a refusal, `bad_request`, otherwise). */
export function checkAsk(
  req: Record<string, unknown>,
  withText: boolean
): { askId: string; asker: string; what: string } {
  const { ask_id: askId, asker, what } = req;
  if (typeof askId !== 'string' || !askId) {
    throw new BridgeError(CODES.badRequest, `${String(req.op)} needs a string "ask_id"`);
  }
  if (withText && (typeof asker !== 'string' || typeof what !== 'string' || !asker || !what)) {
    throw new BridgeError(CODES.badRequest, 'ask needs the strings "asker" and "what"');
  }
  return { askId, asker: String(asker ?? ''), what: String(what ?? '') };
}

/** The notifications of one notebook's pending outside asks, by the kernel's `ask_id`. */
export class BackgroundAsks implements IDisposable {
  /** ask id -> the notification's id and the comm (any key) the ask came on. */
  private readonly shown = new Map<string, { id: string; source: unknown }>();
  private disposed = false;

  /**
   * @param notifier JupyterLab's `Notification` (in tests, anything with its `emit` and `dismiss`).
   * @param path the notebook's path now (it may be renamed while an ask waits).
   * @param bringToFront makes the notebook the current one (its card shows there).
   */
  constructor(
    private readonly notifier: INotifier,
    private readonly path: () => string,
    private readonly bringToFront: () => void
  ) {}

  get isDisposed(): boolean {
    return this.disposed;
  }

  /** How many notifications show. */
  get size(): number {
    return this.shown.size;
  }

  /** The `ask` request: show its notification (once per ask id); `source` is its comm. */
  show(req: Record<string, unknown>, source: unknown): JSONObject {
    const { askId, asker, what } = checkAsk(req, true);
    if (this.disposed) {
      return { shown: false };
    }
    if (!this.shown.has(askId)) {
      const name = notebookName(this.path());
      const id = this.notifier.emit(askMessage(asker, what, this.path()), 'info', {
        autoClose: false,
        actions: [
          {
            label: SHOW_LABEL,
            caption: `Bring ${name} to the front: the agent's approval card shows there`,
            displayType: 'accent',
            callback: () => {
              this.shown.delete(askId); // the click closes the notification (JupyterLab's default)
              this.bringToFront();
            }
          }
        ]
      });
      this.shown.set(askId, { id, source });
    }
    return { shown: true };
  }

  /** The `ask_end` request: the ask is settled, its notification goes. */
  end(req: Record<string, unknown>): JSONObject {
    const { askId } = checkAsk(req, false);
    return { ended: this.drop(askId) };
  }

  /** The comm `source` closed: the asks that came on it go (nobody can end them now). */
  endFrom(source: unknown): void {
    for (const [askId, entry] of Array.from(this.shown)) {
      if (entry.source === source) {
        this.drop(askId);
      }
    }
  }

  /** The kernel restarted, died or changed: every ask goes. */
  clear(): void {
    Array.from(this.shown.keys()).forEach(askId => this.drop(askId));
  }

  dispose(): void {
    if (!this.disposed) {
      this.clear();
      this.disposed = true;
    }
  }

  private drop(askId: string): boolean {
    const entry = this.shown.get(askId);
    if (!entry) {
      return false;
    }
    this.shown.delete(askId);
    this.notifier.dismiss(entry.id);
    return true;
  }
}
