// Ports for tests that need one nothing listens on: bound by the test itself on loopback, read and
// released, so no assumption is made about what else runs on the machine (a local relay on 7777).
import { createServer, type AddressInfo } from 'node:net';

/** A loopback port nothing listens on: bound, read and released here (a dead target). */
export async function closedPort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const port = (s.address() as AddressInfo).port;
  await new Promise((r) => s.close(r));
  return port;
}
