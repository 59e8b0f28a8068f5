// shots benchmark: screenshots per minute per browser through the whole browser-pool actor
// (JetStream task → pool → fresh context → PNG + WebP thumbnail → object store → outcome), at
// concurrency 1 and at the configured concurrency, each against a plain puppeteer-core loop taking
// the same shots (same page, same viewport, PNG, the same settle rule) with a warm browser and no
// pool around it, and as a reference against the same loop capturing at the load event;
// memory per concurrent page; resident memory after many shots against after a few (leaks).
// Env (counts, so a quick run is possible):
//   SHOTS_BENCH_BROWSERS  launcher ids, default `chromium,firefox`
//   SHOTS_BENCH_SHOTS     shots per round (default 20; quick 6)
//   SHOTS_BENCH_ROUNDS    rounds per figure (default 3; quick 1)
//   SHOTS_BENCH_PAGES     pages open at once for the memory figure (default 4)
//   SHOTS_BENCH_LEAK      `<few>,<many>` shots for the leak figure (default 50,500; quick 10,60)
import { readFileSync, readdirSync } from 'node:fs';
import type { Browser, Page } from 'puppeteer-core';
import { startTestNats } from '../test/helpers/nats.ts';
import { startFixtures } from '../test/shots/fixtures.ts';
import { startPool, shotTask, publishTask, watchOutcomes, newJobId } from '../test/shots/pool.ts';
import { launcherFor } from '../actors/browser-pool/launchers/registry.ts';
import { SETTLE } from '../actors/browser-pool/settle.ts';
import { startBrowserProxy } from '../actors/browser-pool/proxy.ts';
import { testLog } from '../test/helpers/nats.ts';
import { figure, median, quick, type BenchFigure } from './figure.ts';

const envInt = (name: string, def: number) => {
  const v = Number(process.env[name]);
  return Number.isFinite(v) && v > 0 ? Math.floor(v) : def;
};
const log = (s: string) => process.stderr.write(`bench shots: ${s}\n`);

/**
 * Memory (MB) of a process and all its descendants, from /proc: resident (VmRSS, every process
 * counts the shared library pages it maps, so a tree of many renderers counts Chromium's binary
 * many times) or proportional (Pss: shared pages divided among the processes sharing them; the sum
 * is what the tree really takes from the machine).
 */
export function treeRssMb(root: number, exclude: number[] = [], kind: 'rss' | 'pss' = 'rss'): number {
  const children = new Map<number, number[]>();
  const rss = new Map<number, number>();
  for (const d of readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const stat = readFileSync(`/proc/${d}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      const m =
        kind === 'rss'
          ? /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${d}/status`, 'utf8'))
          : /Pss:\s+(\d+) kB/.exec(readFileSync(`/proc/${d}/smaps_rollup`, 'utf8'));
      const pid = Number(d);
      rss.set(pid, m ? Number(m[1]) : 0);
      children.set(ppid, [...(children.get(ppid) ?? []), pid]);
    } catch {
      /* exited meanwhile */
    }
  }
  let kb = 0;
  const stack = [root];
  while (stack.length) {
    const p = stack.pop()!;
    if (exclude.includes(p)) continue;
    kb += rss.get(p) ?? 0;
    stack.push(...(children.get(p) ?? []));
  }
  return Math.round(kb / 102.4) / 10;
}

const round1 = (x: number) => Math.round(x * 10) / 10;

/**
 * Memory of a tree once it has settled: a closed context's renderer exits a moment after the
 * close, so a reading right after a burst of shots counts pages already gone. Read every second
 * until two readings are within 2 % (at most 20 s).
 */
async function settledTreeMb(root: number, exclude: number[]): Promise<number> {
  let prev = treeRssMb(root, exclude);
  for (let i = 0; i < 20; i++) {
    await new Promise((r) => setTimeout(r, 1000));
    const now = treeRssMb(root, exclude);
    if (Math.abs(now - prev) <= 0.02 * prev) return now;
    prev = now;
  }
  return prev;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * How a plain loop decides a page is ready to capture:
 * - `none`: at the load event (puppeteer's `goto` until `load`), the reference row only: on the
 *   real web that captures pages still fetching and drawing, so it does less work than the actor;
 * - `rule`: the actor's settle rule (SETTLE, imported so the two cannot drift) with puppeteer's
 *   public API: the load event (capped), web fonts (capped), then no request in flight for
 *   `quietMs`, counted from the network's last activity as the actor counts it, capped at
 *   `quietCapMs`. The baseline of the shots/min goal rows.
 */
type Settle = 'none' | 'rule';

/** Navigate `page` to `url` and settle it as `settle` says (above). */
async function openLikeAPlainLoop(page: Page, url: string, settle: Settle): Promise<void> {
  if (settle === 'none') {
    await page.goto(url, { waitUntil: 'load' });
    return;
  }
  let inflight = 0;
  let lastActivity = Date.now();
  page.on('request', () => {
    inflight++;
    lastActivity = Date.now();
  });
  const ended = () => {
    inflight--;
    lastActivity = Date.now();
  };
  page.on('requestfinished', ended);
  page.on('requestfailed', ended);
  // the cap counts from the navigation here, from DOMContentLoaded in the actor: the bench page
  // loads in well under either, so the cap is never what ends the wait
  await page.goto(url, { waitUntil: 'load', timeout: SETTLE.loadCapMs }).catch((e: Error) => {
    if (!/timeout/i.test(e.message)) throw e;
  });
  await page.evaluate(
    `document.fonts.status === 'loaded' || Promise.race([document.fonts.ready, new Promise((r) => setTimeout(r, ${SETTLE.fontsCapMs}))])`,
  );
  const until = Date.now() + SETTLE.quietCapMs;
  for (;;) {
    const idleFor = inflight > 0 ? 0 : Date.now() - lastActivity;
    if (idleFor >= SETTLE.quietMs || Date.now() >= until) return;
    await sleep(Math.max(10, Math.min(until - Date.now(), inflight > 0 ? 50 : SETTLE.quietMs - idleFor)));
  }
}

/**
 * A plain puppeteer-core loop: a warm browser, a page per shot (in the default context; in a
 * context per lane above concurrency 1 in Chromium), the viewport, navigate and settle (`settle`), a
 * PNG, close. With `ownContext` each shot gets its own context (the pool's
 * isolation) made on demand, for the context's row.
 */
export async function plainLoop(
  browser: Browser,
  url: string,
  n: number,
  concurrency: number,
  vp: { w: number; h: number },
  settle: Settle = 'none',
  ownContext = false,
  steps?: Map<string, number>,
): Promise<number> {
  let next = 0;
  // each lane (page at once) has a context of its own, made before the clock starts and kept for
  // all its shots. In the default context two pages of one site share a renderer, and that wedged
  // Chromium's screenshots for minutes (three times at c=2 in this bench, even with captures one
  // at a time; puppeteer issue #12712). A lane's page is then alone in its renderer, as a page of
  // the loop at concurrency 1 is, and as each page of the actor is. Chromium only: Firefox never
  // wedged, and over BiDi a new tab in a user context whose last tab just closed can fail
  // (DiscardedBrowsingContextError).
  const cdp = (browser as unknown as { protocol?: string }).protocol === 'cdp';
  const lanes =
    concurrency > 1 && cdp ? await Promise.all(Array.from({ length: concurrency }, () => browser.createBrowserContext())) : [undefined];
  const t0 = performance.now();
  await Promise.all(
    lanes.map(async (lane) => {
      while (next < n) {
        next++;
        const marks: [string, number][] = [['start', performance.now()]];
        const mark = (s: string) => marks.push([s, performance.now()]);
        const ctx = ownContext ? await browser.createBrowserContext() : undefined;
        const page = await (ctx ?? lane ?? browser).newPage();
        mark('page');
        await page.setViewport({ width: vp.w, height: vp.h });
        mark('viewport');
        await openLikeAPlainLoop(page, url, settle);
        mark('settled');
        await page.screenshot({ type: 'png' });
        mark('png');
        await page.close();
        await ctx?.close();
        mark('closed');
        for (let i = 1; i < marks.length; i++)
          steps?.set(marks[i]![0], (steps.get(marks[i]![0]) ?? 0) + (marks[i]![1] - marks[i - 1]![1]) / n);
        if (marks.at(-1)![1] - marks[0]![1] > 5000)
          log(`slow plain shot (${settle}, c=${concurrency}): ${marks.map(([k, t]) => `${k} ${Math.round(t - marks[0]![1])}`).join(', ')}`);
      }
    }),
  );
  const perMinute = round1(n / ((performance.now() - t0) / 60000));
  await Promise.all(lanes.map((l) => l?.close()));
  return perMinute;
}

export async function run(): Promise<BenchFigure[]> {
  const ids = (process.env.SHOTS_BENCH_BROWSERS ?? 'chromium,firefox')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  const n = envInt('SHOTS_BENCH_SHOTS', quick() ? 6 : 20);
  const rounds = envInt('SHOTS_BENCH_ROUNDS', quick() ? 1 : 3);
  const openPages = envInt('SHOTS_BENCH_PAGES', 4);
  const [few, many] = (process.env.SHOTS_BENCH_LEAK ?? (quick() ? '10,60' : '50,500')).split(',').map(Number) as [number, number];
  const vp = { w: 1280, h: 720 };
  const teardowns: (() => unknown)[] = [];
  const t = { teardown: (fn: () => unknown) => void teardowns.push(fn) };
  const out: BenchFigure[] = [];
  try {
    const fx = await startFixtures(t);
    const url = fx.url('/tall');
    const tn = await startTestNats(t);
    const natsPid = tn.server.pid;

    for (const id of ids) {
      const launcher = launcherFor(id);
      // the baseline: a warm browser, a page per shot, nothing else; and the same loop through
      // the guard proxy, for the proxy's own cost (it is part of the product and stays on)
      const plain = await launcher.launch({});
      const proxy = await startBrowserProxy(tn.config, testLog());
      const proxied = await launcher.launch({ proxy: proxy.address });
      try {
        await plainLoop(plain, url, 2, 1, vp); // warm
        await plainLoop(proxied, url, 2, 1, vp);
        const configured = tn.config.shots.concurrency;
        const base1: number[] = [];
        const viaProxy: number[] = [];
        const ownContext: number[] = [];
        const settled: number[] = [];
        for (let r = 0; r < rounds; r++) {
          base1.push(await plainLoop(plain, url, n, 1, vp));
          viaProxy.push(await plainLoop(proxied, url, n, 1, vp));
          ownContext.push(await plainLoop(plain, url, n, 1, vp, 'none', true));
          settled.push(await plainLoop(plain, url, n, 1, vp, 'rule'));
        }
        await proxied.close().catch(() => {});
        await proxy.stop();
        out.push(
          figure({
            name: `shots ${id} plain loop through the guard proxy, per minute`,
            unit: 'shots/min',
            samples: viaProxy,
            baselineSamples: base1,
            note: 'the plain loop with every request through the outbound guard proxy (resolve, check, dial); baseline: the plain loop without it',
          }),
        );
        out.push(
          figure({
            name: `shots ${id} plain loop with a new context per shot, per minute`,
            unit: 'shots/min',
            samples: ownContext,
            baselineSamples: base1,
            note: 'the plain loop creating and closing an isolated context per shot on demand; baseline: the plain loop (default context)',
          }),
        );
        out.push(
          figure({
            name: `shots ${id} plain loop settling by the actor's rule, per minute`,
            unit: 'shots/min',
            samples: settled,
            baselineSamples: base1,
            note: `the plain loop settling as the actor does (load capped ${SETTLE.loadCapMs} ms, fonts capped ${SETTLE.fontsCapMs} ms, ${SETTLE.quietMs} ms with no request in flight counted from the last activity, capped ${SETTLE.quietCapMs} ms); baseline: the plain loop, no settle (load event only)`,
          }),
        );

        // memory per concurrent page: browser tree RSS with k pages open minus idle, per page
        const idle = treeRssMb(plain.process()!.pid!);
        const idlePss = treeRssMb(plain.process()!.pid!, [], 'pss');
        // open `openPages` pages of the fixture at once (each from `open`), measure, close them
        const perPage = async (open: () => Promise<{ page: Page; close(): Promise<void> }>) => {
          const opened = await Promise.all(
            Array.from({ length: openPages }, async () => {
              const o = await open();
              await o.page.setViewport({ width: vp.w, height: vp.h });
              await o.page.goto(url, { waitUntil: 'load' });
              return o;
            }),
          );
          const mb = round1((treeRssMb(plain.process()!.pid!) - idle) / openPages);
          const pss = round1((treeRssMb(plain.process()!.pid!, [], 'pss') - idlePss) / openPages);
          await Promise.all(opened.map((o) => o.close()));
          await settledTreeMb(plain.process()!.pid!, []);
          return { mb, pss };
        };
        const plainPerPage = await perPage(async () => {
          const page = await plain.newPage();
          return { page, close: () => page.close() };
        });
        const isolatedPerPage = await perPage(async () => {
          const c = await plain.createBrowserContext();
          return { page: await c.newPage(), close: () => c.close() };
        });
        out.push(
          figure({
            name: `shots ${id} memory per concurrent page (own context)`,
            unit: 'MB',
            samples: [isolatedPerPage.mb],
            baselineSamples: [plainPerPage.mb],
            note: `${openPages} pages of the fixture open at once, browser process tree RSS over idle; baseline: pages in the default context`,
          }),
        );
        out.push(
          figure({
            name: `shots ${id} memory per concurrent page (own context), proportional`,
            unit: 'MB',
            samples: [isolatedPerPage.pss],
            baselineSamples: [plainPerPage.pss],
            note: `the same pages, browser process tree PSS over idle (shared pages counted once); baseline: pages in the default context`,
          }),
        );

        // the pool at concurrency 1 and at the configured concurrency
        for (const c of [1, configured]) {
          const pool = await startPool(t, tn, [id], `bench-${id}-${c}`, { concurrency: c });
          const version = pool.stats().browsers[0]!.versions[0]!;
          const browserId = pool.stats().browsers[0]!.id;
          const samples: number[] = [];
          // the baseline of this row is measured right before each round of the actor: on a shared
          // machine the load changes within minutes, and rounds measured far apart compare loads
          // the goal row's baseline settles by the actor's rule; the loop without a settle is kept
          // as a reference row, so what the change of baseline (session 14) hides is in sight
          const paired: number[] = [];
          const pairedNoSettle: number[] = [];
          const plainSteps = new Map<string, number>();
          let wallMs = 0;
          for (let r = -1; r < rounds; r++) {
            if (r >= 0) {
              pairedNoSettle.push(await plainLoop(plain, url, n, c, vp, 'none'));
              paired.push(await plainLoop(plain, url, n, c, vp, 'rule', false, plainSteps));
            }
            if (r === 0) pool.phases.reset();
            const jobId = newJobId();
            const o = watchOutcomes(tn.nc, jobId);
            const count = r < 0 ? 2 : n; // round -1 warms the consumer and the browser
            const t0 = performance.now();
            for (let i = 0; i < count; i++)
              await publishTask(
                tn.nc,
                shotTask(jobId, { url, browser: browserId, version, viewport: { w: vp.w, h: vp.h + i }, scheme: 'light' }),
              );
            const got = await o.waitFor(count, 600000);
            o.stop();
            const failed = [...got.values()].filter((x) => x.kind !== 'done').length;
            if (failed) throw new Error(`${failed} shots failed`);
            if (r >= 0) {
              samples.push(round1(count / ((performance.now() - t0) / 60000)));
              wallMs += performance.now() - t0;
            }
          }
          const phases = pool.phases.perShot();
          await pool.stop();
          if (c === 1) {
            // where one shot's time goes, each step against the plain loop's whole shot
            const plainMs = round1(60000 / median(paired)); // one shot of the settled plain loop
            const perShot = round1(wallMs / (n * rounds));
            let inSteps = 0;
            for (const [phase, ms] of Object.entries(phases)) {
              inSteps += ms;
              out.push(
                figure({
                  name: `shots ${id} c=1 step: ${phase}`,
                  unit: 'ms/shot',
                  samples: [ms],
                  baselineSamples: [plainMs],
                  note: 'mean ms per shot in this step inside the actor; baseline: one whole shot of the plain loop settling by the same rule',
                }),
              );
            }
            out.push(
              figure({
                name: `shots ${id} c=1 step: the rest (task pull, outcome, ack, hand-offs)`,
                unit: 'ms/shot',
                samples: [round1(Math.max(0, perShot - inSteps))],
                baselineSamples: [plainMs],
                note: 'wall time per shot minus the steps above (thumbnail and upload overlap the next shot, so this can read low)',
              }),
            );
            log(`${id} c=1 steps (ms/shot, plain shot ${plainMs}, actor shot ${perShot}): ${JSON.stringify(phases)}`);
            log(
              `${id} c=1 settled plain loop's steps (ms/shot, ending at): ${JSON.stringify(Object.fromEntries([...plainSteps].map(([k, v]) => [k, round1(v / rounds)])))}`,
            );
          }
          if (c !== 1) {
            log(
              `${id} c=${c} steps (ms per shot, summed over pages at work at once; wall ms per shot ${round1(wallMs / (n * rounds))}): ${JSON.stringify(phases)}`,
            );
            log(
              `${id} c=${c} settled plain loop's steps (ms per shot, summed over pages at once): ${JSON.stringify(Object.fromEntries([...plainSteps].map(([k, v]) => [k, round1(v / rounds)])))}`,
            );
          }
          out.push(
            figure({
              name: `shots ${id} per minute, concurrency ${c}`,
              unit: 'shots/min',
              samples,
              baselineSamples: paired,
              note: `${n} shots of a 4100 px page at 1280x720 per round through the actor (guard proxy, fresh context, settle rule, blank check, WebP thumbnail, object store); baseline: plain puppeteer-core loop settling by the same rule (load, fonts, ${SETTLE.quietMs} ms quiet network), PNG, warm browser, ${c} page(s) at once, measured right before each round`,
            }),
          );
          out.push(
            figure({
              name: `shots ${id} per minute, concurrency ${c}, reference: plain loop, no settle`,
              unit: 'shots/min',
              samples,
              baselineSamples: pairedNoSettle,
              note: `the same actor rounds; baseline: the plain loop capturing at the load event (no settle), ${c} page(s) at once, measured right before each round; not a goal row (until session 13 it was): that loop does less work than the actor`,
            }),
          );
          log(
            `${id} c=${c}: ${samples.join(', ')} shots/min vs settled plain ${paired.join(', ')} (no settle ${pairedNoSettle.join(', ')})`,
          );
        }
      } finally {
        await plain.close().catch(() => {});
      }

      // leaks: resident memory of this process and its browsers after few and many shots
      // the browser is not restarted during this figure (restartAfter above `many`): with the
      // configured restart every 100 pages, a reading at a multiple of 100 found no browser at all
      // (it starts on the next task), and one between restarts only a browser's first pages
      const pool = await startPool(t, tn, [id], `bench-${id}-leak`, { restartAfter: many + 1 });
      const version = pool.stats().browsers[0]!.versions[0]!;
      const browserId = pool.stats().browsers[0]!.id;
      const rssAfter: Record<number, number> = {};
      let done = 0;
      for (const target of [few, many]) {
        const jobId = newJobId();
        const o = watchOutcomes(tn.nc, jobId);
        const count = target - done;
        for (let i = 0; i < count; i++)
          await publishTask(
            tn.nc,
            shotTask(jobId, {
              url,
              browser: browserId,
              version,
              viewport: { w: vp.w, h: 400 + (i % 1000) },
              scheme: i % 2 ? 'dark' : 'light',
            }),
          );
        await o.waitFor(count, 1800000);
        o.stop();
        done = target;
        (globalThis as { gc?: () => void }).gc?.();
        rssAfter[target] = await settledTreeMb(process.pid, [natsPid]);
        log(`${id}: RSS after ${target} shots: ${rssAfter[target]} MB`);
      }
      await pool.stop();
      out.push(
        figure({
          name: `shots ${id} resident memory after ${many} shots`,
          unit: 'MB',
          samples: [rssAfter[many]!],
          baselineSamples: [rssAfter[few]!],
          note: `this process (actor, fixture server) and its browser, nats-server excluded, read once settled; baseline: after ${few} shots; one browser throughout (restartAfter ${many + 1}; configured ${tn.config.shots.restartAfter})`,
        }),
      );
    }
    return out;
  } finally {
    for (const fn of teardowns.reverse()) await fn();
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const figs = await run();
  for (const f of figs) console.log(`${f.name}: ${f.value} ${f.unit} (baseline ${f.baseline}, ratio ${f.ratio.toFixed(2)})`);
}
