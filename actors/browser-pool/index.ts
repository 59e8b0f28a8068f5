// The browser-pool actor: launches the browsers named in `config.shots.browsers`, reads their
// real versions, pulls `task.shots.<browser>.<version>` from one durable consumer per version
// (shared by every instance holding that version), serves websitepro's PDF and rendered-HTML
// requests, and advertises what it really launched in the live `shots` catalogue.
import type { ActorContext, ActorHandle } from '../../shared/actor.ts';
import { advertise } from '../../shared/catalogue.ts';
import { addService, type RunningService } from '../../shared/micro.ts';
import { BROWSER_POOL_API } from '../../shared/protocol/browser-pool.ts';
import { CONSUMERS, subjects } from '../../shared/names.ts';
import { TaskFailure, type Task } from '../../shared/protocol/jobs.ts';
import { runWorker } from '../../shared/worker.ts';
import { DEFAULT_VIEWPORT, DELAYS, SCHEMES, VIEWPORT_LIMITS, VIEWPORT_PRESETS, type BrowserOffer } from '../../shared/services/index.ts';
import { ENGINE_LACKS, SHOT_FORMATS, THUMB_WIDTHS } from '../../shared/services/index.ts';
import { MAX_ACTIONS, MAX_PAGE_SCRIPT_BYTES } from '../../shared/schemas/page-controls.ts';
import { launcherFor } from './launchers/registry.ts';
import type { Launcher, Scheme } from './launchers/types.ts';
import { effectiveConcurrency, ManagedBrowser, PageTimeout, PhaseTimes, Slots } from './pool.ts';
import { captureShot, checkShotParams } from './capture.ts';
import { Stores, storeShot } from './store.ts';
import { renderEndpoints } from './render.ts';
import { startBrowserProxy } from './proxy.ts';
import { startCompareWorker } from './compare.ts';

/** One launched browser version; per-scheme browsers for launchers that need them (Firefox). */
export class BrowserEntry {
  private byScheme = new Map<Scheme | 'any', ManagedBrowser>();
  readonly launcher: Launcher;
  readonly version: string;
  private readonly make: (scheme?: Scheme) => ManagedBrowser;
  constructor(launcher: Launcher, version: string, first: ManagedBrowser, make: (scheme?: Scheme) => ManagedBrowser) {
    this.launcher = launcher;
    this.version = version;
    this.make = make;
    this.byScheme.set(launcher.schemePerBrowser ? 'light' : 'any', first);
  }
  browserFor(scheme: Scheme): ManagedBrowser {
    const k = this.launcher.schemePerBrowser ? scheme : 'any';
    let b = this.byScheme.get(k);
    if (!b) {
      b = this.make(scheme);
      this.byScheme.set(k, b);
    }
    return b;
  }
  async close() {
    await Promise.all([...this.byScheme.values()].map((b) => b.close()));
  }
}

export function offersOf(entries: BrowserEntry[]): BrowserOffer[] {
  const byId = new Map<string, BrowserOffer>();
  for (const e of entries) {
    const l = e.launcher;
    const cur = byId.get(l.browserId) ?? {
      id: l.browserId,
      name: l.name,
      engine: l.engine,
      versions: [],
      lacks: ENGINE_LACKS[l.engine],
      ...(l.mobile ? { mobile: { w: l.mobile.w, h: l.mobile.h, deviceScaleFactor: l.mobile.deviceScaleFactor } } : {}),
    };
    if (!cur.versions.includes(e.version)) cur.versions.push(e.version);
    cur.versions.sort((a, b) => Number(b) - Number(a));
    byId.set(l.browserId, cur);
  }
  return [...byId.values()];
}

export interface BrowserPoolHandle extends ActorHandle {
  /** What this instance launched and did (tests, operators). */
  stats(): { instanceId: string; concurrency: number; browsers: BrowserOffer[]; shots: number; failed: number };
  /** Mean ms per delivered shot in each step (the bench itemises a shot with it). */
  phases: PhaseTimes;
}

export async function start(ctx: ActorContext): Promise<BrowserPoolHandle> {
  const { nc, config, log, instanceId } = ctx;
  const cfg = config.shots;
  const proxy = await startBrowserProxy(config, log);
  const concurrency = effectiveConcurrency(cfg.concurrency);
  const slots = new Slots(concurrency);
  const stores = new Stores(nc);
  const counts = { shots: 0, failed: 0 };
  const make = (launcher: Launcher, scheme?: Scheme) =>
    new ManagedBrowser(
      launcher,
      {
        proxy: proxy.address,
        pageHeapMb: cfg.pageHeapMb,
        ...(proxy.isolate ? { isolate: proxy.isolate } : {}),
        ...(launcher.schemePerBrowser ? { scheme: scheme ?? 'light' } : {}),
      },
      cfg.restartAfter,
      log,
    );

  // launch everything configured; a browser that does not start is left out of the catalogue
  const launched = await Promise.all(
    cfg.browsers.map(async (id): Promise<BrowserEntry | null> => {
      let launcher: Launcher;
      try {
        launcher = launcherFor(id);
      } catch (e) {
        log.error({ err: e }, 'unknown browser in config.shots.browsers; skipped');
        return null;
      }
      const mb = make(launcher);
      try {
        const version = await mb.warm();
        return new BrowserEntry(launcher, version, mb, (s) => make(launcher, s));
      } catch (e) {
        log.error({ err: e, browser: id }, 'browser did not start; not offered');
        await mb.close().catch(() => {});
        return null;
      }
    }),
  );
  const entries: BrowserEntry[] = [];
  for (const e of launched) {
    if (!e) continue;
    if (entries.some((x) => x.launcher.browserId === e.launcher.browserId && x.version === e.version)) {
      log.warn({ browser: e.launcher.configId, version: e.version }, 'same browser version launched twice; keeping the first');
      await e.close();
      continue;
    }
    entries.push(e);
  }

  const times = new PhaseTimes();
  const workers = await Promise.all(
    entries.map((entry) =>
      runWorker({
        nc,
        config,
        log,
        consumer: CONSUMERS.shots(entry.launcher.browserId, entry.version),
        filterSubject: subjects.taskShots(entry.launcher.browserId, entry.version),
        // one task more than pages: a finished shot is stored while the next one renders
        concurrency: concurrency + 1,
        handle: async ({ task, progress, signal }) => {
          const p = checkShotParams(task.params);
          const release = await slots.acquire(signal);
          let shot;
          try {
            shot = await entry.browserFor(p.scheme === 'dark' ? 'dark' : 'light').withPage(
              cfg.pageTimeoutMs,
              (page, _ctx, _browser, ahead) =>
                captureShot(page, p, {
                  launcher: entry.launcher,
                  version: entry.version,
                  navTimeoutMs: Math.max(1000, cfg.pageTimeoutMs - 3000),
                  progress,
                  blockedSince: proxy.blockedSince,
                  times,
                  ahead,
                }),
              times,
            );
          } catch (e) {
            counts.failed++;
            if (e instanceof PageTimeout) throw new TaskFailure('timeout', e.message);
            throw e; // TaskFailure: failed and refunded; anything else (a crashed browser): redelivered
          } finally {
            // the page is done: the thumbnail and the upload need no browser
            release();
          }
          void progress('storing').catch(() => {});
          const file = await storeShot(stores, task as Task, shot.file, shot.raw, times, {
            contentType: shot.contentType,
            thumbWidth: p.options.thumbWidth,
          });
          counts.shots++;
          times.count++;
          return { file, extra: { width: shot.width, height: shot.height, ...shot.extra } };
        },
      }),
    ),
  );

  // options.compare: the diffs of pairs of stored shots (no browser needed; any instance takes them)
  workers.push(await startCompareWorker({ nc, config, log }));

  let service: RunningService | undefined;
  const printer =
    entries.find((e) => e.launcher.canPrint && e.launcher.configId === 'chromium') ?? entries.find((e) => e.launcher.canPrint);
  if (printer) {
    const r = renderEndpoints({
      browser: printer.browserFor('light'),
      slots,
      stores,
      pageTimeoutMs: cfg.pageTimeoutMs,
      blockedSince: proxy.blockedSince,
    });
    service = await addService(
      nc,
      {
        api: BROWSER_POOL_API,
        version: '1.0.0',
        endpoints: {
          [subjects.browser.renderPdf]: (req) => r.renderPdf(req),
          [subjects.browser.renderHtml]: (req) => r.renderHtml(req),
        },
      },
      log,
    );
  }

  const offers = offersOf(entries);
  const catalogue = await advertise(nc, 'shots', instanceId, () => ({
    browsers: offers,
    presets: VIEWPORT_PRESETS,
    limits: {
      viewports: VIEWPORT_LIMITS.max,
      width: [VIEWPORT_LIMITS.minW, VIEWPORT_LIMITS.maxW],
      height: [VIEWPORT_LIMITS.minH, VIEWPORT_LIMITS.maxH],
    },
    options: {
      defaultViewport: DEFAULT_VIEWPORT,
      schemes: SCHEMES,
      delay: DELAYS,
      fullPage: true,
      retina: true,
      hideCookieBanner: true,
      compare: true,
      // issue 43: every browser honours these unless its `lacks` names one
      controls: [
        'selector',
        'hideSelectors',
        'css',
        'js',
        'click',
        'waitFor',
        'actions',
        'userAgent',
        'locale',
        'timezone',
        'headers',
        'cookies',
        'blockAds',
      ],
      formats: SHOT_FORMATS,
      thumbWidth: [THUMB_WIDTHS.min, THUMB_WIDTHS.max],
      maxActions: MAX_ACTIONS,
      maxScriptBytes: MAX_PAGE_SCRIPT_BYTES,
    },
    // websitepro's pdf (and rendered html) are printed here: job creation checks one instance does
    ...(printer ? { prints: ['pdf', 'html'] } : {}),
  }));
  log.info({ instanceId, concurrency, browsers: offers.map((o) => `${o.id}:${o.versions.join('/')}`) }, 'browser-pool ready');

  return {
    stats: () => ({ instanceId, concurrency, browsers: offers, ...counts }),
    phases: times,
    async stop() {
      await catalogue.stop();
      await Promise.all(workers.map((w) => w.stop()));
      await service?.stop();
      await Promise.all(entries.map((e) => e.close()));
      await proxy.stop();
    },
  };
}
