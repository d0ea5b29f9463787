/**
 * The side panel's small DOM builders. Every text they are given is set as textContent:
 * what the kernel sends is text, never markup.
 */

import type { LabIcon } from '@jupyterlab/ui-components';

/** An element of `tag`, with a class name and a text when given. */
export function el<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  className = '',
  text?: string
): HTMLElementTagNameMap[K] {
  const node = document.createElement(tag);
  if (className) {
    node.className = className;
  }
  if (text !== undefined) {
    node.textContent = text;
  }
  return node;
}

/** A button named by its words: the icon is hidden from screen readers. */
export function button(label: string, className: string, icon?: LabIcon): HTMLButtonElement {
  const node = el('button', className);
  if (icon) {
    const glyph = icon.element({ tag: 'span', className: 'jp-AgentPanel-buttonIcon' });
    glyph.setAttribute('aria-hidden', 'true');
    node.appendChild(glyph);
  }
  node.appendChild(el('span', 'jp-AgentPanel-buttonLabel', label));
  return node;
}

/** A folded section: `summary` as its one line, `body` inside. */
export function details(summary: string, body: HTMLElement, open = false): HTMLDetailsElement {
  const d = el('details');
  d.appendChild(el('summary', '', summary));
  d.appendChild(body);
  d.open = open;
  return d;
}

/** Preformatted text (a box that scrolls, by the panel's style). */
export function pre(text: string, className = 'jp-AgentPanel-pre'): HTMLElement {
  return el('pre', className, text);
}

/** A field of a kernel message as text ('' when it is missing). */
export function str(value: unknown): string {
  return typeof value === 'string' ? value : value === undefined || value === null ? '' : String(value);
}
