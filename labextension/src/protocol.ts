/**
 * The live-notebook bridge protocol, page side. The kernel side is
 * jupyter_agent/jupyter/bridge.py; both define these names once.
 *
 * Request (kernel -> page):  {v, id, to, op, ...arguments}
 * Reply   (page -> kernel):  {v, re, from, ok: true, result, ms, at} | {v, re, from, ok: false, code, error}
 * Hello   (page -> kernel):  {v, op: "hello", from, result}  (unsolicited, when a comm opens)
 * `read` takes an optional `known_state`: the `state` of the caller's last read; when the
 * document has not changed at all since (outputs included), the reply is only
 * `{state, unchanged: true}`.
 * `ms` is how long the page spent answering and `at` the wall-clock times (ms) it received
 * the request and sent the reply (figures for benchmarks only).
 */

/** The comm target both sides use. */
export const TARGET = 'jupyter_agent.bridge';

/** Bumped on any incompatible change; a mismatch is refused with code "version". */
export const PROTOCOL_VERSION = 1;

/** Operations the page answers. */
export const OPS = [
  'hello',
  'version',
  'read',
  'insert',
  'replace',
  'delete',
  'run'
] as const;
export type Op = (typeof OPS)[number];

/** Error codes of a refused request. */
export const CODES = {
  badRequest: 'bad_request',
  version: 'version',
  unknownOp: 'unknown_op',
  stale: 'stale',
  notFound: 'not_found',
  noKernel: 'no_kernel',
  failed: 'failed'
} as const;

export interface IRequest {
  v: number;
  id: string;
  to?: string;
  op: Op;
  [key: string]: unknown;
}

/** A request's shape problem, or null when it can be handled. */
export function checkRequest(data: unknown): { code: string; error: string } | null {
  if (typeof data !== 'object' || data === null || Array.isArray(data)) {
    return { code: CODES.badRequest, error: 'a request must be a JSON object' };
  }
  const req = data as Record<string, unknown>;
  if (typeof req.id !== 'string' || !req.id) {
    return { code: CODES.badRequest, error: 'a request needs a string "id"' };
  }
  if (req.v !== PROTOCOL_VERSION) {
    return {
      code: CODES.version,
      error: `protocol version ${String(req.v)} is not supported by this page (it speaks version ${PROTOCOL_VERSION}): install matching jupyter-agent versions in the kernel and the server, then reload the page`
    };
  }
  if (typeof req.op !== 'string' || !(OPS as readonly string[]).includes(req.op)) {
    return { code: CODES.unknownOp, error: `unknown operation ${JSON.stringify(req.op)}` };
  }
  return null;
}

/** A refusal that carries its protocol code. */
export class BridgeError extends Error {
  constructor(
    readonly code: string,
    message: string
  ) {
    super(message);
  }
}
