// Time per object put, the library's putBlob against shared/nats/objects.ts putObject, on a throwaway
// nats-server (sync_interval always, as main.ts runs it). Run on a quiet machine:
//   node --import tsx scripts/object-put-timing.ts [rounds]
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Objm, setSha256Backend } from '@nats-io/obj';
import { startNatsServer } from '../shared/nats/server.ts';
import { connectNats } from '../shared/nats/connect.ts';
import { putObject } from '../shared/nats/objects.ts';

const rounds = Number(process.argv[2] ?? 200);
// putObject hashes with node:crypto; give putBlob the same (the client's default is pure JS)
setSha256Backend('native');
const server = await startNatsServer({ storeDir: mkdtempSync(join(tmpdir(), 'objput-timing-')), port: -1 });
const nc = await connectNats(server.url, 'objput-timing');
try {
  const os = await new Objm(nc).create('timing', { ttl: 3600e9 });
  const q = (xs: number[], p: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(p * xs.length))]!;
  for (const size of [2 * 1024, 100 * 1024, 1024 * 1024, 8 * 1024 * 1024]) {
    const data = new Uint8Array(size).map((_, i) => i & 0xff);
    const n = size > 1024 * 1024 ? Math.max(10, rounds / 10) : rounds;
    const t = { putBlob: [] as number[], putObject: [] as number[] };
    for (let i = 0; i < n + 5; i++) {
      // the same names each round: every put after the first is a re-put, as on a redelivery
      const a = performance.now();
      await os.putBlob({ name: `b-${i % 10}`, description: 'application/octet-stream' }, data);
      const b = performance.now();
      await putObject(nc, 'timing', { name: `o-${i % 10}`, description: 'application/octet-stream' }, data);
      const c = performance.now();
      if (i >= 5) {
        t.putBlob.push(b - a);
        t.putObject.push(c - b);
      }
    }
    const f = (xs: number[]) => `median ${q(xs, 0.5).toFixed(2)} ms, p90 ${q(xs, 0.9).toFixed(2)} ms`;
    console.log(`${(size / 1024).toFixed(0).padStart(5)} KiB x${n}: putBlob ${f(t.putBlob)} | putObject ${f(t.putObject)}`);
  }
} finally {
  await nc.close();
  await server.destroy();
}
