/**
 * Keyboard for `jupyter_agent.chat()` (jupyter_agent/jupyter/chat.py): Enter sends,
 * Shift+Enter adds a new line, as in the side panel.
 *
 * chat() is made of ipywidgets, whose Textarea has no key events for the kernel to listen
 * to. So the page does it: one keydown listener (capture phase) that, in a textarea inside
 * an element of class CHAT_INPUT_CLASS, turns Enter into a click on the Send button
 * (class CHAT_SEND_CLASS) of the same chat (class CHAT_CLASS). The text reaches the kernel
 * before the click: ipywidgets sends it on each input, and on the `change` sent here.
 */

import { IDisposable } from '@lumino/disposable';
import { isSendKey } from './panelState';
import { CHAT_CLASS, CHAT_INPUT_CLASS, CHAT_SEND_CLASS } from './protocol';

/** chat()'s Send button for a key event in its input, or null when the event is not one. */
export function chatSendButton(event: KeyboardEvent): HTMLButtonElement | null {
  const target = event.target;
  if (!(target instanceof HTMLTextAreaElement) || !isSendKey(event) || !target.closest(`.${CHAT_INPUT_CLASS}`)) {
    return null;
  }
  return target.closest(`.${CHAT_CLASS}`)?.querySelector<HTMLButtonElement>(`button.${CHAT_SEND_CLASS}`) ?? null;
}

function onKeydown(event: KeyboardEvent): void {
  const send = chatSendButton(event);
  if (!send) {
    return;
  }
  event.preventDefault(); // no new line
  event.stopPropagation(); // nor a notebook shortcut
  (event.target as HTMLTextAreaElement).dispatchEvent(new Event('change', { bubbles: true }));
  if (!send.disabled) {
    send.click();
  }
}

/** Listen on the whole page (chat() lives in any notebook's outputs); dispose to stop. */
export function activateChatKeys(): IDisposable {
  document.addEventListener('keydown', onKeydown, true);
  let disposed = false;
  return {
    get isDisposed() {
      return disposed;
    },
    dispose() {
      disposed = true;
      document.removeEventListener('keydown', onKeydown, true);
    }
  };
}
