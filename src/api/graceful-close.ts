/**
 * Closing the HTTP server without failing a client (a rolling restart, Ctrl-C): stop accepting,
 * answer what is in flight with `Connection: close`, and close each keep-alive connection as soon
 * as it is idle, so a client never writes its next request into a socket the server is tearing
 * down; after `graceMs` whatever is left is cut.
 */
import type { Server, ServerResponse } from 'node:http';

export function gracefulCloser(server: Server, graceMs = 10_000): () => Promise<void> {
  const inFlight = new Set<ServerResponse>();
  let closing = false;
  server.on('request', (_req, res: ServerResponse) => {
    if (closing) res.setHeader('Connection', 'close');
    inFlight.add(res);
    res.once('close', () => inFlight.delete(res));
  });
  return async () => {
    closing = true;
    for (const res of inFlight) if (!res.headersSent) res.setHeader('Connection', 'close');
    const closed = new Promise<void>((resolve) => server.close(() => resolve()));
    server.closeIdleConnections();
    // A response that was already on its way went out keep-alive: its socket is closed once idle.
    const sweep = setInterval(() => server.closeIdleConnections(), 25);
    const force = setTimeout(() => server.closeAllConnections(), graceMs);
    try {
      await closed;
    } finally {
      clearInterval(sweep);
      clearTimeout(force);
    }
  };
}
