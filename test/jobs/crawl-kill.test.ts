// A converter process killed with SIGKILL in the middle of a crawl (issue 42): the page tasks it held
// go back to the task queue (ack wait), a second converter process takes them, and every page is
// delivered once and charged once (admin audit clean). Real gateway, supervisor and wallet in this
// process; real converter processes (`node main.ts converter`), NATS and a local HTTP site.
import t from 'tap';
import { spawn, type ChildProcess } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { startTestApp, type TestApp } from '../helpers/app.ts';
import { tempDir } from '../helpers/nats.ts';
import { ROOT } from '../../shared/config/index.ts';
import { wallet } from '../../shared/protocol/wallet.ts';
import { audit } from '../../shared/audit.ts';
import { fixtureServer, type Route } from '../outbound/fixture-server.ts';

const PAGES = 12;
const page =
  (n: number): Route =>
  (_q, r) =>
    setTimeout(() => {
      const links = [n + 1, n + 2].filter((x) => x < PAGES).map((x) => `<a href="/p/${x}">page ${x}</a>`);
      r.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(
        `<html><head><title>Page ${n}</title></head><body><main><h1>Page ${n}</h1><p>Text of page ${n}.</p>${links.join(' ')}</main></body></html>`,
      );
    }, 400);

async function poll(app: TestApp, key: string, id: string, until: (job: any) => boolean, seconds: number) {
  let job = (await app.request('GET', `/v1/jobs/${id}`, { key })).json.job;
  for (let i = 0; i < seconds * 5 && !until(job); i++) {
    await new Promise((r) => setTimeout(r, 200));
    job = (await app.request('GET', `/v1/jobs/${id}`, { key })).json.job;
  }
  return job;
}
const isDone = (job: any) => job.status === 'completed' || job.status === 'failed';

t.test('a converter killed with SIGKILL mid-crawl: every page delivered once, charged once', async (t) => {
  const overrides = {
    outbound: { allowCidrs: ['127.0.0.1/32'] },
    websitepro: { fetchTimeoutMs: 5000 },
    crawl: { concurrency: 2 },
    jobs: { ackWaitSeconds: 3 },
  };
  const app = await startTestApp(t, { actors: ['wallet', 'job-supervisor'], config: overrides });
  const dataDir = tempDir('payloads-crawl-kill-');
  const configFile = join(dataDir, 'config.json');
  writeFileSync(configFile, JSON.stringify({ ...overrides, dataDir }));
  const natsUrl = String(app.config.nats.url);
  const procs: ChildProcess[] = [];
  t.teardown(() => {
    for (const c of procs) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
  });
  const converter = async () => {
    const child = spawn(process.execPath, ['main.ts', 'converter'], {
      cwd: ROOT,
      env: { ...process.env, NATS_URL: natsUrl, DATA_DIR: dataDir, CONFIG_FILE: configFile, LOG_LEVEL: 'error' },
      stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
    });
    procs.push(child);
    await new Promise<void>((resolve, reject) => {
      child.once('message', () => resolve());
      child.once('exit', (code, sig) => reject(new Error(`the converter exited while starting (${code ?? sig})`)));
    });
    return child;
  };

  const routes: Record<string, Route> = { '/': page(0) };
  for (let i = 1; i < PAGES; i++) routes[`/p/${i}`] = page(i);
  const site = await fixtureServer(t, routes);
  const first = await converter();
  const k = await app.newKey();
  await wallet.grant(app.nc, k.walletId, 100_000, 'test');
  const r = await app.request('POST', '/v1/websitepro/jobs', {
    key: k.key,
    body: { url: site.url('/'), outputs: ['text'], crawl: { limit: 30 } },
  });
  t.equal(r.status, 201, r.text);
  const id = r.json.job.id;
  const unit = r.json.job.cost / 30;

  // the document grows by a recorded page's links in the step after its record (and two pages'
  // outcomes are recorded at once), so it passes through moments where every page it holds is
  // recorded: wait for one with pages in flight, not for the first with 3 recorded
  const mid = await poll(app, k.key, id, (j) => ((j.pages?.recorded ?? 0) >= 3 && j.pages.total > j.pages.recorded) || isDone(j), 60);
  t.ok(mid.pages.recorded >= 3 && !isDone(mid), `killed in the middle (${mid.pages.recorded} recorded)`);
  t.ok(mid.pages.total > mid.pages.recorded, `pages in flight when it was killed (${mid.pages.total - mid.pages.recorded})`);
  const hitsAtKill = site.hits.length;
  first.kill('SIGKILL');
  await new Promise((res) => first.once('exit', res));
  await converter();

  const job = await poll(app, k.key, id, isDone, 120);
  t.equal(job.status, 'completed');
  t.ok(site.hits.length > hitsAtKill, 'the second converter fetched the rest');
  const pages = (job.results as { page: string; status: string }[]).map((x) => [new URL(x.page).pathname, x.status]);
  const want = ['/', ...Array.from({ length: PAGES - 1 }, (_, i) => `/p/${i + 1}`)];
  t.same(pages.map(([p]) => p).sort(), [...want].sort(), 'every page is one result, none twice');
  t.ok(
    pages.every(([, s]) => s === 'done'),
    'every page delivered',
  );
  t.equal(job.charged, PAGES * unit, 'charged once per page');
  t.equal(job.refunded, (30 - PAGES) * unit, 'the unused slots back');
  t.equal((await wallet.balance(app.nc, k.walletId)).balance, 100_000 - job.charged, 'the wallet says the same');
  t.same((await audit(app.nc)).violations, [], 'the money adds up (admin audit)');
});
