/**
 * The side panel's approval cards: one per pending ask, with all of what will run or change
 * (its box scrolls), a note for the agent and Allow / Always allow / Deny. Everything on a
 * card is the kernel's text, set as textContent.
 */

import { checkIcon, closeIcon } from '@jupyterlab/ui-components';
import { ApprovalChoice } from './panelProtocol';
import { button, details, el, pre, str } from './panelDom';
import { IApproval, approvalParts, diffLineClass } from './panelState';

/** What the panel does with an answer to `ask` (the note is sent with it). */
export type AnswerApproval = (ask: IApproval, choice: ApprovalChoice, feedback: string) => void;

function diffBlock(diff: string): HTMLElement {
  const block = el('pre', 'jp-AgentPanel-pre jp-AgentPanel-diff');
  for (const line of diff.split('\n')) {
    block.appendChild(el('span', diffLineClass(line), line + '\n'));
  }
  return block;
}

/** One card per pending ask in `host`; a card already shown stays as it is (with what was typed in it). */
export function drawApprovals(host: HTMLElement, approvals: IApproval[], answer: AnswerApproval): void {
  const pending = new Set(approvals.map(a => String(a.id)));
  for (const card of Array.from(host.children) as HTMLElement[]) {
    if (!pending.has(card.dataset.request ?? '')) {
      card.remove();
    }
  }
  const shown = new Set((Array.from(host.children) as HTMLElement[]).map(c => c.dataset.request));
  for (const ask of approvals) {
    if (!shown.has(String(ask.id))) {
      host.appendChild(approvalCard(ask, answer));
    }
  }
}

/** A card as the cell's: what will run or change (its box scrolls), then the note and
 * Allow / Always allow / Deny, which stay in view however long the code is. */
function approvalCard(ask: IApproval, answer: AnswerApproval): HTMLElement {
  const card = el('div', 'jp-AgentPanel-approval');
  card.dataset.request = String(ask.id);
  if (ask.tool_use_id) {
    card.dataset.toolUseId = ask.tool_use_id;
  }
  const body = el('div', 'jp-AgentPanel-approvalBody');
  const title = el('div', 'jp-AgentPanel-approvalTitle');
  title.append(el('span', '', 'Allow '), el('b', '', str(ask.tool)), el('span', '', '?'));
  body.appendChild(title);
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
  feedback.placeholder = 'Optional note for the agent (sent with Deny)';
  const buttons = el('div', 'jp-AgentPanel-buttons');
  const allow = button('Allow', 'jp-mod-styled jp-AgentPanel-allow', checkIcon);
  const always = button('Always allow', 'jp-mod-styled jp-AgentPanel-always');
  always.title = `Allow, and from now on in this session: ${(ask.rules ?? []).join(', ')}`;
  const deny = button('Deny', 'jp-mod-styled jp-AgentPanel-deny', closeIcon);
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
