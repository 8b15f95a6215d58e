import net from 'node:net';

/** Asks the kernel for a free loopback port. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

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

/** A free loopback port in [min, max): for a server that stores its ports as smallint (Temporal's membership table), below 32768. */
export async function freePortInRange(min: number, max: number): Promise<number> {
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
 * A free loopback port for a server that will listen on it later (a child still starting, a
 * command a test runs after others): below the kernel's ephemeral range (32768 and up), since a
 * port from freePort() can meanwhile be handed to any outgoing connection (the README test met
 * EADDRINUSE so, its port taken while the service it had started came up).
 */
export function freePortForLater(): Promise<number> {
  return freePortInRange(20_000, 32_000);
}
