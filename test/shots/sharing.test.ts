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
    await publishTask(
      tn.nc,
      shotTask(jobId, {
        url: fx.url('/plain'),
        browser: 'chromium',
        version,
        viewport: { w: 400 + i, h: 400 },
        scheme: 'light',
        options: { delay: 2 },
      }),
    );
  }
  const got = await outcomes.waitFor(n, 90000);
  t.ok(
    [...got.values()].every((o) => o.kind === 'done'),
    'all done',
  );
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
  // "mid-task" is an event here, not a race against the clock: the child's page is held by the
  // fixture until the test releases it, so its page timeout only has to outlast pool-b's start on
  // a loaded machine (the task's own bound, jobs.taskTimeoutSeconds, is 300 s)
  writeFileSync(configFile, JSON.stringify({ outbound: tn.config.outbound, jobs: tn.config.jobs, shots: { pageTimeoutMs: 240000 } }));
  const child = await spawnActor('browser-pool', {
    natsUrl: tn.server.url,
    dataDir: dir,
    replicas: 1,
    configFile,
    env: { BROWSERS: 'chromium' },
    logLevel: 'warn',
  });
  t.teardown(() => child.kill('SIGKILL'));

  const jobId = newJobId();
  const outcomes = watchOutcomes(tn.nc, jobId);
  // 156 or whatever Debian ships: ask the child's catalogue entry through a local launch
  const { launcherFor } = await import('../../actors/browser-pool/launchers/registry.ts');
  const probe = await launcherFor('chromium').launch({});
  const version = (await probe.version()).match(/\/(\d+)\./)![1]!;
  await probe.close();

  const task = shotTask(jobId, { url: fx.url('/held'), browser: 'chromium', version, viewport: { w: 500, h: 500 }, scheme: 'light' });
  await publishTask(tn.nc, task);
  // the child's browser has asked for the page: the child is mid-task, and stays so until released
  await fx.held.arrived(1);
  t.equal(fx.hits.get('/held'), 1, 'the child started the task');
  // the second instance is started (its browser launched, its consumer pulling) while the child holds the task
  const b = await startPool(t, tn, ['chromium'], 'pool-b');
  t.equal(outcomes.got.size, 0, 'the child had not finished the task when it was killed');
  t.equal(await child.kill('SIGKILL'), 'SIGKILL');
  // the child is gone with its browser's connection: only the redelivered load can get the page now
  fx.held.release();

  const got = await outcomes.waitFor(1, 120000);
  t.match(got.get(task.resultKey), { kind: 'done', file: { contentType: 'image/png' } });
  t.equal(b.stats().shots, 1, 'the surviving instance delivered it');
  t.equal(fx.hits.get('/held'), 2, 'loaded again after the redelivery');
  outcomes.stop();
});
