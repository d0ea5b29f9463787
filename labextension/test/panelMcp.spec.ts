/**
 * The side panel's MCP section (src/panelMcp.ts): each server, its state, its tools, its log,
 * as `%agent mcp` says them.
 */

import { IMcpServer, mcpServerLines, mcpSummary } from '../src/panelMcp';

const running: IMcpServer = {
  name: 'calc',
  state: 'running',
  transport: 'stdio',
  command: 'python calc_server.py',
  source: 'settings',
  tools: ['mcp__calc__add', 'mcp__calc__touch'],
  error: '',
  log: '/tmp/jupyter-agent-0/mcp-logs/mcp-calc-1.log'
};

describe('the MCP section', () => {
  it('names every server and its state in its folded line', () => {
    const waiting: IMcpServer = { name: 'repo', state: 'needs approval', source: '/w/.mcp.json' };
    expect(mcpSummary([running, waiting])).toBe('MCP: calc (running) · repo (needs approval)');
  });

  it("shows a server's command, tools and log, and where a project server comes from", () => {
    expect(mcpServerLines(running)).toEqual([
      ['Head', 'calc [running] stdio: python calc_server.py'],
      ['Tools', 'tools: mcp__calc__add, mcp__calc__touch'],
      ['Log', 'log: /tmp/jupyter-agent-0/mcp-logs/mcp-calc-1.log']
    ]);
    const failed: IMcpServer = {
      name: 'x',
      state: 'failed',
      transport: 'stdio',
      command: 'x',
      source: '/w/.mcp.json',
      error: 'it stopped'
    };
    expect(mcpServerLines(failed)).toEqual([
      ['Head', 'x [failed] stdio: x from /w/.mcp.json'],
      ['Error', 'error: it stopped']
    ]);
  });
});
