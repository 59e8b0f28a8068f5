// Issue 43: a caller's `js`, `css` and `actions` run only inside the page, in the browser's own
// network namespace behind the guard. A shot whose injected script, style sheet and actions try to
// reach addresses the guard refuses (127.0.0.2, 127.0.0.3) is delivered, the script is seen to run
// (it reports to the page's own origin), and nothing reaches either listener. Chromium and Firefox.
import t from 'tap';
import { checkSinksWork, startEgressEnv } from './browser-egress.ts';
import { Kvm } from '@nats-io/kv';
import { mergeOffers } from '../../shared/services/shots.ts';
import { readCatalogue } from '../../shared/catalogue.ts';
import { BUCKETS } from '../../shared/names.ts';
import { newJobId, publishTask, shotTask, startPool, watchOutcomes } from '../shots/pool.ts';

t.test('injected js, css and actions cannot reach an address the guard refuses', async (t) => {
  const env = await startEgressEnv(t, { browserNetns: 'auto' });
  await checkSinksWork(t, env);
  const a = `${env.a.host}:${env.a.port}`;
  const b = `${env.b.host}:${env.b.port}`;
  const js = `
    const tried = [];
    const go = (name, fn) => { try { const r = fn(); tried.push(name); if (r && r.catch) r.catch(() => {}); } catch (e) { tried.push(name + ':' + e.name); } };
    go('fetch', () => fetch('http://${a}/js-fetch', { mode: 'no-cors' }));
    go('fetch-b', () => fetch('http://${b}/js-fetch'));
    go('xhr', () => { const x = new XMLHttpRequest(); x.open('POST', 'http://${b}/js-xhr'); x.send('secret'); });
    go('ws', () => { window.jsws = new WebSocket('ws://${a}/js-ws'); });
    go('img', () => { new Image().src = 'http://${b}/js-img.png'; });
    go('beacon', () => navigator.sendBeacon('http://${a}/js-beacon', 'x'));
    go('form', () => { const f = document.createElement('form'); f.method = 'POST'; f.action = 'http://${b}/js-form'; f.target = 'sink'; const i = document.createElement('iframe'); i.name = 'sink'; document.body.append(i, f); f.submit(); });
    await new Promise((r) => setTimeout(r, 1500));
    await fetch('/ran?injected:' + tried.join(','));`;
  const options = {
    js,
    css: `body { background-image: url(http://${a}/css-bg.png) } p::after { content: url(http://${b}/css-after.png) }`,
    actions: [
      { type: 'scroll', to: 'bottom' },
      { type: 'wait', ms: 300 },
    ],
  };
  await startPool(t, env.tn, ['chromium', 'firefox'], 'injected', { pageTimeoutMs: 30000 });
  const jobId = newJobId();
  const outcomes = watchOutcomes(env.tn.nc, jobId);
  const tasks = [
    { browser: 'chromium', version: '' },
    { browser: 'firefox', version: '' },
  ];
  const offers = mergeOffers(await readCatalogue(await new Kvm(env.tn.nc).open(BUCKETS.catalogue), 'shots'));
  for (const x of tasks) x.version = offers.find((o) => o.id === x.browser)!.versions[0]!;
  const published = tasks.map((x) =>
    shotTask(jobId, {
      url: env.page,
      browser: x.browser,
      version: x.version,
      viewport: { w: 800, h: 600 },
      scheme: 'light',
      options: options as never,
    }),
  );
  for (const task of published) await publishTask(env.tn.nc, task);
  const got = await outcomes.waitFor(published.length, 120000);
  outcomes.stop();
  for (const task of published)
    t.equal(got.get(task.resultKey)?.kind, 'done', `${task.resultKey}: ${JSON.stringify(got.get(task.resultKey))}`);
  const injected = env.ran.filter((r) => r.startsWith('injected:'));
  t.equal(injected.length, 2, `the script ran in both browsers: ${injected.join(' | ')}`);
  await new Promise((r) => setTimeout(r, 1000));
  t.same(env.leaks(), [], 'nothing reached a refused address');
});
