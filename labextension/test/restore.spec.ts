/**
 * The bridge's `restore` steps on a stand-in for the notebook's shared model: the kernel
 * decides which cells to touch, the page puts them back in order.
 */
import { applySteps, CellGone, checkSteps, IRestoreStep, stepsDone } from '../src/restore';

/**
 * As JupyterLab's shared notebook: its Yjs array (`y`) changes at once, its `cells` list only
 * when the transaction ends (`flush`, its observers): within the steps it is stale.
 */
class FakeShared {
  y: any[];
  cells: any[];
  private fresh = 0;
  constructor(ids: string[]) {
    this.y = ids.map(id => ({ id, cell_type: 'code', source: id }));
    this.cells = this.models();
  }
  private models(): any[] {
    return this.y.map(cell => ({ id: cell.id, ymodel: cell, toJSON: () => ({ ...cell }) }));
  }
  get ydoc(): any {
    const wrap = (cell: any) => ({ get: (key: string) => cell[key], toJSON: () => ({ ...cell }), cell });
    return { getArray: () => ({ toArray: () => this.y.map(wrap) }) };
  }
  flush(): void {
    this.cells = this.models();
  }
  deleteCell(index: number): void {
    this.y.splice(index, 1);
  }
  insertCell(index: number, json: any): any {
    const cell = { ...json, id: json.id ?? `fresh${++this.fresh}` };
    this.y.splice(index, 0, cell);
    return cell;
  }
  ids(): string[] {
    return this.y.map(c => c.id);
  }
  apply(steps: IRestoreStep[]): string[] {
    const placed = applySteps(this, steps);
    this.flush();
    return placed;
  }
}

function step(op: IRestoreStep['op'], cell_id: string, extra: Partial<IRestoreStep> = {}): IRestoreStep {
  return {
    op,
    cell_id,
    cell_type: 'code',
    source: `was ${cell_id}`,
    outputs: [],
    execution_count: null,
    metadata: {},
    after_id: '',
    index: 0,
    ...extra
  };
}

describe('restore', () => {
  it('deletes, restores and re-inserts after the cell each followed', () => {
    const shared = new FakeShared(['a', 'new', 'b', 'd']);
    const steps = [
      step('delete', 'new'),
      step('restore', 'b', { outputs: [{ output_type: 'stream', name: 'stdout', text: 'kept' }], execution_count: 3 }),
      step('insert', 'c', { after_id: 'b', index: 2 })
    ];
    const placed = shared.apply(steps);
    expect(shared.ids()).toEqual(['a', 'b', 'c', 'd']);
    expect(shared.y[1]).toMatchObject({ source: 'was b', execution_count: 3, outputs: [{ text: 'kept' }] });
    expect(stepsDone(shared, steps, placed)).toBe(true);
  });

  it('gives a re-inserted cell a new id when its id is taken, and puts it first without after_id', () => {
    const shared = new FakeShared(['x', 'y']);
    shared.apply([step('insert', 'y')]);
    expect(shared.ids()).toEqual(['fresh1', 'x', 'y']);
  });

  it('moves a cell as it is after a cell, first, or at its index when that cell is gone', () => {
    const shared = new FakeShared(['a', 'b', 'c', 'd']);
    shared.y[1].outputs = [{ output_type: 'stream', name: 'stdout', text: 'kept' }];
    shared.flush();
    const steps = [step('move', 'b', { after_id: 'd', index: 3, source: 'not used' })];
    const placed = shared.apply(steps);
    expect(shared.ids()).toEqual(['a', 'c', 'd', 'b']);
    expect(shared.y[3]).toMatchObject({ id: 'b', source: 'b', outputs: [{ text: 'kept' }] });
    expect(stepsDone(shared, steps, placed)).toBe(true);
    shared.apply([step('move', 'd', { after_id: '' })]);
    expect(shared.ids()).toEqual(['d', 'a', 'c', 'b']);
    shared.apply([step('move', 'b', { after_id: 'gone', index: 1 })]);
    expect(shared.ids()).toEqual(['d', 'b', 'a', 'c']);
    shared.apply([step('move', 'b', { after_id: 'd' })]); // already there: untouched
    expect(shared.ids()).toEqual(['d', 'b', 'a', 'c']);
    expect(() => shared.apply([step('move', 'gone', { after_id: 'a' })])).toThrow(CellGone);
  });

  it('finds each cell where the steps before it left it (the shared list is stale until the end)', () => {
    const shared = new FakeShared(['x', 'a', 'b', 'y', 'z']);
    shared.apply([step('delete', 'a'), step('delete', 'b'), step('move', 'z', { after_id: 'x' })]);
    expect(shared.ids()).toEqual(['x', 'z', 'y']);
  });

  it('refuses a cell that is gone, and steps of the wrong shape', () => {
    expect(() => new FakeShared(['a']).apply([step('restore', 'gone')])).toThrow(CellGone);
    expect(checkSteps('no')).toContain('list');
    expect(checkSteps([{ op: 'format', cell_id: 'a' }])).toContain('"op"');
    expect(checkSteps([{ op: 'insert', cell_id: 'a', cell_type: 'code' }])).toContain('"source"');
    expect(checkSteps([{ op: 'move', cell_id: 'a' }])).toContain('"after_id"');
    expect(checkSteps([{ op: 'move', cell_id: 'a', after_id: 'b' }])).not.toEqual(expect.any(String));
  });
});
