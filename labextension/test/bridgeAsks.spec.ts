/**
 * @jest-environment jsdom
 */

/**
 * An outside agent's ask about a background notebook (src/bridgeAsks.ts): the notification's
 * text (who asks, what, where; hostile names stay text and are cut), one per ask, its button
 * brings the notebook to the front, and it goes with `ask_end`, the comm it came on, the
 * kernel, or the notebook. The notifier here records what JupyterLab's `Notification` would be
 * asked (the browser test, tests/jupyter/test_mcp_background_browser.py, drives the real one).
 */

import type { Notification } from '@jupyterlab/apputils';
import type { ReadonlyJSONValue } from '@lumino/coreutils';
import { ASKER_CHARS, BackgroundAsks, INotifier, SHOW_LABEL, askMessage, cut } from '../src/bridgeAsks';
import { BRIDGE_OPS, BridgeError, checkRequest } from '../src/protocol';

const HOSTILE = '<img src=x onerror="window.__pwned=1">Claude</b>';

/** What JupyterLab's Notification was asked: the notifications showing, by id. */
class Recorder implements INotifier {
  readonly showing = new Map<
    string,
    { message: string; type?: Notification.TypeOptions; options?: Notification.IOptions<ReadonlyJSONValue> }
  >();
  private next = 0;

  emit(message: string, type?: Notification.TypeOptions, options?: Notification.IOptions<ReadonlyJSONValue>): string {
    const id = `n${++this.next}`;
    this.showing.set(id, { message, type, options });
    return id;
  }

  dismiss(id?: string): void {
    if (id !== undefined) {
      this.showing.delete(id);
    }
  }

  only() {
    expect(this.showing.size).toBe(1);
    return Array.from(this.showing.values())[0];
  }
}

function setUp(path = 'work/analysis.ipynb') {
  const notifier = new Recorder();
  const fronts: number[] = [];
  const asks = new BackgroundAsks(
    notifier,
    () => path,
    () => fronts.push(1)
  );
  return { notifier, fronts, asks };
}

const ask = (askId: string, asker = HOSTILE, what = 'run a cell') => ({
  v: 2,
  id: `k-${askId}`,
  op: 'ask',
  ask_id: askId,
  asker,
  what
});

describe('the bridge protocol', () => {
  it('has ask and ask_end among the operations a page answers', () => {
    expect(BRIDGE_OPS).toContain('ask');
    expect(BRIDGE_OPS).toContain('ask_end');
    expect(checkRequest(ask('a1'))).toBeNull();
  });
});

describe('BackgroundAsks', () => {
  it('says who asks to do what in which notebook, as text, with a button to show the notebook', () => {
    const { notifier, fronts, asks } = setUp();
    expect(asks.show(ask('a1'), 'comm')).toEqual({ shown: true });
    const { message, type, options } = notifier.only();
    expect(message).toBe(`${cut(HOSTILE, ASKER_CHARS)}, an outside agent (MCP), asks to run a cell in analysis.ipynb`);
    expect(message).toContain('<img src=x'); // the markup is its text: JupyterLab sets it as text
    expect(type).toBe('info');
    expect(options?.autoClose).toBe(false); // it stays until the ask is settled
    const actions = options?.actions ?? [];
    expect(actions.map(a => a.label)).toEqual([SHOW_LABEL]);
    actions[0].callback(new MouseEvent('click'));
    expect(fronts).toEqual([1]);
    expect(asks.size).toBe(0); // the click closed it: nothing left to dismiss
  });

  it('keeps the text within what a notification shows (140 characters)', () => {
    const long = 'x'.repeat(500);
    const message = askMessage(long, long, `dir/${long}.ipynb`);
    expect(message.length).toBeLessThanOrEqual(140);
    expect(message).toContain('…, an outside agent (MCP), asks to ');
    // a name of astral characters is cut between characters, never inside one
    expect(Array.from(cut('🙂'.repeat(100), 10))).toHaveLength(10);
  });

  it('shows one notification per ask, and ask_end takes it away', () => {
    const { notifier, asks } = setUp();
    asks.show(ask('a1'), 'comm');
    asks.show(ask('a1'), 'comm'); // said twice: still one
    asks.show(ask('a2', 'cursor', 'insert a cell'), 'comm');
    expect(notifier.showing.size).toBe(2);
    expect(asks.end({ op: 'ask_end', ask_id: 'a1' })).toEqual({ ended: true });
    expect(asks.end({ op: 'ask_end', ask_id: 'a1' })).toEqual({ ended: false });
    expect(notifier.only().message).toContain('cursor, an outside agent (MCP), asks to insert a cell');
  });

  it('drops the asks of a comm that closed, and all of them when the kernel goes or the notebook closes', () => {
    const { notifier, asks } = setUp();
    asks.show(ask('a1'), 'old comm');
    asks.show(ask('a2'), 'new comm');
    asks.endFrom('old comm');
    expect(notifier.showing.size).toBe(1);
    asks.clear(); // a restart
    expect(notifier.showing.size).toBe(0);
    asks.show(ask('a3'), 'new comm');
    asks.dispose();
    expect(notifier.showing.size).toBe(0);
    expect(asks.show(ask('a4'), 'new comm')).toEqual({ shown: false }); // nothing after disposal
    expect(notifier.showing.size).toBe(0);
  });

  it('refuses a malformed ask with bad_request and shows nothing', () => {
    const { notifier, asks } = setUp();
    for (const bad of [
      { op: 'ask', asker: 'a', what: 'b' },
      { op: 'ask', ask_id: 'a1', asker: 7, what: 'b' },
      { op: 'ask', ask_id: 'a1', asker: 'a' }
    ]) {
      expect(() => asks.show(bad, 'comm')).toThrow(BridgeError);
    }
    expect(() => asks.end({ op: 'ask_end' })).toThrow(/ask_id/);
    expect(notifier.showing.size).toBe(0);
  });
});
