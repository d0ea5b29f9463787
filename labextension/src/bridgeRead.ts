/**
 * The live-notebook bridge's `read`, page side, and the output budget of what it sends
 * (docs/bridge.md, "Limits and failures").
 *
 * No message may come near the 10 MiB a Tornado websocket accepts (a larger one closes
 * the page's kernel connection): a read, and a run's reply, cut each output and all of
 * them to a budget, keeping the start of the text with a note of what was left out (the
 * model reads the note and can ask for less). A reply still over BRIDGE_MAX_MESSAGE_BYTES
 * is sent as a "too_large" refusal instead (bridgeSend.ts).
 */

import { BridgeDocument, JSONObject } from './bridgeDocument';
import {
  BRIDGE_CUT_OUTPUT_KEEP_CHARS,
  BRIDGE_MAX_OUTPUT_CHARS,
  BRIDGE_MAX_READ_OUTPUT_CHARS,
  BRIDGE_OMITTED_OUTPUT,
  IRequest
} from './protocol';

/** The readable text of an output (what is kept of it when it is cut). */
function outputText(output: JSONObject): string {
  const join = (value: unknown) => (Array.isArray(value) ? value.join('') : typeof value === 'string' ? value : '');
  switch (output.output_type) {
    case 'stream':
      return join(output.text);
    case 'error':
      return `${String(output.ename)}: ${String(output.evalue)}\n${join(output.traceback)}`;
    default:
      return join(output.data?.['text/plain']);
  }
}

const thousands = (n: number) => n.toLocaleString('en-US');

/**
 * Cut each output of `cells` over BRIDGE_MAX_OUTPUT_CHARS, and every output once all of
 * them reach BRIDGE_MAX_READ_OUTPUT_CHARS (characters of their JSON), to the start of its
 * text and a note saying how much was left out and why: the model reads the note and can
 * ask for less.
 */
export function capOutputs(cells: JSONObject[]): void {
  let budget = BRIDGE_MAX_READ_OUTPUT_CHARS;
  for (const cell of cells) {
    if (!Array.isArray(cell.outputs)) {
      continue;
    }
    cell.outputs = cell.outputs.map((output: JSONObject) => {
      const size = JSON.stringify(output).length;
      if (size <= BRIDGE_MAX_OUTPUT_CHARS && size <= budget) {
        budget -= size;
        return output;
      }
      const head = outputText(output).slice(0, Math.min(BRIDGE_CUT_OUTPUT_KEEP_CHARS, budget));
      budget = Math.max(0, budget - head.length);
      const why =
        size > BRIDGE_MAX_OUTPUT_CHARS
          ? `a live read carries at most ${thousands(BRIDGE_MAX_OUTPUT_CHARS)} characters of one output`
          : `a live read carries at most ${thousands(BRIDGE_MAX_READ_OUTPUT_CHARS)} characters of outputs in all`;
      const shown = head.length
        ? `only its first ${thousands(head.length)} characters of text are shown`
        : 'it was left out';
      const note =
        `[jupyter-agent: this ${String(output.output_type)} output has ${thousands(size)} characters; ${shown} ` +
        `(${why}). To see more of it, run code that shows less at a time: a slice, a summary, a search.]`;
      return { output_type: BRIDGE_OMITTED_OUTPUT, name: 'stdout', text: head ? `${head}\n${note}\n` : `${note}\n` };
    });
  }
}

/** The whole notebook; only `{state, unchanged: true}` when the reader's copy, read at
 * `known_state` (a read's state, or an edit's), is still the document (a re-read of
 * 2,000 cells then costs nothing). */
export function readNotebook(doc: BridgeDocument, req: IRequest): JSONObject {
  const state = doc.state();
  if (typeof req.known_state === 'string' && doc.resolveState(req.known_state) === state) {
    return { state, unchanged: true };
  }
  const shared = doc.shared;
  const cells = (shared.cells as any[]).map(cell => cell.toJSON());
  capOutputs(cells);
  const metadata = shared.getMetadata();
  return {
    path: doc.panel.context.path,
    version: doc.version(),
    state,
    cells,
    metadata: { kernelspec: metadata.kernelspec, language_info: metadata.language_info }
  };
}
