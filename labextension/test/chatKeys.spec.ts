/**
 * chat()'s Enter and Send (src/chatKeys.ts) end the input's value with the send mark, once:
 * the kernel sends the text before it (jupyter_agent/jupyter/chat.py).
 */

import { markedForSending, withoutEndMarks } from '../src/chatKeys';
import { CHAT_SEND_MARK } from '../src/protocol';

describe('markedForSending', () => {
  it('ends the text with the mark, once however often Enter is pressed', () => {
    const once = markedForSending('Write hi\nto hello.txt');
    expect(once).toBe(`Write hi\nto hello.txt${CHAT_SEND_MARK}`);
    expect(markedForSending(once)).toBe(once);
  });
});

describe('withoutEndMarks', () => {
  it('takes the marks a person typed or pasted off the end, and keeps those inside', () => {
    const m = CHAT_SEND_MARK;
    expect(withoutEndMarks(`to${m}${m}`)).toBe('to');
    expect(withoutEndMarks(`a${m}b`)).toBe(`a${m}b`);
    expect(withoutEndMarks(m)).toBe('');
    expect(withoutEndMarks('plain')).toBe('plain');
  });
});
