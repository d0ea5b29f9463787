/**
 * The bridge protocol's page side (src/protocol.ts): which requests the page refuses, and
 * with which code. The kernel side (jupyter_agent/jupyter/bridge.py) reads these codes.
 */

import {
  BRIDGE_OPS as OPS,
  BRIDGE_PAGE_CODES as CODES,
  BRIDGE_TARGET as TARGET,
  BRIDGE_VERSION as PROTOCOL_VERSION,
  BridgeError,
  checkRequest
} from '../src/protocol';

const good = { v: PROTOCOL_VERSION, id: 'r1', op: 'read' };

describe('checkRequest', () => {
  it('accepts a request of this version with an id and a known operation', () => {
    expect(checkRequest(good)).toBeNull();
    for (const op of OPS) {
      expect(checkRequest({ ...good, op })).toBeNull();
    }
  });

  it.each([null, 'read', 42, ['read']])('refuses %p: not a JSON object', data => {
    expect(checkRequest(data)).toEqual({ code: CODES.badRequest, error: 'a request must be a JSON object' });
  });

  it.each([undefined, '', 7])('refuses the id %p', id => {
    expect(checkRequest({ ...good, id })?.code).toBe(CODES.badRequest);
  });

  it('refuses another version and says which versions meet', () => {
    const problem = checkRequest({ ...good, v: PROTOCOL_VERSION + 1 });
    expect(problem?.code).toBe(CODES.version);
    expect(problem?.error).toContain(`protocol version ${PROTOCOL_VERSION + 1} is not supported`);
    expect(problem?.error).toContain(`it speaks version ${PROTOCOL_VERSION}`);
  });

  it('checks the version before the operation', () => {
    expect(checkRequest({ ...good, v: 0, op: 'format_disk' })?.code).toBe(CODES.version);
  });

  it.each(['format_disk', 'bye', 7, undefined])('refuses the operation %p', op => {
    expect(checkRequest({ ...good, op })).toEqual({
      code: CODES.unknownOp,
      error: `unknown operation ${JSON.stringify(op)}`
    });
  });
});

describe('the protocol names', () => {
  it('are the ones the kernel side uses', () => {
    expect(TARGET).toBe('jupyter_agent.bridge');
    expect(new Set(Object.values(CODES)).size).toBe(Object.values(CODES).length);
  });

  it('a BridgeError carries its code', () => {
    const err = new BridgeError(CODES.stale, 'changed');
    expect(err).toBeInstanceOf(Error);
    expect(err.code).toBe('stale');
    expect(err.message).toBe('changed');
  });
});
