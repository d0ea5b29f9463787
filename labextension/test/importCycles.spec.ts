/**
 * No import cycle among src/*.ts: each module's local imports (`import`, `import type`,
 * `export ... from`) must form a graph without a loop, so that a module can always be read
 * (and loaded) before the ones that import it. Type-only imports count too: a cycle of
 * types is a sign that two modules hold one another's half.
 */

import * as fs from 'fs';
import * as path from 'path';

const SRC = path.join(__dirname, '..', 'src');

/** The local modules a source file imports or re-exports (`./name` -> `name`). */
export function localImports(source: string): string[] {
  const found = new Set<string>();
  const statement = /(?:^|\n)\s*(?:import|export)\b[^;]*?\bfrom\s*'\.\/([\w.-]+)'|(?:^|\n)\s*import\s*'\.\/([\w.-]+)'/g;
  for (const match of source.matchAll(statement)) {
    found.add((match[1] ?? match[2]).replace(/\.(js|ts)$/, ''));
  }
  return [...found].sort();
}

/** Every cycle's path (first module repeated at the end), each found once from its first module. */
export function cycles(graph: ReadonlyMap<string, readonly string[]>): string[][] {
  const found: string[][] = [];
  const state = new Map<string, 'open' | 'done'>();
  const stack: string[] = [];
  const visit = (name: string) => {
    state.set(name, 'open');
    stack.push(name);
    for (const next of graph.get(name) ?? []) {
      if (state.get(next) === 'open') {
        found.push([...stack.slice(stack.indexOf(next)), next]);
      } else if (!state.has(next)) {
        visit(next);
      }
    }
    stack.pop();
    state.set(name, 'done');
  };
  for (const name of [...graph.keys()].sort()) {
    if (!state.has(name)) {
      visit(name);
    }
  }
  return found;
}

function sourceGraph(): Map<string, string[]> {
  const graph = new Map<string, string[]>();
  for (const file of fs.readdirSync(SRC).filter(f => f.endsWith('.ts'))) {
    graph.set(file.replace(/\.ts$/, ''), localImports(fs.readFileSync(path.join(SRC, file), 'utf8')));
  }
  return graph;
}

describe('the modules of src/', () => {
  it('import one another without a cycle', () => {
    expect(cycles(sourceGraph())).toEqual([]);
  });

  it('are all read: the graph holds every module and the imports the panel is known to make', () => {
    const graph = sourceGraph();
    expect(graph.size).toBe(fs.readdirSync(SRC).filter(f => f.endsWith('.ts')).length);
    expect(graph.get('cellContext')).toContain('panelProtocol');
    expect(graph.get('panelProtocol')).toContain('protocol');
  });
});

describe('the cycle check', () => {
  it('reads every form of a local import, across lines', () => {
    const source = [
      "import { a } from './one';",
      "import type { B } from './two';",
      "export { c } from './three';",
      "export * from './four.js';",
      "import './five';",
      "import {\n  d,\n  e\n} from './six';",
      "import { f } from '@lumino/widgets';",
      "const text = 'from ./seven';"
    ].join('\n');
    expect(localImports(source)).toEqual(['five', 'four', 'one', 'six', 'three', 'two']);
  });

  it('finds a cycle, a type-only one too, and none in a tree', () => {
    const cyclic = new Map([
      ['cellContext', ['panelProtocol']],
      ['panelProtocol', ['cellContext', 'protocol']],
      ['protocol', []]
    ]);
    expect(cycles(cyclic)).toEqual([['cellContext', 'panelProtocol', 'cellContext']]);
    expect(cycles(new Map([['a', ['a']]]))).toEqual([['a', 'a']]);
    expect(
      cycles(
        new Map([
          ['a', ['b', 'c']],
          ['b', ['c']],
          ['c', []]
        ])
      )
    ).toEqual([]);
  });
});
