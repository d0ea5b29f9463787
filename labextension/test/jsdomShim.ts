/**
 * What jsdom lacks that Lumino's widgets need to load (the tests whose docblock asks for
 * `@jest-environment jsdom`): DragEvent, which @lumino/dragdrop extends at import. The
 * tests in node's environment have no window: nothing to add there.
 */

if (typeof window !== 'undefined' && typeof window.DragEvent === 'undefined') {
  class DragEventShim extends MouseEvent {
    readonly dataTransfer: DataTransfer | null = null;
  }
  (window as unknown as { DragEvent: typeof MouseEvent }).DragEvent = DragEventShim;
}
