/**
 * The bridge's notebook version on a real Yjs document shaped as JupyterLab's (a `cells`
 * array of maps with a Y.Text source): each cell's hash is kept between versions, and the
 * version must still be exactly what hashing every cell afresh gives (the stale-edit check
 * rests on it).
 */
import * as Y from 'yjs';
import { NotebookVersion } from '../src/bridgeVersion';

function newCell(id: string, source: string, type = 'code'): Y.Map<any> {
  const cell = new Y.Map<any>();
  cell.set('id', id);
  cell.set('cell_type', type);
  cell.set('source', new Y.Text(source));
  cell.set('outputs', new Y.Array());
  cell.set('metadata', new Y.Map());
  return cell;
}

function notebook(count: number): Y.Doc {
  const doc = new Y.Doc();
  doc.getArray('cells').push(Array.from({ length: count }, (_, i) => newCell(`c${i}`, `x = ${i}`)));
  return doc;
}

const cells = (doc: Y.Doc) => doc.getArray<Y.Map<any>>('cells');
const fresh = (doc: Y.Doc) => new NotebookVersion().compute(doc);

describe('NotebookVersion', () => {
  it('is the version of every cell hashed afresh after each kind of change', () => {
    const doc = notebook(20);
    const kept = new NotebookVersion();
    let last = kept.compute(doc);
    const edits: [string, () => void, boolean][] = [
      ['type into a source', () => (cells(doc).get(3).get('source') as Y.Text).insert(2, 'y'), true],
      ['replace a source', () => cells(doc).get(4).set('source', new Y.Text('other')), true],
      ['change an id', () => cells(doc).get(5).set('id', 'renamed'), true],
      ['change a type', () => cells(doc).get(6).set('cell_type', 'markdown'), true],
      ['add an output', () => (cells(doc).get(7).get('outputs') as Y.Array<any>).push([{ text: '1' }]), false],
      ['notebook metadata', () => doc.getMap('meta').set('kernelspec', 'python3'), false],
      ['insert a cell', () => cells(doc).insert(2, [newCell('new', 'x = 1')]), true],
      ['delete a cell', () => cells(doc).delete(9, 1), true],
      [
        'move a cell (delete and insert a copy)',
        () => {
          const source = String(cells(doc).get(1).get('source'));
          cells(doc).delete(1, 1);
          cells(doc).insert(10, [newCell('c1', source)]);
        },
        true
      ],
      [
        'insert a cell and type into it in one transaction',
        () => {
          const cell = newCell('typed', 'a');
          cells(doc).insert(0, [cell]);
          (cell.get('source') as Y.Text).insert(1, 'b');
        },
        true
      ]
    ];
    for (const [what, edit, moves] of edits) {
      doc.transact(edit);
      const now = kept.compute(doc);
      expect([what, now]).toEqual([what, fresh(doc)]);
      expect([what, now !== last]).toEqual([what, moves]);
      last = now;
    }
  });

  it('is exact when read inside an edit, before the observers run', () => {
    const doc = notebook(5);
    const kept = new NotebookVersion();
    kept.compute(doc);
    let early = '';
    const read = (transaction: any) => {
      kept.forget(transaction); // the order of the document's listeners does not matter
      early = kept.compute(doc);
    };
    doc.on('beforeObserverCalls', read);
    doc.transact(() => (cells(doc).get(2).get('source') as Y.Text).insert(0, '# '));
    doc.off('beforeObserverCalls', read);
    expect(early).toEqual(fresh(doc));
  });

  it('hashes only the changed cell again after an edit of one of many', () => {
    const doc = notebook(200);
    const kept = new NotebookVersion();
    kept.compute(doc);
    const reads = jest.fn();
    cells(doc).forEach(cell => {
      const get = cell.get.bind(cell);
      cell.get = (key: string) => {
        reads(key);
        return get(key);
      };
    });
    doc.transact(() => (cells(doc).get(100).get('source') as Y.Text).insert(0, 'y'));
    reads.mockClear();
    kept.compute(doc);
    expect(reads.mock.calls.filter(([key]) => key === 'source')).toHaveLength(1);
  });
});
