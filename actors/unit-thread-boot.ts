// The thread side of a unit on a thread of its own (unit-threads.ts): lower this thread's priority,
// connect, start the unit, say `started`; on `stop`, stop it and drain its connection.
import { setPriority } from 'node:os';
import { parentPort, workerData } from 'node:worker_threads';
import { createLogger } from '../shared/log.ts';
import { connectNats } from '../shared/nats/connect.ts';
import { ACTORS } from './index.ts';
import type { UnitThreadData, UnitThreadMessage } from './unit-threads.ts';

const d = workerData as UnitThreadData;
const post = (m: UnitThreadMessage) => parentPort!.postMessage(m);
// before the unit starts its own threads: they inherit this thread's priority (Linux only)
if (d.nice > 0 && process.platform === 'linux') {
  try {
    setPriority(d.nice);
  } catch {
    // a container may forbid it: the unit runs at the process's priority
  }
}
const log = createLogger('main', d.config.server.logLevel).child({ actor: d.name });
try {
  const nc = await connectNats(d.url, d.name, d.config.nats.credsFile, log.child({ nats: d.name }));
  const { start } = await ACTORS[d.name]();
  const handle = await start({ nc, config: d.config, log, instanceId: d.instanceId });
  parentPort!.on('message', async (m) => {
    if (m !== 'stop') return;
    await handle.stop().catch((e: Error) => log.error({ err: e }, 'stop failed'));
    await nc.drain().catch(() => nc.close());
    post({ stopped: true });
  });
  post({ started: true });
} catch (e) {
  post({ failed: (e as Error).stack ?? String(e) });
}
