// The converter actor alone in a process, for bench/converter.ts: connects to the bench's
// nats-server with the bench's config, answers `{cpu: true}` over IPC with its CPU time (all
// threads) and stops on `{stop: true}`.
import { readFileSync } from 'node:fs';
import { start } from '../../actors/converter/index.ts';
import { connectNats } from '../../shared/nats/connect.ts';
import { createLogger } from '../../shared/log.ts';
import type { Config } from '../../shared/config/index.ts';

const { url, config } = JSON.parse(readFileSync(process.argv[2]!, 'utf8')) as { url: string; config: Config };
const nc = await connectNats(url, 'converter-bench');
const actor = await start({ nc, config, log: createLogger('converter', 'warn'), instanceId: 'conv-bench' });
process.on('message', async (m: { cpu?: boolean; stop?: boolean }) => {
  if (m.cpu) process.send!({ cpu: process.cpuUsage() });
  if (m.stop) {
    await actor.stop();
    await nc.close();
    process.exit(0);
  }
});
process.send!({ ready: true });
