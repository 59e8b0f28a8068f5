// Measures charge throughput and latency against a throwaway nats-server and one or two wallet
// instances: `node --import tsx test/wallet/measure-charges.ts [instances=1] [wallets=20] [charges=1000]`.
import { performance } from 'node:perf_hooks';
import { startTestNats, testLog } from '../helpers/nats.ts';
import { start } from '../../actors/wallet/index.ts';
import { wallet } from '../../shared/protocol/wallet.ts';
import { audit } from '../../shared/audit.ts';
import { newId } from '../../shared/ids.ts';

const [instances = 1, wallets = 20, charges = 1000] = process.argv.slice(2).map(Number);
const teardowns: (() => unknown)[] = [];
const tn = await startTestNats({ teardown: (f) => teardowns.push(f) });
const handles = [];
for (let i = 0; i < instances; i++)
  handles.push(await start({ nc: await tn.connect(`w${i}`), config: tn.config, log: testLog(), instanceId: `measure-${i}` }));
const ids = Array.from({ length: wallets }, () => newId('w'));
for (const w of ids) await wallet.grant(tn.nc, w, 1_000_000, 'measure');
const lat: number[] = [];
const t0 = performance.now();
let next = 0;
await Promise.all(
  Array.from({ length: 50 }, async () => {
    while (next < charges) {
      const i = next++;
      const s = performance.now();
      await wallet.charge(tn.nc, { walletId: ids[i % wallets]!, jobId: `m-${i}`, amount: 10 });
      lat.push(performance.now() - s);
    }
  }),
);
const secs = (performance.now() - t0) / 1000;
lat.sort((a, b) => a - b);
const p = (q: number) => lat[Math.floor(q * (lat.length - 1))]!.toFixed(1);
console.log(
  JSON.stringify({ instances, wallets, charges, concurrency: 50, perSecond: Math.round(charges / secs), p50ms: p(0.5), p99ms: p(0.99) }),
);
const a = await audit(tn.nc);
console.log(
  `audit: ${a.entries} entries, ${a.violations.filter((v) => !/no job document/.test(v)).length} violations besides the charges without job documents`,
);
for (const h of handles) await h.stop();
for (const f of teardowns.reverse()) await f();
