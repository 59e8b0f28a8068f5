// The gateway's route matching: the compiled router (gateway/pipeline/router.ts) against the regex
// scan it replaced (kept here as the baseline), on the real route table and a mix of real paths,
// measured in the same run and printed as a ratio. `node --import tsx bench/router.ts`
// (BENCH_QUICK=1: shorter). Not part of `npm run bench`'s table yet.
import { performance } from 'node:perf_hooks';
import { allRoutes } from '../gateway/routes/index.ts';
import { createMetrics } from '../gateway/metrics.ts';
import { compileRouter } from '../gateway/pipeline/router.ts';

const routes = allRoutes({ metrics: createMetrics(), isReady: () => true });
const router = compileRouter(routes.map((r) => ({ method: r.method, path: r.path, target: r })));
const scan = routes.map((route) => {
  const names: string[] = [];
  const re = route.path.replace(/[.+?^${}()|[\]\\]/g, '\\$&').replace(/:(\w+)/g, (_, n: string) => {
    names.push(n);
    return '([^/]+)';
  });
  return { route, pattern: new RegExp(`^${re}/?$`), names };
});
function regexScan(method: string, url: string) {
  const lookup = method === 'HEAD' ? 'GET' : method;
  const allowed = new Set<string>();
  let match: unknown;
  let params: Record<string, string> = {};
  for (const c of scan) {
    const m = c.pattern.exec(url);
    if (!m) continue;
    allowed.add(c.route.method);
    if (c.route.method !== lookup || match) continue;
    match = c;
    params = Object.fromEntries(c.names.map((n, i) => [n, decodeURIComponent(m[i + 1]!)]));
  }
  return match ? params : allowed;
}
function compiled(method: string, url: string) {
  return router.find(method, url) ?? router.allowed(url);
}

// the benchmarked paths of bench/gateway.ts plus parameterised and unknown ones
const mix: [string, string][] = [
  ['GET', '/v1/balance'],
  ['GET', '/v1/pricing'],
  ['POST', '/v1/websitepro/quote'],
  ['POST', '/v1/shots/jobs'],
  ['GET', '/v1/jobs/job_0123456789abcdef'],
  ['GET', '/v1/jobs/job_0123/results/chromium-156_1920x1080_light.png'],
  ['GET', '/v1/services/shots'],
  ['GET', '/v1/topups/t_123'],
  ['GET', '/v1/nothing'],
  ['DELETE', '/v1/balance'],
];
const n = process.env.BENCH_QUICK ? 200_000 : 2_000_000;
function time(f: (m: string, u: string) => unknown): number {
  let sink = 0;
  const t0 = performance.now();
  for (let i = 0; i < n; i++) {
    const [m, u] = mix[i % mix.length]!;
    if (f(m, u)) sink++;
  }
  const ms = performance.now() - t0;
  if (sink !== n) throw new Error('a lookup returned nothing');
  return (n / ms) * 1000;
}
const rounds: { regex: number; compiled: number }[] = [];
for (let r = 0; r < 5; r++) rounds.push({ regex: time(regexScan), compiled: time(compiled) }); // alternated: drift spreads over both
const ratios = rounds
  .slice(1)
  .map((x) => x.compiled / x.regex)
  .sort((a, b) => a - b);
console.log(
  `route matching, ${routes.length} routes, ${mix.length} paths: compiled router / regex scan = ${ratios[Math.floor(ratios.length / 2)]!.toFixed(2)}x lookups per second (rounds ${ratios.map((x) => x.toFixed(2)).join(', ')})`,
);
