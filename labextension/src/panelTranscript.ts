/**
 * The side panel's transcript: the conversation's runs, each a list of items (the prompt,
 * the assistant's text, thinking, tool calls, notes, the plan) and a footer (how it is going,
 * how it ended, Undo this run). Redrawn by what changed, so an open <details> and the reading
 * position stay.
 *
 * Everything the kernel sends is text (textContent), except the assistant's Markdown, which
 * goes through JupyterLab's Markdown renderer as untrusted (its sanitizer applies).
 */

import { IRenderMimeRegistry, IRenderMime, MimeModel } from '@jupyterlab/rendermime';
import { LabIcon, checkIcon, runIcon } from '@jupyterlab/ui-components';
import { EndFollower } from './endFollower';
import { button, details, el, pre, str } from './panelDom';
import { IItem, IRun, IRunChange, IRunHeader, endedNormally, shortPaths, turnsText, usageLine } from './panelState';

/** The sign of a task of the plan, by its status (JupyterLab's own icons; a to-do is an empty ring). */
const TODO_ICONS: Record<string, LabIcon | undefined> = { completed: checkIcon, in_progress: runIcon };

/** The run's plan (the model's TodoWrite list) as a checklist: every text is the kernel's,
 * set as text. The status word is for screen readers; the sign says it to the eye. */
export function drawPlan(node: HTMLElement, item: IItem): void {
  node.textContent = '';
  node.appendChild(el('div', 'jp-AgentPanel-planTitle', str(item.title)));
  const list = el('ul', 'jp-AgentPanel-planList');
  const todos = Array.isArray(item.todos) ? (item.todos as Record<string, unknown>[]) : [];
  for (const todo of todos) {
    const status = str(todo.status);
    const row = el('li', `jp-AgentPanel-todo jp-AgentPanel-todo-${status.replace(/[^a-z_]/g, '')}`);
    const icon = TODO_ICONS[status];
    const sign = icon
      ? icon.element({ tag: 'span', className: 'jp-AgentPanel-todoSign' })
      : el('span', 'jp-AgentPanel-todoSign jp-AgentPanel-todoRing');
    sign.setAttribute('aria-hidden', 'true');
    const label = el('span', 'jp-AgentPanel-todoLabel', `${str(todo.label)}: `);
    row.append(sign, label, el('span', 'jp-AgentPanel-todoText', str(todo.text)));
    list.appendChild(row);
  }
  node.appendChild(list);
}

/** One item's element, and the Markdown renderer of a text item. */
interface IItemView {
  node: HTMLElement;
  renderer?: IRenderMime.IRenderer;
}

/** One run's elements. */
interface IRunView {
  node: HTMLElement;
  body: HTMLElement;
  footer: HTMLElement;
  items: Map<string, IItemView>;
}

/** The conversation's runs, drawn in `node`. */
export class TranscriptView {
  /** The scrolling box the runs are drawn in. */
  readonly node = el('div', 'jp-AgentPanel-conversation');
  private readonly runs = new Map<string, IRunView>();
  /** Keeps the end in view, unless the user scrolled up to read. */
  private readonly end = new EndFollower(this.node);

  /** `undo` is called with a run's id when its "Undo this run" button is pressed. */
  constructor(
    private readonly rendermime: IRenderMimeRegistry,
    private readonly undo: (run: string) => void
  ) {}

  /** The Markdown renderers go (the panel's dispose); the elements go with the panel's node. */
  dispose(): void {
    this.forgetRuns();
    this.end.dispose();
  }

  /** The panel was shown: a box that was hidden could not scroll (it had no height). */
  shown(): void {
    this.end.keep();
  }

  /** Nothing drawn: no run, no note. */
  clear(): void {
    this.forgetRuns();
    this.node.textContent = '';
    this.end.follow(); // another conversation (or kernel): start at its end
  }

  /** Every run of `runs`, all of each; with none, a note that says what to do. */
  drawAll(runs: Iterable<IRun>): void {
    let any = false;
    for (const run of runs) {
      any = true;
      this.drawRun(run, { id: run.header.id, items: Array.from(run.items.keys()), removed: [], reordered: true });
    }
    if (!any) {
      this.node.appendChild(
        el(
          'div',
          'jp-AgentPanel-empty',
          'Ask for something below. The agent works on this notebook, in its kernel; every edit and run waits for your Allow.'
        )
      );
    }
  }

  /** A run the kernel no longer shows (of an earlier conversation). */
  removeRun(id: string): void {
    const view = this.runs.get(id);
    if (view) {
      this.disposeItems(view);
      this.end.unwatch(view.node);
      view.node.remove();
      this.runs.delete(id);
    }
  }

  /** Draw what `runChange` says changed in `run`. */
  drawRun(run: IRun, runChange: IRunChange): void {
    let view = this.runs.get(runChange.id);
    // a new run from the panel (a prompt, Fix with agent, Explain) is what the user is waiting for
    const asked = !view && run.header.origin === 'panel';
    if (!view) {
      this.node.querySelector('.jp-AgentPanel-empty')?.remove();
      const node = el('div', 'jp-AgentPanel-run');
      node.dataset.origin = str(run.header.origin);
      const body = el('div', 'jp-AgentPanel-runBody');
      const footer = el('div', 'jp-AgentPanel-runFooter');
      node.append(body, footer);
      this.node.appendChild(node);
      this.end.watch(node);
      view = { node, body, footer, items: new Map() };
      this.runs.set(runChange.id, view);
    }
    for (const key of runChange.removed) {
      view.items.get(key)?.renderer?.dispose();
      view.items.get(key)?.node.remove();
      view.items.delete(key);
    }
    for (const key of runChange.items) {
      const item = run.items.get(key);
      if (item) {
        this.drawItem(view, item);
      }
    }
    if (runChange.reordered) {
      for (const key of run.order) {
        const entry = view.items.get(key);
        if (entry) {
          view.body.appendChild(entry.node); // moves it into place
        }
      }
    }
    this.drawFooter(view, run);
    if (asked) {
      this.end.follow();
    } else {
      this.end.keep();
    }
  }

  private forgetRuns(): void {
    for (const view of this.runs.values()) {
      this.disposeItems(view);
      this.end.unwatch(view.node);
    }
    this.runs.clear();
  }

  private disposeItems(view: IRunView): void {
    for (const item of view.items.values()) {
      item.renderer?.dispose();
    }
  }

  /** An ended run's changes: the kernel's names its cells changed, Undo this run, and
   * what the undo did (all text the kernel redacted; set as text, never markup). */
  private drawUndo(view: IRunView, h: IRunHeader): void {
    if (h.variables) {
      view.footer.appendChild(el('div', 'jp-AgentPanel-status', h.variables));
    }
    if (h.undo === 'available' || h.undo === 'running') {
      const undo = button('Undo this run', 'jp-AgentPanel-undo jp-mod-styled');
      undo.disabled = h.undo === 'running';
      undo.onclick = () => {
        undo.disabled = true;
        this.undo(h.id);
      };
      view.footer.appendChild(undo);
    }
    for (const line of h.undo_lines ?? []) {
      view.footer.appendChild(el('div', 'jp-AgentPanel-status', line)); // each line starts with its sign
    }
  }

  private drawFooter(view: IRunView, run: IRun): void {
    const h = run.header;
    view.footer.textContent = '';
    view.footer.className = 'jp-AgentPanel-runFooter';
    if (!h.ended) {
      view.footer.appendChild(el('span', 'jp-AgentPanel-status', `${str(h.status)} · ${turnsText(h.turns, h.calls)}`));
      return;
    }
    view.footer.classList.add(endedNormally(h) ? 'jp-AgentPanel-ok' : 'jp-AgentPanel-bad');
    const line = el('div');
    // A normal end is one quiet line; the others say what happened and what to do.
    line.append(el('b', '', h.meaning ? `${str(h.title)} ` : `✓ ${str(h.title)} `), el('code', '', str(h.reason)));
    if (h.meaning) {
      line.append(document.createTextNode(` — ${h.meaning}`));
    }
    view.footer.appendChild(line);
    if (h.error) {
      view.footer.appendChild(el('div', 'jp-AgentPanel-error', h.error));
    }
    view.footer.appendChild(
      el(
        'div',
        'jp-AgentPanel-status',
        [turnsText(h.turns, h.calls), usageLine(h.usage, h.context)].filter(part => part).join(' · ')
      )
    );
    this.drawUndo(view, h);
  }

  private drawItem(view: IRunView, item: IItem): void {
    let entry = view.items.get(item.key);
    if (!entry) {
      entry = { node: el('div', `jp-AgentPanel-item jp-AgentPanel-${item.kind}`) };
      view.items.set(item.key, entry);
      view.body.appendChild(entry.node);
    }
    const node = entry.node;
    switch (item.kind) {
      case 'prompt':
        node.textContent = str(item.text);
        break;
      case 'text':
        this.drawMarkdown(entry, str(item.text));
        break;
      case 'thinking':
        this.drawThinking(node, item);
        break;
      case 'tool':
        this.drawTool(node, item);
        break;
      case 'notice':
        node.className = `jp-AgentPanel-item jp-AgentPanel-notice jp-AgentPanel-level-${str(item.level)}`;
        node.textContent = str(item.text);
        break;
      case 'block':
        node.textContent = '';
        node.appendChild(details(`${str(item.block_type)} block`, pre(str(item.json))));
        break;
      case 'plan':
        drawPlan(node, item);
        break;
      default:
        node.textContent = '';
    }
  }

  /** Assistant text, through JupyterLab's Markdown renderer, untrusted: sanitized. */
  private drawMarkdown(entry: IItemView, text: string): void {
    if (!entry.renderer) {
      entry.renderer = this.rendermime.createRenderer('text/markdown');
      entry.node.textContent = '';
      entry.node.appendChild(entry.renderer.node);
    }
    const model = new MimeModel({ trusted: false, data: { 'text/markdown': text } });
    void entry.renderer.renderModel(model).catch(err => {
      console.debug('jupyter-agent: Markdown not rendered, shown as text', err);
      entry.node.textContent = text;
    });
  }

  private drawThinking(node: HTMLElement, item: IItem): void {
    const wasOpen = node.querySelector('details')?.open ?? false;
    node.textContent = '';
    const text = str(item.text);
    const size = `${text.length.toLocaleString('en-US')} chars`;
    if (item.redacted) {
      node.appendChild(el('i', '', 'Thinking (redacted by the API)'));
    } else if (!item.done) {
      node.appendChild(el('i', '', `Thinking… (${size})`));
    } else {
      node.appendChild(details(`Thinking (${size})`, pre(text), wasOpen));
    }
  }

  private drawTool(node: HTMLElement, item: IItem): void {
    const open = new Set(
      Array.from(node.querySelectorAll('details'))
        .filter(d => d.open)
        .map(d => d.dataset.part)
    );
    const state = str(item.state);
    node.className = `jp-AgentPanel-item jp-AgentPanel-tool jp-AgentPanel-state-${state}`;
    node.dataset.tool = str(item.name);
    node.textContent = '';
    const head = el('div', 'jp-AgentPanel-toolHead');
    const summary = el('code', '', shortPaths(str(item.summary)));
    summary.title = str(item.summary);
    const duration = typeof item.duration_s === 'number' && item.duration_s ? ` · ${item.duration_s.toFixed(1)} s` : '';
    head.append(
      el('span', 'jp-AgentPanel-dot'),
      el('b', '', `${str(item.name)} `),
      summary,
      el('span', 'jp-AgentPanel-toolState', ` ${str(item.label)}${duration}`)
    );
    node.appendChild(head);
    if (item.receiving) {
      node.appendChild(el('div', 'jp-AgentPanel-muted', `receiving input (${str(item.receiving)} chars)`));
    }
    const part = (name: string, title: string, body: HTMLElement, openByDefault = false) => {
      const d = details(title, body, openByDefault || open.has(name));
      d.dataset.part = name;
      node.appendChild(d);
    };
    if (item.input) {
      part('input', 'input', pre(str(item.input)));
    }
    if (item.decision) {
      node.appendChild(el('div', 'jp-AgentPanel-decision', str(item.decision)));
    }
    if (item.progress) {
      node.appendChild(pre(str(item.progress)));
    }
    const result = Array.isArray(item.result) ? (item.result as [string, string][]) : [];
    if (result.length) {
      const body = el('div');
      for (const [kind, value] of result) {
        if (kind === 'image' && str(value).startsWith('data:image/')) {
          const img = el('img', 'jp-AgentPanel-image');
          img.src = value;
          body.appendChild(img);
        } else {
          body.appendChild(pre(str(value)));
        }
      }
      const isError = state === 'error';
      part('result', isError ? 'error' : 'result', body, isError);
    }
  }
}
