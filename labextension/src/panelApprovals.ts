/**
 * The approval cards: one per pending ask, with all of what will run or change (its box
 * scrolls), a note for the agent and Allow / Always allow / Deny. The side panel shows every
 * pending ask; an outside agent's shows under its notebook too (notebookApprovals.ts), the
 * same card drawn here, answered once for both places (`answeredOnce`). Everything on a card
 * is the kernel's text, set as textContent.
 */

import type { LabIcon } from '@jupyterlab/ui-components';
import { ApprovalChoice } from './panelProtocol';
import { button, details, el, pre, str } from './panelDom';
import { IApproval, approvalParts, diffLineClass } from './panelState';

/** What the panel does with an answer to `ask` (the note is sent with it). */
export type AnswerApproval = (ask: IApproval, choice: ApprovalChoice, feedback: string) => void;

/** The icons of a card's Allow and Deny (none in the unit tests, which load no JupyterLab). */
export interface ICardIcons {
  allow?: LabIcon;
  deny?: LabIcon;
}

/** The card of the ask `id` is answered: no second answer from it. */
const ANSWERED = 'answered';

/**
 * `send`, called once per ask however many places show its card: the first answer stops
 * every card of that ask in `hosts()` from taking another (their buttons and note are
 * disabled), and a second click, in the other place, sends nothing. The kernel's next update
 * removes the cards (it refuses a second answer too).
 */
export function answeredOnce(hosts: () => Iterable<HTMLElement>, send: AnswerApproval): AnswerApproval {
  return (ask, choice, feedback) => {
    const cards = Array.from(hosts()).flatMap(host => cardsOf(host, ask));
    if (cards.some(card => card.dataset.state === ANSWERED)) {
      return;
    }
    for (const card of cards) {
      card.dataset.state = ANSWERED;
      card.querySelectorAll<HTMLButtonElement | HTMLInputElement>('button, input').forEach(b => (b.disabled = true));
    }
    send(ask, choice, feedback);
  };
}

/** The cards of `ask` in `host`. */
function cardsOf(host: HTMLElement, ask: IApproval): HTMLElement[] {
  const id = String(ask.id);
  return (Array.from(host.children) as HTMLElement[]).filter(card => card.dataset.request === id);
}

function diffBlock(diff: string): HTMLElement {
  const block = el('pre', 'jp-AgentPanel-pre jp-AgentPanel-diff');
  for (const line of diff.split('\n')) {
    block.appendChild(el('span', diffLineClass(line), line + '\n'));
  }
  return block;
}

/** One card per pending ask in `host`; a card already shown stays as it is (with what was typed in it). */
export function drawApprovals(
  host: HTMLElement,
  approvals: IApproval[],
  answer: AnswerApproval,
  icons: ICardIcons = {}
): void {
  const pending = new Set(approvals.map(a => String(a.id)));
  for (const card of Array.from(host.children) as HTMLElement[]) {
    if (!pending.has(card.dataset.request ?? '')) {
      card.remove();
    }
  }
  const shown = new Set((Array.from(host.children) as HTMLElement[]).map(c => c.dataset.request));
  for (const ask of approvals) {
    if (!shown.has(String(ask.id))) {
      host.appendChild(approvalCard(ask, answer, icons));
    }
  }
}

/** A card as the cell's: what will run or change (its box scrolls), then the note and
 * Allow / Always allow / Deny, which stay in view however long the code is. */
function approvalCard(ask: IApproval, answer: AnswerApproval, icons: ICardIcons): HTMLElement {
  const card = el('div', 'jp-AgentPanel-approval');
  card.dataset.request = String(ask.id);
  if (ask.tool_use_id) {
    card.dataset.toolUseId = ask.tool_use_id;
  }
  const body = el('div', 'jp-AgentPanel-approvalBody');
  const title = el('div', 'jp-AgentPanel-approvalTitle');
  title.append(el('span', '', 'Allow '), el('b', '', str(ask.tool)), el('span', '', '?'));
  body.appendChild(title);
  if (typeof ask.asker === 'string' && ask.asker) {
    // who asks: a line of its own, as text; never part of the question (nor of the code below)
    const who = el('div', 'jp-AgentPanel-muted jp-AgentPanel-asker');
    who.append(
      el('span', '', 'Asked by '),
      el('span', 'jp-AgentPanel-askerName', ask.asker),
      el('span', '', ', an outside agent (MCP).')
    );
    body.appendChild(who);
  }
  const parts = approvalParts(ask);
  if (parts.line) {
    body.appendChild(el('div', 'jp-AgentPanel-muted', parts.line));
  }
  if (ask.warning) {
    body.appendChild(el('div', 'jp-AgentPanel-error jp-AgentPanel-warning', ask.warning));
  }
  const shown = parts.shown;
  body.appendChild(
    shown.kind === 'diff'
      ? diffBlock(shown.text)
      : pre(shown.text, `jp-AgentPanel-pre${shown.kind === 'code' ? ' jp-AgentPanel-code' : ''}`)
  );
  if (parts.rawInput) {
    body.appendChild(details('raw input', pre(parts.rawInput)));
  }
  const actions = el('div', 'jp-AgentPanel-approvalActions');
  const feedback = el('input', 'jp-AgentPanel-feedback');
  feedback.type = 'text';
  // short: the panel's default width shows it whole; the title says the rest
  feedback.placeholder = 'Note (sent with Deny)';
  feedback.title = 'An optional note for the agent, sent with Deny';
  feedback.setAttribute('aria-label', 'Note for the agent (sent with Deny)');
  const buttons = el('div', 'jp-AgentPanel-buttons');
  const allow = button('Allow', 'jp-mod-styled jp-AgentPanel-allow', icons.allow);
  const always = button('Always allow', 'jp-mod-styled jp-AgentPanel-always');
  always.title = `Allow, and from now on in this session: ${(ask.rules ?? []).join(', ')}`;
  const deny = button('Deny', 'jp-mod-styled jp-AgentPanel-deny', icons.deny);
  const send = (choice: ApprovalChoice) => {
    for (const b of [allow, always, deny]) {
      b.disabled = true;
    }
    answer(ask, choice, feedback.value);
  };
  allow.onclick = () => send('allow');
  always.onclick = () => send('always');
  deny.onclick = () => send('deny');
  buttons.append(allow, deny, always); // the two answers first: a narrow panel wraps the third
  actions.append(feedback, buttons);
  card.append(body, actions);
  return card;
}
