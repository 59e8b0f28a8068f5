// What a KV key costs nats-server's memory, by the length of its token (docs/performance.md, session 28):
// a bucket of N keys (default 100,000) as a 64-character hex hash (what `keys` holds), 43 and 22
// base64url characters, and none; nats-server restarted on each store, RSS 20 s after its start.
//   node scripts/diagnostics/subject-memory.ts [N]
import { Kvm } from '@nats-io/kv';
import { createHash, randomBytes } from 'node:crypto';
import { readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { startNatsServer } from '../../shared/nats/server.ts';
import { connectNats } from '../../shared/nats/connect.ts';
const rss = (pid: number) => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1]) / 1024;
const N = Number(process.argv[2] ?? 100000);
const forms: Record<string, (b: Buffer) => string> = {
  none: () => '',
  hex64: (b) => b.toString('hex'),
  b64url43: (b) => b.toString('base64url'),
  b64url22: (b) => b.subarray(0, 16).toString('base64url'),
};
for (const [name, f] of Object.entries(forms)) {
  const dir = `${tmpdir()}/payloads-subject-memory-${name}`;
  rmSync(dir, { recursive: true, force: true });
  let s = await startNatsServer({ storeDir: dir, port: -1, serverName: 'k', syncInterval: '2m' });
  let nc = await connectNats(s.url, 'k');
  const kv = await new Kvm(nc).create('keys', { history: 1 });
  const val = JSON.stringify({ walletId: 'w_' + randomBytes(12).toString('hex'), createdAt: Date.now(), label: 'x' });
  if (name !== 'none') {
    const ps: Promise<unknown>[] = [];
    for (let i = 0; i < N; i++) {
      ps.push(kv.put(f(createHash('sha256').update(randomBytes(32)).digest()), val));
      if (ps.length >= 1000) {
        await Promise.all(ps);
        ps.length = 0;
      }
    }
    await Promise.all(ps);
  }
  await nc.close();
  await s.stop();
  s = await startNatsServer({ storeDir: dir, port: -1, serverName: 'k' });
  nc = await connectNats(s.url, 'k');
  await new Promise((r) => setTimeout(r, 20000));
  console.log(`${name}: rss ${rss(s.pid).toFixed(1)} MB`);
  await nc.close();
  await s.stop();
  rmSync(dir, { recursive: true, force: true });
}
process.exit(0);
