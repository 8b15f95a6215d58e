import net from 'node:net';

export function isPortOpen(port: number, host = '127.0.0.1'): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect({ port, host });
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

/** Polls until something listens on the port; slow JVM and first-run starts get a generous deadline. */
export async function waitForPort(port: number, what: string, timeoutMs = 120_000, isAlive: () => boolean = () => true): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await isPortOpen(port)) return;
    if (!isAlive()) throw new Error(`${what} exited before listening on port ${port}`);
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`${what} did not listen on port ${port} within ${timeoutMs / 1000} s`);
}

/** A free loopback port in [min, max). */
async function freePortInRange(min: number, max: number): Promise<number> {
  for (let tries = 0; tries < 200; tries++) {
    const port = min + Math.floor(Math.random() * (max - min));
    const free = await new Promise<boolean>((resolve) => {
      const server = net.createServer();
      server.once('error', () => resolve(false));
      server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
    });
    if (free) return port;
  }
  throw new Error(`no free port in [${min}, ${max})`);
}

/**
 * A free loopback port, below the kernel's ephemeral range (32768 and up): the port is listened on
 * later (a child still starting, a command run after others), and one the kernel handed out
 * (listen on port 0) could meanwhile go to any outgoing connection or other server. The README
 * test met that: its listen port, taken so before `npm start` came up, was answering plain HTTP.
 * Below 32768 also suits a server that keeps its ports as smallint (Temporal's membership table).
 */
export function freePort(): Promise<number> {
  return freePortInRange(20_000, 32_000);
}
