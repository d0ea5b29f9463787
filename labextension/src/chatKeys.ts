/**
 * Keyboard and Send for `jupyter_agent.chat()` (jupyter_agent/jupyter/chat.py): Enter sends,
 * Shift+Enter adds a new line, as in the side panel.
 *
 * chat() is made of ipywidgets, whose Textarea has no key events for the kernel to listen
 * to. So the page does it: listeners (capture phase) on a textarea inside an element of class
 * CHAT_INPUT_CLASS and on the Send button (class CHAT_SEND_CLASS) of the same chat (class
 * CHAT_CLASS). Neither clicks the button: each ends the input's value with CHAT_SEND_MARK, and
 * the kernel sends the text before it. The button's click would be a message of another
 * widget, and ipywidgets holds an input's later values back while one is on its way: on a
 * busy kernel the click arrived first and the message sent was cut ("Write hi\nt"). The
 * input's own values arrive in order, the mark with the last of them.
 */

import { IDisposable } from '@lumino/disposable';
import { isSendKey } from './panelState';
import { CHAT_CLASS, CHAT_INPUT_CLASS, CHAT_SEND_CLASS, CHAT_SEND_MARK } from './protocol';

/** chat()'s Send button for a key event in its input, or null when the event is not one. */
export function chatSendButton(event: KeyboardEvent): HTMLButtonElement | null {
  const target = event.target;
  if (!(target instanceof HTMLTextAreaElement) || !isSendKey(event) || !target.closest(`.${CHAT_INPUT_CLASS}`)) {
    return null;
  }
  return target.closest(`.${CHAT_CLASS}`)?.querySelector<HTMLButtonElement>(`button.${CHAT_SEND_CLASS}`) ?? null;
}

/** The input's value with the send mark at its end (once: a second Enter before the kernel
 * took the first changes nothing). */
export function markedForSending(value: string): string {
  return value.endsWith(CHAT_SEND_MARK) ? value : value + CHAT_SEND_MARK;
}

/** `value` without the send marks at its end: a person's typing or pasting may not end the
 * input with one (a pasted text that did would be sent at once), only Enter and Send may. */
export function withoutEndMarks(value: string): string {
  let end = value.length;
  while (end > 0 && value.endsWith(CHAT_SEND_MARK, end)) {
    end -= CHAT_SEND_MARK.length;
  }
  return value.slice(0, end);
}

/** Ask the kernel to send what `input` holds: its value, marked, as the input's own update. */
function sendFrom(input: HTMLTextAreaElement): void {
  input.value = markedForSending(input.value);
  input.dispatchEvent(new Event('input', { bubbles: true }));
  input.dispatchEvent(new Event('change', { bubbles: true }));
}

function onKeydown(event: KeyboardEvent): void {
  const send = chatSendButton(event);
  if (!send) {
    return;
  }
  event.preventDefault(); // no new line
  event.stopPropagation(); // nor a notebook shortcut
  if (!send.disabled) {
    sendFrom(event.target as HTMLTextAreaElement);
  }
}

/** A person's input (trusted: not sendFrom's own event) in chat()'s input loses the marks at
 * its end before the widget reads the value (this listener, on the document in the capture
 * phase, runs before the widget's own on its element). */
function onInput(event: Event): void {
  const target = event.target;
  if (!event.isTrusted || !(target instanceof HTMLTextAreaElement) || !target.closest(`.${CHAT_INPUT_CLASS}`)) {
    return;
  }
  const value = withoutEndMarks(target.value);
  if (value !== target.value) {
    target.value = value;
  }
}

function onClick(event: MouseEvent): void {
  const target = event.target instanceof Element ? event.target : null;
  const send = target?.closest<HTMLButtonElement>(`button.${CHAT_SEND_CLASS}`);
  const input = send?.closest(`.${CHAT_CLASS}`)?.querySelector<HTMLTextAreaElement>(`.${CHAT_INPUT_CLASS} textarea`);
  if (!send || !input || send.disabled) {
    return; // not chat()'s Send, or one this page cannot find the input of: its own click
  }
  event.preventDefault();
  event.stopPropagation(); // the button's own click message would race the text
  sendFrom(input);
}

/** Listen on the whole page (chat() lives in any notebook's outputs); dispose to stop. */
export function activateChatKeys(): IDisposable {
  document.addEventListener('keydown', onKeydown, true);
  document.addEventListener('click', onClick, true);
  document.addEventListener('input', onInput, true);
  let disposed = false;
  return {
    get isDisposed() {
      return disposed;
    },
    dispose() {
      disposed = true;
      document.removeEventListener('keydown', onKeydown, true);
      document.removeEventListener('click', onClick, true);
      document.removeEventListener('input', onInput, true);
    }
  };
}
