// Issue 27 item 2: nothing a client chooses becomes a metric label, and every answer, errors
// included, is rate limited by client address. Before: `PUT /v1/jobs/<anything>` answered 405 and
// recorded the raw URL as the route label (300 requests added 5,400 lines to /metrics), and 404/405
// answers took no token.
import t from 'tap';
import http from 'node:http';
import { randomBytes } from 'node:crypto';
import v8 from 'node:v8';
import vm from 'node:vm';
import { startTestApp } from '../helpers/app.ts';

v8.setFlagsFromString('--expose-gc');
const gc = vm.runInNewContext('gc') as () => void;
const heapAfterGc = () => {
  for (let i = 0; i < 3; i++) gc();
  return process.memoryUsage().heapUsed;
};

/** `n` requests over a few keep-alive connections; the count of each status. */
async function hammer(url: string, n: number, req: (i: number) => { method: string; path: string; headers?: Record<string, string> }) {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 16 });
  const statuses = new Map<number, number>();
  let next = 0;
  const worker = async () => {
    while (next < n) {
      const r = req(next++);
      const status = await new Promise<number>((resolve, reject) => {
        const q = http.request(url + r.path, { method: r.method, agent, headers: r.headers }, (res) => {
          res.resume();
          res.on('end', () => resolve(res.statusCode ?? 0));
        });
        q.on('error', reject);
        q.end();
      });
      statuses.set(status, (statuses.get(status) ?? 0) + 1);
    }
  };
  await Promise.all(Array.from({ length: 16 }, worker));
  agent.destroy();
  return statuses;
}

t.test('10,000 wrong-method requests on made-up paths leave /metrics and the heap flat', async (t) => {
  const app = await startTestApp(t, { config: { server: { publicRequestsPerMinute: 100 } } });
  const metricsText = async () => (await app.request('GET', '/metrics')).text;
  const wrong = () => ({ method: 'PUT', path: `/v1/jobs/${randomBytes(12).toString('hex')}` });
  // warm-up: every series these requests can make exists (405, then 429 once the address is limited)
  const warm = await hammer(app.url, 300, wrong);
  t.ok(warm.get(405), 'answered 405 at first');
  t.ok(warm.get(429), 'then the client address is limited: errors take tokens too');
  const heapBefore = heapAfterGc();
  await metricsText(); // its own series (GET /metrics 200) and the GC's exist from here on
  const beforeText = await metricsText();
  const before = beforeText.length;
  const statuses = await hammer(app.url, 10_000, wrong);
  t.equal(
    [...statuses.values()].reduce((a, b) => a + b, 0),
    10_000,
  );
  t.ok((statuses.get(429) ?? 0) >= 9_000, `nearly all refused by the address limit (${JSON.stringify([...statuses])})`);
  const heapAfter = heapAfterGc();
  const text = await metricsText();
  if (!t.ok(Math.abs(text.length - before) <= 1024, `/metrics ${before} → ${text.length} bytes (within 1 KB)`)) {
    const old = new Set(beforeText.split('\n').map((l) => l.replace(/ [\d.e+-]+$/, '')));
    t.comment(
      text
        .split('\n')
        .filter((l) => !old.has(l.replace(/ [\d.e+-]+$/, '')))
        .join('\n'),
    );
  }
  t.ok(
    heapAfter - heapBefore < 8 * 1024 * 1024,
    `heap after GC ${(heapBefore / 1e6).toFixed(1)} → ${(heapAfter / 1e6).toFixed(1)} MB (less than 8 MB more)`,
  );
  t.notMatch(text, /route="\/v1\/jobs\/[0-9a-f]{24}"/, 'no raw path is a label');
  t.match(text, /payloads_http_requests_total\{route="method_not_allowed",method="PUT",status="405"\}/);
  t.match(text, /payloads_http_requests_total\{route="method_not_allowed",method="PUT",status="429"\}/);
});

t.test('labels are route templates or fixed words; unknown methods are OTHER; 404 and 401 are limited per address', async (t) => {
  const app = await startTestApp(t, { config: { server: { publicRequestsPerMinute: 5 } } });
  const raw = (method: string, path: string, headers: Record<string, string> = {}) =>
    new Promise<number>((resolve, reject) => {
      const q = http.request(app.url + path, { method, headers }, (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
      });
      q.on('error', reject);
      q.end();
    });
  const s404: number[] = [];
  for (let i = 0; i < 7; i++) s404.push(await raw('GET', `/nothing/${i}`));
  t.same(s404.slice(0, 5), [404, 404, 404, 404, 404]);
  t.same(s404.slice(5), [429, 429], '404 answers take tokens of the client address');
  const app2 = await startTestApp(t, { config: { server: { publicRequestsPerMinute: 3 } } });
  const s401: number[] = [];
  for (let i = 0; i < 5; i++) s401.push((await app2.request('GET', '/v1/balance', { key: `pk_wrong${i}` })).status);
  t.same(s401, [401, 401, 401, 429, 429], 'failed authentication takes tokens of the client address');
  await raw('BREW', '/v1/balance').catch(() => 0); // answered or refused by the parser: never a label
  const text = (await app.request('GET', '/metrics')).text + (await app2.request('GET', '/metrics')).text;
  t.notMatch(text, /route="\/nothing/, 'the path of a 404 is not a label');
  t.match(text, /route="unmatched",method="GET",status="404"/);
  t.match(text, /route="\/v1\/balance",method="GET",status="401"/, 'a matched route is labelled by its template');
  t.notMatch(text, /method="BREW"/, 'a method outside the list is not a label');
});
