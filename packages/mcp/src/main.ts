#!/usr/bin/env node
/** `webhooks-mcp`: the MCP server on stdio. stdout carries the protocol, so diagnostics go to stderr. */
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { serverFromEnv } from './server.js';

const report = (err: unknown) => process.stderr.write(`webhooks-mcp: ${err instanceof Error ? err.message : String(err)}\n`);

try {
  const { server, close } = serverFromEnv(process.env, report);
  await server.connect(new StdioServerTransport());
  process.stdin.on('close', () => {
    close();
    void server.close();
  });
} catch (err) {
  report(err);
  process.exit(2);
}
