/**
 * Whether a scrolling box keeps showing its end as it grows (the side panel's conversation).
 *
 * It follows until the user scrolls up to read, and again once they scroll back to the end.
 * The choice is remembered, not measured when something is drawn: a panel that was hidden
 * has no geometry (every height is 0), so a measure taken then says "at the end", the
 * scroll it asks for does nothing, and the panel opened later shows the top of a long
 * conversation and never follows the run the user just started. The owner calls `keep()`
 * after drawing and when the box is shown, and `follow()` for a run the user asked for.
 */

/** What is read of the box: a DOM element is one. */
export interface IScrollBox {
  scrollTop: number;
  readonly scrollHeight: number;
  readonly clientHeight: number;
  addEventListener(type: 'scroll', listener: () => void): void;
  removeEventListener(type: 'scroll', listener: () => void): void;
}

/** How close to the end (px) still counts as at the end. */
const SLACK_PX = 40;

export class EndFollower {
  private following = true;
  /** The scrollTop our own last scroll set: its scroll event is not the user's. */
  private ours: number | null = null;
  /** Content that grows after it was drawn (a Markdown render ends later) moves the end too. */
  private readonly resized = typeof ResizeObserver === 'undefined' ? null : new ResizeObserver(() => this.keep());

  constructor(private readonly box: IScrollBox) {
    box.addEventListener('scroll', this.onScroll);
  }

  /** Whether the box follows its end now. */
  get isFollowing(): boolean {
    return this.following;
  }

  /** Follow the end from now on, and go there (a run the user just asked for). */
  follow(): void {
    this.following = true;
    this.keep();
  }

  /** After a draw, or when the box is shown: to the end, when following. */
  keep(): void {
    if (this.following && this.box.clientHeight > 0) {
      this.box.scrollTop = this.box.scrollHeight;
      this.ours = this.box.scrollTop;
    }
  }

  /** Keep the end in view when `node` (a part of the box's content) changes size. */
  watch(node: Element): void {
    this.resized?.observe(node);
  }

  /** `node` left the box. */
  unwatch(node: Element): void {
    this.resized?.unobserve(node);
  }

  dispose(): void {
    this.box.removeEventListener('scroll', this.onScroll);
    this.resized?.disconnect();
  }

  private readonly onScroll = (): void => {
    const box = this.box;
    if (box.clientHeight === 0) {
      return; // hidden: no geometry, and nothing the user did
    }
    if (this.ours !== null && box.scrollTop === this.ours) {
      return; // our own scroll (the content may have grown since: still following)
    }
    this.ours = null;
    this.following = box.scrollHeight - box.scrollTop - box.clientHeight < SLACK_PX;
  };
}
