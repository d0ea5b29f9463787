/**
 * Which changes of the notebook's Yjs document touch what an agent edit or run is checked
 * against (the cells' ids, types and sources, and their order: the bridge's version),
 * and which touch only outputs, counts and metadata. The page's `changed` notice says
 * which (`sources`), so the kernel can plan a run on its copy while only outputs moved
 * (an `%%agent` cell's own transcript updates its outputs all the time; docs/bridge.md).
 */

/** Cell keys whose change changes the bridge's version. */
const SOURCE_KEYS = new Set(['id', 'cell_type', 'source']);

/**
 * Whether a Yjs transaction (`transaction.changed`: each changed type and its changed
 * keys) changed a cell's id, type or source, or the list of cells. A transaction of
 * unknown shape counts as one that did.
 */
export function changesSources(transaction: unknown, ycells: unknown): boolean {
  const changed = (transaction as { changed?: Map<any, Set<string | null>> } | null)?.changed;
  if (!(changed instanceof Map)) {
    return true;
  }
  for (const [type, keys] of changed) {
    if (type === ycells) {
      return true; // cells inserted, deleted or moved
    }
    const parent = type?._item?.parent ?? null;
    if (parent === ycells) {
      // a cell's own map: which of its keys were set
      for (const key of keys) {
        if (key === null || SOURCE_KEYS.has(key)) {
          return true;
        }
      }
    } else if ((parent?._item?.parent ?? null) === ycells && SOURCE_KEYS.has(type._item?.parentSub)) {
      return true; // the text of a cell's source
    }
  }
  return false;
}
