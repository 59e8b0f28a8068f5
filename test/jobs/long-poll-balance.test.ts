// A long poll (GET /v1/jobs/:id?wait=) reads the balance beside its wait: a job finished without a
// refund is answered with no ledger round trip after the watch delivered the finish; one refunded
// during the wait still carries the balance after its refund (docs/decisions.md, "Jobs").
import t from 'tap';
import { startJobsApi } from './app.ts';
import { STREAMS } from '../../shared/names.ts';
import { publishOutcome } from '../../shared/worker.ts';

/** Requests the gateway's balance read makes to learn the ledger's last sequence (gateway/balances.ts). */
const isLedgerFreshness = (subject: string) =>
  subject === `$JS.API.DIRECT.GET.${STREAMS.ledger}` ||
  subject.startsWith(`$JS.API.DIRECT.GET.${STREAMS.ledger}.`) ||
  subject === `$JS.API.STREAM.INFO.${STREAMS.ledger}`;

t.test('a long poll answered on a finish without refund reads no balance after the finish', async (t) => {
  const s = await startJobsApi(t);
  const { key, walletId } = await s.newWallet(1000);
  const c = await s.request('POST', '/v1/websitepro/jobs', { key, body: { url: `${s.targetUrl}/?behave=slow`, outputs: ['text'] } });
  t.equal(c.status, 201);
  const id = c.json.job.id as string;
  // wire order: the job's finishing write, then any ledger freshness request
  const order: string[] = [];
  const sub = s.nc.subscribe('>', {
    callback: (_e, m) => {
      if (isLedgerFreshness(m.subject)) order.push('ledger');
      else if (m.subject.endsWith(`.${id}`) && m.subject.startsWith('$KV.') && m.data.length) {
        try {
          if (/"status":"completed"/.test(new TextDecoder().decode(m.data))) order.push('finish');
        } catch {
          /* not text */
        }
      }
    },
  });
  const r = await s.request('GET', `/v1/jobs/${id}?wait=20`, { key });
  await s.nc.flush();
  sub.unsubscribe();
  t.equal(r.status, 200);
  t.equal(r.json.job.status, 'completed');
  t.equal(r.json.balance, await s.balance(walletId), 'the balance after the charge');
  t.ok(order.includes('finish'), `the finish was seen on the wire (${order.join(',')})`);
  // fails against the route that read the balance after the wait: a ledger request after the finish
  t.same(
    order.slice(order.indexOf('finish') + 1).filter((x) => x === 'ledger'),
    [],
    'no ledger request after the finish',
  );
});

t.test('a long poll on a job refunded during the wait carries the balance after the refund', async (t) => {
  const s = await startJobsApi(t);
  const { key, walletId } = await s.newWallet(1000);
  const c = await s.request('POST', '/v1/websitepro/jobs', { key, body: { url: `${s.targetUrl}/?behave=hang`, outputs: ['text'] } });
  t.equal(c.status, 201);
  const charged = c.json.balance as number;
  t.ok(charged < 1000, 'charged');
  const polling = s.request('GET', `/v1/jobs/${c.json.job.id}?wait=20`, { key });
  // the result fails (and is refunded) while the poll waits
  await new Promise((r) => setTimeout(r, 500));
  await publishOutcome(
    s.nc,
    { v: 1, kind: 'failed', jobId: c.json.job.id, resultKey: 'text', at: Date.now(), error: 'timeout', message: 'test' },
    'test',
  );
  const r = await polling;
  t.equal(r.json.job.status, 'failed');
  t.ok(r.json.job.refunded > 0, 'refunded during the wait');
  t.equal(r.json.balance, 1000, 'the answer carries the balance after the refund');
  t.equal(r.json.balance, await s.balance(walletId));
  t.same(await s.violations(), []);
});
