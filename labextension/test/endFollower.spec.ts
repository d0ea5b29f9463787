/**
 * The side panel's conversation keeps its end in view (src/endFollower.ts): until the user
 * scrolls up, again once they scroll back down, and across a time the panel was hidden.
 */

import { EndFollower, IScrollBox } from '../src/endFollower';

/** A box as the browser has it: a scroll event after every change of scrollTop, clamped. */
class Box implements IScrollBox {
  scrollHeight = 1000;
  clientHeight = 300;
  private top = 0;
  private listeners: (() => void)[] = [];
  get scrollTop(): number {
    return this.top;
  }
  set scrollTop(value: number) {
    this.top = Math.max(0, Math.min(value, this.scrollHeight - this.clientHeight));
    this.listeners.forEach(fn => fn()); // (a browser fires it a little later: same effect here)
  }
  addEventListener(_type: 'scroll', listener: () => void): void {
    this.listeners.push(listener);
  }
  removeEventListener(_type: 'scroll', listener: () => void): void {
    this.listeners = this.listeners.filter(fn => fn !== listener);
  }
  grow(px: number): void {
    this.scrollHeight += px;
  }
}

describe('EndFollower', () => {
  it('keeps the end in view as the box grows', () => {
    const box = new Box();
    const end = new EndFollower(box);
    end.keep();
    expect(box.scrollTop).toBe(700);
    box.grow(500);
    end.keep();
    expect(box.scrollTop).toBe(1200);
  });

  it('stops when the user scrolls up to read, and follows again at the end', () => {
    const box = new Box();
    const end = new EndFollower(box);
    end.keep();
    box.scrollTop = 100; // the user reads something above
    box.grow(500);
    end.keep();
    expect(box.scrollTop).toBe(100);
    expect(end.isFollowing).toBe(false);
    box.scrollTop = box.scrollHeight; // back to the end
    box.grow(200);
    end.keep();
    expect(box.scrollTop).toBe(box.scrollHeight - box.clientHeight);
  });

  it('goes to the end of a box drawn while hidden once it is shown', () => {
    const box = new Box();
    box.clientHeight = 0; // hidden: no geometry
    const end = new EndFollower(box);
    box.grow(4000); // a long conversation drawn meanwhile
    end.keep();
    expect(box.scrollTop).toBe(0);
    box.clientHeight = 300; // shown
    end.keep();
    expect(box.scrollTop).toBe(box.scrollHeight - 300);
  });

  it('does not take content that grew after its own scroll for the user scrolling up', () => {
    const box = new Box();
    const end = new EndFollower(box);
    end.keep();
    box.grow(800); // a Markdown render finished after the scroll
    // the scroll event of our own scroll, read now (scrollTop unchanged)
    const ours = box.scrollTop;
    box.scrollTop = ours;
    expect(end.isFollowing).toBe(true);
    end.keep();
    expect(box.scrollTop).toBe(box.scrollHeight - box.clientHeight);
  });

  it('follows a run the user asked for even after they had scrolled up', () => {
    const box = new Box();
    const end = new EndFollower(box);
    box.scrollTop = 0;
    expect(end.isFollowing).toBe(false);
    box.grow(300);
    end.follow();
    expect(box.scrollTop).toBe(box.scrollHeight - box.clientHeight);
    expect(end.isFollowing).toBe(true);
  });
});
