// A found link through normalize → scope → robots → frontier, on a real nats-server and a real site on
// 127.0.0.1: each refusal has its reason in the bounded report, disallowed URLs take no slot, and no
// URL of another origin or a disallowed path is ever fetched (the servers' own logs).
import t from 'tap';
import { admitLink, type LinkGate } from '../../shared/crawl/admission.ts';
import { Frontier } from '../../shared/crawl/frontier.ts';
import { CrawlReport } from '../../shared/crawl/report.ts';
import { RobotsCache } from '../../shared/crawl/robots.ts';
import { compileScope } from '../../shared/crawl/scope.ts';
import { fixtureServer } from '../outbound/fixture-server.ts';
import { startTestNats } from '../helpers/nats.ts';

const guard = { allowCidrs: ['127.0.0.1/32'], maxRedirects: 5, connectTimeoutMs: 2000 };

t.test('links admitted or skipped with a reason', async (t) => {
  const nats = await startTestNats(t);
  const site = await fixtureServer(t, {
    '/robots.txt': (_q, r) => r.writeHead(200, { 'content-type': 'text/plain' }).end('User-agent: *\nDisallow: /private/\n'),
  });
  const other = await fixtureServer(t, {}, '127.0.0.2');
  const gate: LinkGate = {
    jobId: 'job_gate',
    limit: 4,
    scope: compileScope({ start: site.url('/'), excludePaths: ['/tags/**'], maxDepth: 2 }),
    robots: new RobotsCache({ guard }),
    frontier: await Frontier.open(nats.nc),
    report: new CrawlReport(2),
  };
  const go = (path: string, depth = 1) =>
    admitLink(gate, { url: path.startsWith('http') ? path : site.url(path), depth, from: site.url('/') });

  t.match(await go('/', 0), { ok: true, n: 1 });
  t.same(await go('/#top'), { ok: false, reason: 'duplicate' });
  t.same(await go('/private/a'), { ok: false, reason: 'robots' });
  t.same(await go('/private/b'), { ok: false, reason: 'robots' });
  t.same(await go('/private/c'), { ok: false, reason: 'robots' });
  t.same(await go(`${other.base}/x`), { ok: false, reason: 'other_origin' });
  t.same(await go('/tags/x'), { ok: false, reason: 'excluded' });
  t.same(await go('/deep', 3), { ok: false, reason: 'depth' });
  t.same(await go('javascript:void(0)'), { ok: false, reason: 'bad_url' });
  t.match(await go('/a?utm_source=news'), { ok: true, n: 2 });
  t.same(await go('/a'), { ok: false, reason: 'duplicate' });
  t.match(await go('/b'), { ok: true, n: 3 });
  t.match(await go('/c'), { ok: true, n: 4 });
  t.same(await go('/d'), { ok: false, reason: 'limit' }, 'disallowed URLs took no slot: the limit is reached by pages only');

  const report = gate.report.toJSON();
  t.same(report.skipped.robots, { count: 3, sample: [site.url('/private/a'), site.url('/private/b')] }, 'sample bounded');
  t.equal(report.skipped.other_origin?.count, 1);
  t.equal(report.skipped.excluded?.count, 1);
  t.equal(report.skipped.depth?.count, 1);
  t.equal(report.skipped.duplicate?.count, 2);
  t.equal(report.skipped.limit?.count, 1);
  t.equal(report.skipped.bad_url?.count, 1);
  t.same(CrawlReport.from(report, 2).toJSON(), report, 'resumes from its JSON');

  t.same(site.hits, ['/robots.txt'], 'the site was asked for robots.txt once, nothing else');
  t.same(other.hits, [], 'the other origin was never contacted');
});

t.test('robots.txt down: the link is held, not counted', async (t) => {
  const nats = await startTestNats(t);
  const site = await fixtureServer(t, { '/robots.txt': (_q, r) => r.writeHead(500).end() });
  const gate: LinkGate = {
    jobId: 'job_held',
    limit: 10,
    scope: compileScope({ start: site.url('/') }),
    robots: new RobotsCache({ guard, robotsUnavailableRetryMs: 30000 }),
    frontier: await Frontier.open(nats.nc),
    report: new CrawlReport(),
  };
  const v = await admitLink(gate, { url: site.url('/'), depth: 0 });
  t.match(v, { ok: false, reason: 'robots_unavailable' });
  t.ok(!v.ok && v.reason === 'robots_unavailable' && (v.retryAt ?? 0) > Date.now(), 'with a time to try again');
  t.same(gate.report.toJSON(), { skipped: {} });
  t.same(await gate.frontier.counts('job_held'), { admitted: 0, taken: 0 });
});
