/**
 * The bridge's `restore` steps on a stand-in for the notebook's shared model: the kernel
 * decides which cells to touch, the page puts them back in order.
 */
import { applySteps, CellGone, checkSteps, IRestoreStep, stepsDone } from '../src/restore';

class FakeShared {
  cells: any[];
  private fresh = 0;
  constructor(ids: string[]) {
    this.cells = ids.map(id => ({ id, cell_type: 'code', source: id }));
  }
  deleteCell(index: number): void {
    this.cells.splice(index, 1);
  }
  insertCell(index: number, json: any): any {
    const cell = { ...json, id: json.id ?? `fresh${++this.fresh}` };
    this.cells.splice(index, 0, cell);
    return cell;
  }
  moveCell(from: number, to: number): void {
    // (as @jupyter/ydoc's: the cell's JSON taken out and put in at `to` of the new list)
    const [cell] = this.cells.splice(from, 1);
    this.cells.splice(to, 0, { ...cell });
  }
  ids(): string[] {
    return this.cells.map(c => c.id);
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
    const placed = applySteps(shared, steps);
    expect(shared.ids()).toEqual(['a', 'b', 'c', 'd']);
    expect(shared.cells[1]).toMatchObject({ source: 'was b', execution_count: 3, outputs: [{ text: 'kept' }] });
    expect(stepsDone(shared, steps, placed)).toBe(true);
  });

  it('gives a re-inserted cell a new id when its id is taken, and puts it first without after_id', () => {
    const shared = new FakeShared(['x', 'y']);
    applySteps(shared, [step('insert', 'y')]);
    expect(shared.ids()).toEqual(['fresh1', 'x', 'y']);
  });

  it('moves a cell as it is after a cell, first, or at its index when that cell is gone', () => {
    const shared = new FakeShared(['a', 'b', 'c', 'd']);
    shared.cells[1].outputs = [{ output_type: 'stream', name: 'stdout', text: 'kept' }];
    const steps = [step('move', 'b', { after_id: 'd', index: 3, source: 'not used' })];
    const placed = applySteps(shared, steps);
    expect(shared.ids()).toEqual(['a', 'c', 'd', 'b']);
    expect(shared.cells[3]).toMatchObject({ id: 'b', source: 'b', outputs: [{ text: 'kept' }] });
    expect(stepsDone(shared, steps, placed)).toBe(true);
    applySteps(shared, [step('move', 'd', { after_id: '' })]);
    expect(shared.ids()).toEqual(['d', 'a', 'c', 'b']);
    applySteps(shared, [step('move', 'b', { after_id: 'gone', index: 1 })]);
    expect(shared.ids()).toEqual(['d', 'b', 'a', 'c']);
    applySteps(shared, [step('move', 'b', { after_id: 'd' })]); // already there: untouched
    expect(shared.ids()).toEqual(['d', 'b', 'a', 'c']);
    expect(() => applySteps(shared, [step('move', 'gone', { after_id: 'a' })])).toThrow(CellGone);
  });

  it('refuses a cell that is gone, and steps of the wrong shape', () => {
    expect(() => applySteps(new FakeShared(['a']), [step('restore', 'gone')])).toThrow(CellGone);
    expect(checkSteps('no')).toContain('list');
    expect(checkSteps([{ op: 'format', cell_id: 'a' }])).toContain('"op"');
    expect(checkSteps([{ op: 'insert', cell_id: 'a', cell_type: 'code' }])).toContain('"source"');
    expect(checkSteps([{ op: 'move', cell_id: 'a' }])).toContain('"after_id"');
    expect(checkSteps([{ op: 'move', cell_id: 'a', after_id: 'b' }])).not.toEqual(expect.any(String));
  });
});
