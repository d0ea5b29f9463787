/** The side panel's MCP section: the conversation's MCP servers, their state and tools
 * (what `%agent mcp` prints). Everything in it is text from the kernel: set as textContent. */

import { el } from './panelDom';

/** One server as the kernel sends it (`jupyter/kernel/mcp_status.py`). */
export interface IMcpServer {
  name: string;
  state: string;
  transport?: string;
  command?: string;
  source?: string;
  tools?: string[];
  error?: string;
  log?: string;
}

/** The folded section's one line: each server and its state. */
export function mcpSummary(servers: IMcpServer[]): string {
  return `MCP: ${servers.map(s => `${s.name} (${s.state})`).join(' · ')}`;
}

/** The lines shown for one server, as [class name suffix, text]. */
export function mcpServerLines(server: IMcpServer): [string, string][] {
  const from = server.source && server.source !== 'settings' ? ` from ${server.source}` : '';
  const lines: [string, string][] = [
    ['Head', `${server.name} [${server.state}] ${server.transport ?? ''}: ${server.command ?? ''}${from}`]
  ];
  if (server.error) {
    lines.push(['Error', `error: ${server.error}`]);
  }
  if (server.tools && server.tools.length > 0) {
    lines.push(['Tools', `tools: ${server.tools.join(', ')}`]);
  }
  if (server.log) {
    lines.push(['Log', `log: ${server.log}`]);
  }
  return lines;
}

/** Fill `host` with the servers (folded: the summary names them and their state); hidden when there are none. */
export function drawMcpServers(host: HTMLElement, servers: IMcpServer[]): void {
  host.textContent = '';
  host.hidden = servers.length === 0;
  if (servers.length === 0) {
    return;
  }
  const details = el('details');
  const summary = el('summary', '', mcpSummary(servers));
  summary.title = 'MCP servers of this conversation (`%agent mcp` lists them too)';
  details.appendChild(summary);
  for (const server of servers) {
    const box = el('div', 'jp-AgentPanel-mcpServer');
    box.dataset.state = server.state;
    for (const [kind, text] of mcpServerLines(server)) {
      box.appendChild(el('div', `jp-AgentPanel-mcp${kind}`, text));
    }
    details.appendChild(box);
  }
  host.appendChild(details);
}
