// The relay-prober actor on a real nats-server: catalogue advertised, tasks pulled from task.labs,
// reports stored in the reports object store (valid labs.report/1), progress reported, fatal
// errors become clean failures, webhooks delivered signed.
import t from 'tap';
import { jetstream } from '@nats-io/jetstream';
import { Kvm } from '@nats-io/kv';
import { Objm } from '@nats-io/obj';
import { startTestNats, testLog } from '../helpers/nats.ts';
import { BUCKETS, OBJECT_STORES, subjects } from '../../shared/names.ts';
import { objectName, taskMsgId, type Outcome, type Task } from '../../shared/protocol/jobs.ts';
import { readCatalogue } from '../../shared/catalogue.ts';
import { start } from '../../actors/relay-prober/index.ts';
import { verifyWebhook, WEBHOOK_HEADERS } from '../../shared/webhook.ts';
import { startMiniRelay } from './fixtures/mini-relay.ts';
import { makeCerts } from './fixtures/certs.ts';
import { startWebhookReceiver } from './fixtures/webhook-receiver.ts';
import { fastLabs, fastWebhooks, validate } from './fixtures/probe.ts';

const certs = makeCerts(30);
t.teardown(() => certs.cleanup());

const relay = await startMiniRelay({});
const silent = await startMiniRelay({ silent: true });
t.teardown(() => relay.close());
t.teardown(() => silent.close());

// the first attempt fails (502): the webhook is retried
const rx = await startWebhookReceiver(certs, [502, 204], '/labs');
t.teardown(rx.close);
const hooks = rx.got;
const hookUrl = rx.url;

const { nc, config } = await startTestNats(t, {
  labs: { ...fastLabs, extraCaFile: certs.caFile, allowedPorts: [relay.port, silent.port] },
  webhooks: fastWebhooks,
});
const actor = await start({ nc, config, log: testLog(), instanceId: 'prober-test-1' });
t.teardown(() => actor.stop());

function task(jobId: string, resultKey: string, params: Record<string, unknown>): Task {
  return {
    v: 1,
    jobId,
    service: 'labs',
    resultKey,
    walletId: 'w1',
    store: OBJECT_STORES.reports,
    objectName: objectName(jobId, resultKey),
    expiresAt: Date.now() + 86400_000,
    params,
  };
}

async function runTask(tk: Task): Promise<{ final: Outcome; progress: string[] }> {
  const sub = nc.subscribe(subjects.result(tk.jobId));
  // progress lines are core messages on their own subject (shared/worker.ts)
  const progress: string[] = [];
  const lines = nc.subscribe(subjects.progress(tk.jobId), {
    callback: (_e, m) => {
      progress.push(m.json<{ progress: string }>().progress);
    },
  });
  t.teardown(() => lines.unsubscribe());
  await jetstream(nc).publish(subjects.taskLabs, JSON.stringify(tk), { msgID: taskMsgId(tk.jobId, tk.resultKey) });
  for await (const m of sub) {
    const o = m.json<Outcome>();
    if (o.kind === 'progress') progress.push(o.progress);
    else {
      sub.unsubscribe();
      return { final: o, progress };
    }
  }
  throw new Error('no outcome');
}

t.test('catalogue advertised', async (t) => {
  const kv = await new Kvm(nc).open(BUCKETS.catalogue);
  const [entry] = await readCatalogue(kv, 'labs');
  t.ok(entry, 'one live entry');
  const c = entry!.catalogue as Record<string, any>;
  t.equal(c.reportSchema, 'labs.report/1');
  t.same(
    c.modules.map((m: { id: string }) => m.id),
    ['quick', 'conformance'],
  );
  t.ok(c.checks.length >= 50);
  t.ok(c.checks.every((x: any) => x.id && x.title && x.basis?.nip && x.basis?.level && typeof x.needsDataset === 'boolean'));
  t.ok(c.selectable.includes('filter-ids') && c.selectable.includes('dns'));
  t.same(c.allowedPorts, [relay.port, silent.port]);
  t.match(c.webhook.publicKey, /^[0-9a-f]{64}$/);
  t.ok(c.limits.connections > 0 && c.limits.subscriptions > 0 && c.limits.events > 0);
});

t.test('a quick module: report stored, progress reported, webhook delivered signed', async (t) => {
  const { final, progress } = await runTask(task('job-q', 'quick', { relay: relay.url, module: 'quick', webhook: hookUrl }));
  t.equal(final.kind, 'done');
  if (final.kind !== 'done') return;
  t.equal(final.file?.contentType, 'application/json');
  t.equal(final.file?.store, OBJECT_STORES.reports);
  t.ok(
    progress.some((p) => /check \d+\/\d+/.test(p)),
    `progress: ${progress.slice(0, 3).join(' | ')}`,
  );
  const os = await new Objm(nc).open(OBJECT_STORES.reports);
  const data = await os.getBlob(objectName('job-q', 'quick'));
  const report = JSON.parse(new TextDecoder().decode(data!));
  t.ok(validate(report), 'stored report is labs.report/1');
  t.equal(final.extra?.score, report.score);
  const kv = await new Kvm(nc).open(BUCKETS.catalogue);
  const pub = ((await readCatalogue(kv, 'labs'))[0]!.catalogue as any).webhook.publicKey;
  const deadline = Date.now() + 10000;
  while (hooks.length < 2 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
  t.equal(hooks.length, 2, 'first attempt answered 502, retried');
  const h = hooks[1]!;
  const hv = (n: string) => String(h.headers[n.toLowerCase()]);
  t.ok(verifyWebhook(pub, hv(WEBHOOK_HEADERS.timestamp), h.body, hv(WEBHOOK_HEADERS.signature)), 'verifies with the catalogue key');
  const payload = JSON.parse(h.body);
  t.same(
    { type: payload.type, jobId: payload.jobId, resultKey: payload.resultKey },
    { type: 'labs.report', jobId: 'job-q', resultKey: 'quick' },
  );
  t.same(payload.report, report, 'the webhook carries the stored report');
});

t.test('a custom selection', async (t) => {
  const { final } = await runTask(
    task('job-c', 'custom', { relay: relay.url, module: 'custom', checks: ['filter-ids', 'kind-replaceable', 'nope'] }),
  );
  t.equal(final.kind, 'done');
  const os = await new Objm(nc).open(OBJECT_STORES.reports);
  const report = JSON.parse(new TextDecoder().decode((await os.getBlob(objectName('job-c', 'custom')))!));
  t.same(
    report.checks.map((c: { id: string }) => c.id),
    ['filter-ids', 'kind-replaceable'],
  );
  t.same(
    report.checks.map((c: { status: string }) => c.status),
    ['pass', 'pass'],
  );
});

t.test('a relay that never answers: failed with not_a_relay', async (t) => {
  const { final } = await runTask(task('job-s', 'quick', { relay: silent.url, module: 'quick' }));
  t.equal(final.kind, 'failed');
  if (final.kind === 'failed') t.equal(final.error, 'not_a_relay');
});
