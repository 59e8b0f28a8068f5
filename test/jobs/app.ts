// The jobs API tests' system over HTTP: real nats-server, wallet and job-supervisor actors, the
// gateway, test workers for websitepro and shots tasks, and a real HTTP target on 127.0.0.1 for the
// job-creation precheck. The shots catalogue is advertised for the test worker, the way a
// browser-pool instance advertises what it serves.
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { startTestApp } from '../helpers/app.ts';
import { startTestWorker } from '../helpers/test-worker.ts';
import { testLog } from '../helpers/nats.ts';
import { advertise } from '../../shared/catalogue.ts';
import { wallet } from '../../shared/protocol/wallet.ts';
import { subjects } from '../../shared/names.ts';
import { audit } from '../../shared/audit.ts';

type Tap = { teardown(fn: () => unknown): void };

export async function startJobsApi(t: Tap, config: Record<string, unknown> = {}, opts: { workers?: boolean; printer?: boolean } = {}) {
  const app = await startTestApp(t, { actors: ['wallet', 'job-supervisor'], config });
  const target = createServer((_req, res) => res.end('<html><title>t</title><body>hello</body></html>'));
  await new Promise<void>((r) => target.listen(0, '127.0.0.1', r));
  const targetUrl = `http://127.0.0.1:${(target.address() as AddressInfo).port}`;
  const stops: (() => Promise<unknown>)[] = [async () => new Promise((r) => target.close(r))];
  t.teardown(async () => {
    for (const s of stops.reverse()) await s().catch(() => {});
  });

  const cat = await advertise(app.nc, 'shots', 'test-pool', () => ({
    browsers: [{ id: 'testbrowser', name: 'Test browser', engine: 'chromium', versions: ['2', '1'] }],
    // a pool that prints websitepro's pdf, as a browser-pool with Chromium advertises
    ...(opts.printer === false ? {} : { prints: ['pdf', 'html'] }),
  }));
  stops.push(() => cat.stop());
  // as a converter advertises: websitepro jobs are refused with 503 while no instance is live
  const web = await advertise(app.nc, 'websitepro', 'test-converter', () => ({ outputs: ['metadata', 'markdown', 'text', 'html', 'pdf'] }));
  stops.push(() => web.stop());

  const workers = [];
  if (opts.workers !== false) {
    for (const [consumer, filterSubject] of [
      ['test-websitepro', subjects.taskWebsitepro],
      ['test-shots', subjects.taskShotsAll],
    ] as const) {
      const nc = await app.connect('test-worker');
      const w = await startTestWorker({ nc, config: app.config, log: testLog(), consumer, filterSubject });
      workers.push(w);
      stops.push(() => w.stop());
    }
  }

  return {
    ...app,
    targetUrl,
    workers,
    async newWallet(balance = 10_000) {
      const k = await app.newKey();
      if (balance) await wallet.grant(app.nc, k.walletId, balance, 'test');
      return k;
    },
    async balance(walletId: string) {
      return (await wallet.balance(app.nc, walletId)).balance;
    },
    async violations() {
      return (await audit(app.nc)).violations;
    },
  };
}

/** Entries of a zip (stored or deflated names and raw data of stored entries), read from the central directory. */
export function readZip(buf: Buffer): { name: string; data: Buffer; method: number }[] {
  let eocd = buf.length - 22;
  while (eocd >= 0 && buf.readUInt32LE(eocd) !== 0x06054b50) eocd--;
  if (eocd < 0) throw new Error('not a zip: no end of central directory');
  const count = buf.readUInt16LE(eocd + 10);
  let p = buf.readUInt32LE(eocd + 16);
  const out = [];
  for (let i = 0; i < count; i++) {
    if (buf.readUInt32LE(p) !== 0x02014b50) throw new Error('bad central directory entry');
    const method = buf.readUInt16LE(p + 10);
    const size = buf.readUInt32LE(p + 20);
    const n = buf.readUInt16LE(p + 28),
      e = buf.readUInt16LE(p + 30),
      c = buf.readUInt16LE(p + 32);
    const local = buf.readUInt32LE(p + 42);
    const name = buf.subarray(p + 46, p + 46 + n).toString('utf8');
    const ln = buf.readUInt16LE(local + 26),
      le = buf.readUInt16LE(local + 28);
    const start = local + 30 + ln + le;
    out.push({ name, method, data: buf.subarray(start, start + size) });
    p += 46 + n + e + c;
  }
  return out;
}
