/**
 * The display relay (src/displays.ts): which kernel messages are ours, and which outputs of
 * a cell an update replaces. The outputs are as a reloaded page holds them: read from the
 * saved notebook, with the display id only in their metadata.
 */

import { KernelMessage } from '@jupyterlab/services';
import {
  checkShownOutputs,
  displayIdOf,
  displayUpdate,
  lostOutput,
  outputsToUpdate,
  repeatedOutputs,
  showOutputs
} from '../src/displays';
import { BridgeError } from '../src/protocol';

const ID = 'jupyter-agent-0123abcd';
const ours = (id: string) => ({ jupyter_agent: { display_id: id } });

function update(displayId: string, data: object, metadata: object = ours(displayId)): KernelMessage.IMessage {
  return {
    header: { msg_type: 'update_display_data' },
    parent_header: {},
    metadata: {},
    content: { data, metadata, transient: { display_id: displayId } },
    channel: 'iopub'
  } as unknown as KernelMessage.IMessage;
}

describe('displayUpdate', () => {
  it('reads an update of ours as the output it makes', () => {
    const msg = update(ID, { 'text/markdown': '✓ *Finished*', 'text/plain': 'completed' });
    expect(displayUpdate(msg)).toEqual({
      id: ID,
      output: {
        output_type: 'display_data',
        data: { 'text/markdown': '✓ *Finished*', 'text/plain': 'completed' },
        metadata: ours(ID)
      }
    });
  });

  it("leaves other messages and other libraries' display ids alone", () => {
    expect(displayUpdate(update('someone-else', { 'text/plain': 'x' }))).toBeNull();
    const display = { ...update(ID, {}), header: { msg_type: 'display_data' } } as unknown as KernelMessage.IMessage;
    expect(displayUpdate(display)).toBeNull();
  });
});

describe('outputsToUpdate', () => {
  const widget = {
    output_type: 'display_data',
    data: { 'application/vnd.jupyter.widget-view+json': { model_id: 'm1' }, 'text/plain': 'live' },
    metadata: ours(ID)
  };
  const fallback = {
    output_type: 'display_data',
    data: { 'text/markdown': 'still running', 'text/plain': '' },
    metadata: ours('jupyter-agent-fallback-99')
  };
  const printed = { output_type: 'stream', name: 'stdout', text: 'hi' };
  const end = { data: { 'text/markdown': 'Finished', 'text/plain': 'completed' }, metadata: ours(ID) };

  it('finds the outputs that name the display id in their metadata', () => {
    expect(displayIdOf(widget)).toBe(ID);
    expect(displayIdOf(printed)).toBeNull();
    expect(displayIdOf({ output_type: 'display_data', metadata: ours('not-ours') })).toBeNull();
    expect(outputsToUpdate([printed, widget, fallback], ID, end)).toEqual([1]);
  });

  it('leaves an output that already holds the update (the page that showed it live)', () => {
    const done = { output_type: 'display_data', ...end };
    expect(outputsToUpdate([done, fallback], ID, end)).toEqual([]);
  });
});

describe('lostOutput', () => {
  const running = 'Still running';
  const lost = '**Interrupted** (`kernel lost`)';
  const fallback = (markdown: string) => ({
    output_type: 'display_data',
    data: { 'text/markdown': markdown, 'text/plain': 'running' },
    metadata: { jupyter_agent: { display_id: ID, if_lost: { ending: running, lost } } }
  });

  it('swaps the running ending for the lost one, and names no ending any more', () => {
    expect(lostOutput(fallback(`so far\n\n${running}`))).toEqual({
      output_type: 'display_data',
      data: { 'text/markdown': `so far\n\n${lost}`, 'text/plain': 'running' },
      metadata: ours(ID)
    });
  });

  it('leaves an output that ended, or that names no ending', () => {
    expect(lostOutput(fallback('so far\n\n✓ Finished'))).toBeNull();
    expect(
      lostOutput({ output_type: 'display_data', data: { 'text/markdown': running }, metadata: ours(ID) })
    ).toBeNull();
  });
});

describe('repeatedOutputs', () => {
  const output = (id: string | null, text = 'x') => ({
    output_type: 'display_data',
    data: { 'text/plain': text },
    metadata: id === null ? {} : ours(id)
  });

  it('names the copies of an output of ours that two views of a shared document made at once', () => {
    const other = 'jupyter-agent-fallback-4567';
    const outputs = [output(ID, 'end'), output(other, 'undo'), output(ID, 'end'), output(other, 'undo')];
    expect(repeatedOutputs(outputs)).toEqual([2, 3]);
  });

  it('leaves alone outputs that are not ours, and ours that are each there once', () => {
    expect(repeatedOutputs([output(null), output(null), output(ID)])).toEqual([]);
  });
});

describe('showOutputs', () => {
  const widget = {
    output_type: 'display_data',
    data: { 'application/vnd.jupyter.widget-view+json': { model_id: 'm1' } },
    metadata: ours(ID)
  };
  const fallback = { output_type: 'display_data', data: { 'text/markdown': 'so far' }, metadata: ours(`${ID}-fb`) };

  /** A notebook panel of one code cell whose outputs are `held`. */
  function panelOf(held: object[]): { panel: any; held: object[] } {
    const outputs = {
      get length() {
        return held.length;
      },
      get: (i: number) => ({ toJSON: () => held[i] }),
      clear: () => held.splice(0, held.length),
      add: (o: object) => held.push(o)
    };
    const cell = { id: 'agent', type: 'code', outputs };
    const panel = {
      context: { ready: Promise.resolve() },
      content: { model: { cells: { length: 1, get: () => cell } } }
    };
    return { panel, held };
  }

  it("puts the run's outputs in place of what the file held (a reload)", async () => {
    const finished = {
      output_type: 'display_data',
      data: { 'text/markdown': '✓ Finished' },
      metadata: ours('jupyter-agent-old')
    };
    const { panel, held } = panelOf([finished]);
    expect(await showOutputs(panel, { cell_id: 'agent', outputs: [widget, fallback] })).toEqual({ shown: true });
    expect(held).toEqual([widget, fallback]);
    // the page that showed the run live already holds them: left alone
    expect(await showOutputs(panel, { cell_id: 'agent', outputs: [widget, fallback] })).toEqual({ shown: false });
  });

  it('takes only outputs of ours, for a cell that is there', async () => {
    expect(typeof checkShownOutputs([{ output_type: 'stream', text: 'x' }])).toBe('string');
    expect(typeof checkShownOutputs([{ output_type: 'display_data', data: {}, metadata: {} }])).toBe('string');
    expect(typeof checkShownOutputs([])).toBe('string');
    expect(checkShownOutputs([widget])).toEqual([widget]);
    const { panel } = panelOf([]);
    await expect(showOutputs(panel, { cell_id: 'elsewhere', outputs: [widget] })).rejects.toThrow(BridgeError);
    await expect(showOutputs(panel, { cell_id: 'agent', outputs: 'x' })).rejects.toThrow(BridgeError);
  });
});
