import t from 'tap';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { startTestNats, tempDir } from '../helpers/nats.ts';
import { startFixtures } from './fixtures.ts';
import { startPool, shotTask, publishTask, watchOutcomes, newJobId } from './pool.ts';
import { spawnActor } from '../../scripts/cluster-lib.ts';

t.test('two instances holding the same version share its consumer; one holding only another browser takes none of them', async (t) => {
  const tn = await startTestNats(t);
  const fx = await startFixtures(t);
  const a = await startPool(t, tn, ['chromium'], 'pool-a', { concurrency: 1 });
  const b = await startPool(t, tn, ['chromium', 'mobile'], 'pool-b', { concurrency: 1 });
  const c = await startPool(t, tn, ['mobile'], 'pool-c', { concurrency: 1 });
  const version = a.stats().browsers[0]!.versions[0]!;
  const jobId = newJobId();
  const outcomes = watchOutcomes(tn.nc, jobId);
  const n = 6;
  for (let i = 0; i < n; i++) {
    // delay 2: each shot keeps its instance busy, so the other one must pull the next
    await publishTask(tn.nc, shotTask(jobId, { url: fx.url('/plain'), browser: 'chromium', version, viewport: { w: 400 + i, h: 400 }, scheme: 'light', options: { delay: 2 } }));
  }
  const got = await outcomes.waitFor(n, 90000);
  t.ok([...got.values()].every((o) => o.kind === 'done'), 'all done');
  const sa = a.stats().shots;
  const sb = b.stats().shots;
  t.equal(sa + sb, n, `each task done once (a ${sa}, b ${sb})`);
  t.ok(sa >= 1 && sb >= 1, 'both instances worked');
  t.equal(c.stats().shots, 0, 'the mobile-only instance pulled no chromium task');
  outcomes.stop();
});

t.test('an instance killed mid-task: the other finishes it after the redelivery', async (t) => {
  const tn = await startTestNats(t);
  const fx = await startFixtures(t);
  const dir = tempDir('payloads-shots-');
  const configFile = join(dir, 'config.json');
  writeFileSync(configFile, JSON.stringify({ outbound: tn.config.outbound, jobs: tn.config.jobs, shots: { pageTimeoutMs: 30000 } }));
  const child = await spawnActor('browser-pool', { natsUrl: tn.server.url, dataDir: dir, replicas: 1, configFile, env: { BROWSERS: 'chromium' }, logLevel: 'warn' });
  t.teardown(() => child.kill('SIGKILL'));

  const jobId = newJobId();
  const outcomes = watchOutcomes(tn.nc, jobId);
  // 156 or whatever Debian ships: ask the child's catalogue entry through a local launch
  const { launcherFor } = await import('../../actors/browser-pool/launchers/registry.ts');
  const probe = await launcherFor('chromium').launch({});
  const version = (await probe.version()).match(/\/(\d+)\./)![1]!;
  await probe.close();

  // the page answers after 4 s: the child is mid-task when it dies
  const task = shotTask(jobId, { url: fx.url('/slow?ms=4000'), browser: 'chromium', version, viewport: { w: 500, h: 500 }, scheme: 'light' });
  await publishTask(tn.nc, task);
  for (let i = 0; i < 200 && !fx.hits.get('/slow'); i++) await new Promise((r) => setTimeout(r, 100));
  t.equal(fx.hits.get('/slow'), 1, 'the child started the task');
  const b = await startPool(t, tn, ['chromium'], 'pool-b');
  t.equal(await child.kill('SIGKILL'), 'SIGKILL');

  const got = await outcomes.waitFor(1, 60000);
  t.match(got.get(task.resultKey), { kind: 'done', file: { contentType: 'image/png' } });
  t.equal(b.stats().shots, 1, 'the surviving instance delivered it');
  t.equal(fx.hits.get('/slow'), 2, 'loaded again after the redelivery');
  outcomes.stop();
});
