/**
 * Sending one bridge message from the page (docs/bridge.md, "Limits and failures" and
 * "Kernel status").
 *
 * The kernel publishes no busy/idle status for the page's bridge messages
 * (jupyter_agent/jupyter/bridge_status.py): JupyterLab would re-render its kernel
 * indicators twice per reply. A comm message's future completes only on that idle, and
 * the kernel connection keeps every future until it completes or is disposed, so each
 * message's future is disposed as soon as it is sent (that removes it from the
 * connection; the message itself is already on its way). Nothing waits on it: the bridge's
 * answers are messages of their own.
 */

import { Kernel } from '@jupyterlab/services';
import { BRIDGE_MAX_MESSAGE_BYTES, BRIDGE_PAGE_CODES as CODES, BRIDGE_VERSION as PROTOCOL_VERSION } from './protocol';

type JSONObject = Record<string, any>;

/** Bytes of a message as the comm sends it (JSON, UTF-8). */
function jsonBytes(data: JSONObject): number {
  return new TextEncoder().encode(JSON.stringify(data)).length;
}

/**
 * Send one message on a bridge comm and let go of its future. A reply (`re`) over
 * BRIDGE_MAX_MESSAGE_BYTES, or one the comm could not send, goes as a refusal with its
 * code instead (the kernel then tells the real cause).
 */
export function sendBridgeMessage(comm: Kernel.IComm, data: JSONObject): void {
  if (comm.isDisposed) {
    return;
  }
  let message = data;
  const size = jsonBytes(data);
  if (size > BRIDGE_MAX_MESSAGE_BYTES && 're' in data) {
    message = {
      v: PROTOCOL_VERSION,
      re: data.re,
      from: data.from,
      ok: false,
      code: CODES.tooLarge,
      error: `the page's answer has ${size.toLocaleString('en-US')} bytes (the notebook's cells are too large to send at once)`
    };
  }
  try {
    comm.send(message as any).dispose();
  } catch (err) {
    console.warn('jupyter-agent: could not answer the kernel', err);
    if ('re' in data && message.ok !== false) {
      sendBridgeMessage(comm, {
        v: PROTOCOL_VERSION,
        re: data.re,
        from: data.from,
        ok: false,
        code: CODES.sendFailed,
        error: String(err)
      });
    }
  }
}
