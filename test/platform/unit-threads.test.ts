// The embedded default runs the job-supervisor and the converter each on a thread of its own at a
// lower priority (server.unitThreads, server.unitThreadNice; actors/unit-threads.ts): a crawl runs
// through them end to end, their threads (and the conversion threads they start) carry the niceness,
// the main thread (the gateway, the wallet) does not, and UNIT_THREADS=none keeps every unit on the
// main thread.
import t, { type Test } from 'tap';
import { readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { join } from 'node:path';
import { tempDir } from '../helpers/nats.ts';
import { startMain, stopMain } from '../helpers/main-process.ts';
import { connectNats } from '../../shared/nats/connect.ts';
import { createKey } from '../../shared/keys.ts';
import { wallet } from '../../shared/protocol/wallet.ts';

function startThreaded(dataDir: string, env: Record<string, string>) {
  const configFile = join(dataDir, 'config.json');
  writeFileSync(configFile, JSON.stringify({ outbound: { allowCidrs: ['127.0.0.0/8'] } }));
  return startMain(dataDir, { CONFIG_FILE: configFile, ...env });
}

/** Each thread of a process: its id and its niceness (/proc/<pid>/task/<tid>/stat, field 19). */
function threadsOf(pid: number): { tid: number; nice: number }[] {
  return readdirSync(`/proc/${pid}/task`).map((tid) => {
    const fields = readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    return { tid: Number(tid), nice: Number(fields[16]) };
  });
}

/** A three-page site on 127.0.0.1. */
async function site(t: Test): Promise<string> {
  const srv = createServer((req, res) => {
    const n = Number(/^\/p(\d)$/.exec(req.url ?? '')?.[1] ?? 0);
    res.writeHead(200, { 'content-type': 'text/html' });
    const links = [1, 2].map((i) => `<a href="/p${i}">page ${i}</a>`).join(' ');
    res.end(
      `<html><head><title>Page ${n}</title></head><body><article><h1>Page ${n}</h1><p>${'Some words to read. '.repeat(20)}</p>${links}</article></body></html>`,
    );
  });
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  t.teardown(() => srv.close());
  return `http://127.0.0.1:${(srv.address() as { port: number }).port}/`;
}

t.test('the supervisor and the converter on threads of their own, niced: a crawl runs through them', async (t) => {
  const url = await site(t);
  const dataDir = tempDir('payloads-threads-');
  const main = await startThreaded(dataDir, { UNIT_THREAD_NICE: '7' });
  t.teardown(() => {
    main.child.kill('SIGKILL');
  });
  const nc = await connectNats(readFileSync(join(dataDir, 'nats.url'), 'utf8').trim(), 'unit-threads-test');
  t.teardown(() => nc.close());
  const k = await createKey(nc, 'admin');
  await wallet.grant(nc, k.walletId, 10_000_000, 'test');
  const headers = { authorization: `Bearer ${k.key}`, 'content-type': 'application/json' };
  const res = await fetch(`${main.api}/v1/websitepro/jobs`, {
    method: 'POST',
    headers,
    body: JSON.stringify({ url, outputs: ['markdown'], crawl: { limit: 5, sitemap: 'skip' } }),
  });
  t.equal(res.status, 201, 'created');
  let job = ((await res.json()) as { job: { id: string; status: string; results: { status: string; page: string }[] } }).job;
  for (let i = 0; i < 300 && job.status !== 'completed' && job.status !== 'failed'; i++) {
    await new Promise((r) => setTimeout(r, 100));
    job = ((await (await fetch(`${main.api}/v1/jobs/${job.id}`, { headers })).json()) as { job: typeof job }).job;
  }
  t.equal(job.status, 'completed', 'the crawl completed');
  t.same(
    job.results.map((r) => [r.status, r.page]).sort(),
    [
      ['done', url],
      ['done', `${url}p1`],
      ['done', `${url}p2`],
    ],
    'every page converted',
  );

  const threads = threadsOf(main.child.pid!);
  const niced = threads.filter((x) => x.nice === 7);
  // the supervisor's and the converter's JavaScript threads, and the conversion threads the converter started
  t.ok(niced.length >= 3, `threads at niceness 7: ${niced.length} of ${threads.length}`);
  t.equal(threads.find((x) => x.tid === main.child.pid)?.nice, 0, 'the main thread (the gateway, the wallet) is not niced');
  t.equal(await stopMain(main.child), 0, 'SIGINT stops the threads and exits 0');
});

t.test('UNIT_THREADS=none: every unit on the main thread, nothing niced', async (t) => {
  const dataDir = tempDir('payloads-nothreads-');
  const main = await startThreaded(dataDir, { UNIT_THREADS: 'none', UNIT_THREAD_NICE: '7' });
  t.teardown(() => {
    main.child.kill('SIGKILL');
  });
  t.equal((await fetch(`${main.api}/readyz`)).status, 200, 'ready');
  t.same(
    threadsOf(main.child.pid!).filter((x) => x.nice !== 0),
    [],
    'no thread niced',
  );
  t.equal(await stopMain(main.child), 0);
});
