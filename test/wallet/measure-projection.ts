// Cost of the projection's hot calls (issue 17): `node --import tsx test/wallet/measure-projection.ts [n=5000]`.
// n applies then n byRef lookups on a fresh file, after a short warm-up; prints µs per call.
import { performance } from 'node:perf_hooks';
import { rmSync } from 'node:fs';
import { Projection } from '../../actors/wallet/projection.ts';
import { tempDir } from '../helpers/nats.ts';
import type { LedgerMessage } from '../../shared/protocol/wallet.ts';

const [n = 5000] = process.argv.slice(2).map(Number);
const dir = tempDir('payloads-proj-');
const p = new Projection(dir);
const wallets = Array.from({ length: 50 }, (_, i) => `w_${i}`);
const msg = (i: number): LedgerMessage => ({
  v: 1,
  type: 'charge',
  amount: -10,
  balanceAfter: 1_000_000 - i * 10,
  at: Date.now(),
  ref: `charge:job-${i}`,
  jobId: `job-${i}`,
});
let seq = 1;
for (let i = 0; i < 500; i++, seq++) p.apply(seq, wallets[i % 50]!, msg(seq)); // warm-up
for (let i = 0; i < 500; i++) p.byRef(wallets[i % 50]!, `charge:job-${i + 1}`); // seq s is in wallet (s - 1) % 50;
const t0 = performance.now();
for (let i = 0; i < n; i++, seq++) p.apply(seq, wallets[i % 50]!, msg(seq));
const t1 = performance.now();
let found = 0;
for (let i = 0; i < n; i++) if (p.byRef(wallets[(seq - 2 - i) % 50]!, `charge:job-${seq - 1 - i}`)) found++;
const t2 = performance.now();
const forJobStart = performance.now();
for (let i = 0; i < n; i++) p.forJob(wallets[(seq - 2 - i) % 50]!, `job-${seq - 1 - i}`);
const t3 = performance.now();
console.log(
  JSON.stringify({
    n,
    applyUs: +(((t1 - t0) * 1000) / n).toFixed(1),
    byRefUs: +(((t2 - t1) * 1000) / n).toFixed(1),
    forJobUs: +(((t3 - forJobStart) * 1000) / n).toFixed(1),
    found,
  }),
);
p.close();
rmSync(dir, { recursive: true, force: true });
