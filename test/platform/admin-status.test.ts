// `npm run admin -- status`: the operator's first screen, as text, as JSON, and refreshed with --watch.
import t from 'tap';
import { spawn } from 'node:child_process';
import { Kvm } from '@nats-io/kv';
import { startTestNats } from '../helpers/nats.ts';
import { startWallet, fund, walletId as newWalletId } from '../wallet/_helpers.ts';
import { wallet } from '../../shared/protocol/wallet.ts';
import { BUCKETS } from '../../shared/names.ts';
import { ROOT } from '../../shared/config/index.ts';
import { tempDir } from '../helpers/nats.ts';
import { admin } from '../wallet/_admin.ts';
import type { Status } from '../../admin/status.ts';
import { start as startSupervisor } from '../../actors/job-supervisor/index.ts';
import { testLog } from '../helpers/nats.ts';

t.test('status: servers, streams, consumers, instances, unfinished jobs, the audit', async (t) => {
  const tn = await startTestNats(t);
  await startWallet(t, tn);
  // the job counts come from the supervisor's projection (no read of every job document)
  const sup = await startSupervisor({
    nc: await tn.connect('supervisor'),
    config: tn.config,
    log: testLog(),
    instanceId: 'supervisor-status',
  });
  t.teardown(() => sup.stop());
  const w = newWalletId();
  await fund(tn.nc, w, 1000);
  // a job charged and still processing, created 90 s ago
  await wallet.charge(tn.nc, { walletId: w, jobId: 'job_status1', amount: 40 });
  const jobs = await new Kvm(tn.nc).open(BUCKETS.jobs);
  const createdAt = Date.now() - 90_000;
  await jobs.put(
    'job_status1',
    JSON.stringify({
      id: 'job_status1',
      service: 'websitepro',
      status: 'processing',
      walletId: w,
      target: 'example.org',
      request: {},
      cost: 40,
      refunded: 0,
      createdAt,
      expiresAt: createdAt + 3600_000,
      results: [{ key: 'markdown', status: 'pending', price: 40, refunded: false }],
    }),
  );

  const j = await admin(tn.server.url, ['status', '--json']);
  t.equal(j.code, 0, j.err);
  const s = JSON.parse(j.out) as Status;
  t.equal(s.servers.length, 1);
  t.ok(s.servers[0]!.up, 'the server is up');
  t.match(s.servers[0]!.version, /^\d+\.\d+\.\d+/, 'with its version');
  t.ok(
    s.streams.some((x) => x.name === 'LEDGER' && x.kind === 'stream' && x.messages === 2),
    'LEDGER with its two entries',
  );
  t.ok(
    s.streams.some((x) => x.name === 'jobs' && x.kind === 'bucket' && x.messages === 1),
    'the jobs bucket',
  );
  t.ok(
    s.streams.every((x) => x.leader),
    'every stream has a leader',
  );
  t.same(s.instances.wallet?.length, 1, 'one live wallet instance (micro service)');
  t.equal(s.jobs.unfinished, 1, 'one unfinished job');
  t.equal(s.jobs.oldestUnfinishedId, 'job_status1');
  t.ok(
    s.jobs.oldestUnfinishedAgeSeconds! >= 89 && s.jobs.oldestUnfinishedAgeSeconds! < 200,
    `its age ${s.jobs.oldestUnfinishedAgeSeconds} s`,
  );
  t.ok(s.audit.ok, 'the audit is clean');
  t.same(s.warnings, [], 'nothing to look at');

  const text = await admin(tn.server.url, ['status']);
  t.equal(text.code, 0, text.err);
  for (const section of [
    'NATS servers',
    'Streams, buckets and stores',
    'Consumers',
    'Live instances',
    'Jobs: 1 stored, 1 unfinished, oldest job_status1',
    'Audit: ok: no violation',
  ]) {
    t.match(text.out, section, `text shows "${section}"`);
  }

  // a ledger entry written behind the wallet's back: the verdict changes, and the exit code
  await wallet.charge(tn.nc, { walletId: w, jobId: 'job_without_document', amount: 10 });
  const bad = await admin(tn.server.url, ['status', '--json']);
  t.equal(bad.code, 1, 'exit 1 when the audit finds a violation');
  const b = JSON.parse(bad.out) as Status;
  t.notOk(b.audit.ok);
  t.match(b.warnings.join('\n'), /the audit found 1 violation/);
});

t.test('status --watch refreshes until stopped', async (t) => {
  const tn = await startTestNats(t);
  const child = spawn(process.execPath, ['admin/main.ts', 'status', '--watch', '1', '--json'], {
    cwd: ROOT,
    env: { ...process.env, NATS_URL: tn.server.url, DATA_DIR: tempDir('payloads-admin-'), LOG_LEVEL: 'warn' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  t.teardown(() => {
    child.kill('SIGKILL');
  });
  let out = '';
  child.stdout.on('data', (d) => (out += d));
  const deadline = Date.now() + 30_000;
  while (out.split('\n').filter((l) => l.startsWith('{"at"')).length < 3 && Date.now() < deadline)
    await new Promise((r) => setTimeout(r, 200));
  const frames = out
    .split('\n')
    .filter((l) => l.startsWith('{"at"'))
    .map((l) => JSON.parse(l) as Status);
  t.same(
    out.split('\n').filter((l) => l && !l.startsWith('{"at"')),
    [],
    'nothing but status frames on stdout',
  );
  t.ok(frames.length >= 3, `three refreshes (${frames.length})`);
  t.ok(frames[2]!.at > frames[0]!.at, 'each one new');
  t.equal(child.exitCode, null, 'still running');
});

t.test('status: bad --watch value is a usage error', async (t) => {
  const tn = await startTestNats(t);
  const r = await admin(tn.server.url, ['status', '--watch', '0']);
  t.equal(r.code, 2);
  t.match(r.out, /usage: status/);
});
