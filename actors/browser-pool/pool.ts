// Long-lived browsers. One ManagedBrowser per launcher (and per scheme for launchers that need
// it): launched once, a fresh isolated context per task, restarted after `restartAfter` pages or
// when it crashes, and a hung page killed at the timeout. Page concurrency of the whole instance
// is one limit here (Slots), not scattered through handlers.
import { freemem } from 'node:os';
import type { Browser, BrowserContext, Page } from 'puppeteer-core';
import type { Logger } from '../../shared/log.ts';
import { majorVersion, type Launcher, type LaunchOptions } from './launchers/types.ts';
import { onProcessExit, within } from '../../shared/runtime.ts';

/**
 * No browser outlives this process, however it ends (a stop past its deadline, a second Ctrl-C):
 * puppeteer starts each browser in its own process group, which a terminal's signal does not reach,
 * so on exit every browser still running is killed with its whole group (renderers, zygotes).
 */
function killWithProcessGroupOnExit(browser: Browser) {
  const child = browser.process();
  const pid = child?.pid;
  if (!child || !pid) return;
  const forget = onProcessExit(() => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    try {
      process.kill(-pid, 'SIGKILL');
    } catch {
      child.kill('SIGKILL');
    }
  });
  child.once('exit', forget);
}

/**
 * puppeteer takes its listeners off the DevTools pipe (the child's stdio 3 and 4) when it closes
 * the connection. A browser killed after that (`closeBrowser` past its grace) can reset the pipe,
 * and an 'error' event with no listener ends this process: a whole-suite run saw `read
 * ECONNRESET` on a Pipe thrown as an uncaught exception at a pool's stop. While puppeteer is
 * connected its own listener is there too; this one only keeps a dead pipe from being fatal.
 */
function keepPipeErrorsFromEndingTheProcess(browser: Browser) {
  for (const stream of browser.process()?.stdio ?? []) stream?.on('error', () => {});
}

/** Pages at once per instance: the configured value, lowered when free memory is short. */
export const PAGE_MEMORY_MB = 250;
export function effectiveConcurrency(configured: number, freeBytes = freemem()): number {
  const byMemory = Math.floor((freeBytes / 2 ** 20 - 512) / PAGE_MEMORY_MB);
  return Math.max(1, Math.min(configured, byMemory));
}

export class Slots {
  private used = 0;
  private waiting: (() => void)[] = [];
  readonly size: number;
  constructor(size: number) {
    this.size = size;
  }
  /** Wait for a free page; an aborted signal gives up the place in the queue and throws. */
  async acquire(signal?: AbortSignal): Promise<() => void> {
    while (this.used >= this.size) {
      if (signal?.aborted) throw new SlotWaitAborted();
      await new Promise<void>((resolve) => {
        const onAbort = () => {
          const i = this.waiting.indexOf(wake);
          if (i >= 0) this.waiting.splice(i, 1);
          resolve();
        };
        const wake = () => {
          signal?.removeEventListener('abort', onAbort);
          resolve();
        };
        this.waiting.push(wake);
        signal?.addEventListener('abort', onAbort, { once: true });
      });
    }
    this.used++;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.used--;
      this.waiting.shift()?.();
    };
  }
  get busy() {
    return this.used;
  }
}

export class SlotWaitAborted extends Error {
  constructor() {
    super('gave up waiting for a free page');
    this.name = 'SlotWaitAborted';
  }
}

export class PageTimeout extends Error {
  /** What the page was doing when its time ran out (the last PageHooks.step). */
  readonly step?: string;
  constructor(ms: number, step?: string) {
    super(`page did not finish within ${ms} ms${step ? ` (it was at: ${step})` : ''}`);
    this.name = 'PageTimeout';
    this.step = step;
  }
}

/** What withPage gives the task besides its page. */
export interface PageHooks {
  /** Make the next task's context now (see withPage). */
  makeNext(): void;
  /** Say what the page is doing now: a page that runs out of time names it (PageTimeout). */
  step(name: string): void;
}

/** Where the time of a shot goes, summed over shots (bench rows, operators). */
export class PhaseTimes {
  private ms = new Map<string, number>();
  count = 0;
  add(phase: string, ms: number) {
    this.ms.set(phase, (this.ms.get(phase) ?? 0) + ms);
  }
  /** Time `fn` under `phase`. */
  async time<T>(phase: string, fn: () => Promise<T>): Promise<T> {
    const t0 = performance.now();
    try {
      return await fn();
    } finally {
      this.add(phase, performance.now() - t0);
    }
  }
  /** Mean ms per shot of every phase. */
  perShot(): Record<string, number> {
    return Object.fromEntries([...this.ms].map(([k, v]) => [k, Math.round((v / Math.max(1, this.count)) * 10) / 10]));
  }
  reset() {
    this.ms.clear();
    this.count = 0;
  }
}

/** A fresh context with a blank page in it, made ahead of the task that will use it. */
interface Fresh {
  ctx: BrowserContext;
  page: Page;
}

interface Generation {
  browser: Browser;
  pages: number;
  /** Tasks on this browser, counting those whose context is still to be closed. */
  active: number;
  /** Of `active`: finished tasks whose context waits for its close (closeSoon). */
  closing: number;
  retired: boolean;
}

export class ManagedBrowser {
  private current?: Generation;
  private starting?: Promise<Generation>;
  /** The next task's context and page, made while the current one runs. */
  private spare?: { gen: Generation; ready: Promise<Fresh> };
  private closed = false;
  /** Major version read from the real browser. */
  version = '';
  launches = 0;

  readonly launcher: Launcher;
  private readonly launchOpts: LaunchOptions;
  private readonly restartAfter: number;
  private readonly log: Logger;
  constructor(launcher: Launcher, launchOpts: LaunchOptions, restartAfter: number, log: Logger) {
    this.launcher = launcher;
    this.launchOpts = launchOpts;
    this.restartAfter = restartAfter;
    this.log = log;
  }

  private async launch(): Promise<Generation> {
    const t0 = Date.now();
    const browser = await this.launchIsolated();
    killWithProcessGroupOnExit(browser);
    keepPipeErrorsFromEndingTheProcess(browser);
    this.version = majorVersion(await browser.version());
    this.launches++;
    const gen: Generation = { browser, pages: 0, active: 0, closing: 0, retired: false };
    browser.on('disconnected', () => {
      if (this.current === gen) this.current = undefined;
      if (!gen.retired && !this.closed)
        this.log.warn(
          { browser: this.launcher.configId, scheme: this.launchOpts.scheme },
          'browser disconnected; next page starts a new one',
        );
      gen.retired = true;
    });
    this.log.info(
      { browser: this.launcher.configId, version: this.version, scheme: this.launchOpts.scheme, ms: Date.now() - t0 },
      'browser launched',
    );
    return gen;
  }

  /**
   * The launcher's launch, in a network namespace of its own when the pool gives one (netns.ts):
   * made for this launch, its proxy listener closed when the browser process exits.
   */
  private async launchIsolated(): Promise<Browser> {
    const { isolate, ...opts } = this.launchOpts;
    if (!isolate) return this.launcher.launch(opts);
    const jail = await isolate();
    let browser: Browser;
    try {
      browser = await this.launcher.launch({ ...opts, proxy: jail.proxy, jail });
    } catch (e) {
      jail.close();
      throw e;
    }
    jail.launched();
    const child = browser.process();
    if (child && child.exitCode === null && child.signalCode === null) child.once('exit', () => jail.close());
    else jail.close();
    return browser;
  }

  private async generation(): Promise<Generation> {
    if (this.closed) throw new Error('browser pool stopped');
    if (this.current && this.current.browser.connected && !this.current.retired) return this.current;
    this.starting ??= this.launch()
      .then((g) => {
        this.current = g;
        return g;
      })
      .finally(() => {
        this.starting = undefined;
      });
    return this.starting;
  }

  /** Launch now (the catalogue needs the real version before anything is advertised). */
  async warm(): Promise<string> {
    await this.generation();
    return this.version;
  }

  private async retire(gen: Generation) {
    gen.retired = true;
    if (this.current === gen) this.current = undefined;
    if (gen.active === 0) await closeBrowser(gen.browser);
  }

  private make(gen: Generation): Promise<Fresh> {
    const ready = (async () => {
      const ctx = await gen.browser.createBrowserContext();
      try {
        return { ctx, page: await ctx.newPage() };
      } catch (e) {
        await ctx.close().catch(() => {});
        throw e;
      }
    })();
    ready.catch(() => {});
    return ready;
  }

  /**
   * A fresh context and page for a task: the one made ahead if it belongs to this browser
   * generation (else one made now), and `makeNext`, which starts the next task's. Isolation is the
   * same as making it on demand: every task gets its own new context, used once.
   */
  private async fresh(gen: Generation): Promise<Fresh & { makeNext(): void }> {
    const s = this.spare;
    this.spare = undefined;
    let got: Fresh | undefined;
    if (s?.gen === gen) got = await s.ready.catch(() => undefined);
    else if (s) void s.ready.then((f) => f.ctx.close()).catch(() => {});
    let made = false;
    const startSpare = () => {
      if (made) return;
      made = true;
      // one spare at a time: a concurrent task may have made it already
      if (!this.spare && !gen.retired && !this.closed && gen.browser.connected) this.spare = { gen, ready: this.make(gen) };
    };
    // finished contexts are closed once this page is parsed, whoever else is at work: at the
    // task's start the close would hold this page's first calls
    const makeNext = () => {
      this.closeNow();
      startSpare();
    };
    // with other pages of this browser at work there is no quiet moment to wait for, and the next
    // task comes sooner: the spare is started now; alone, this page starts it once it is parsed
    if (gen.active - gen.closing > 1) startSpare();
    return { ...(got ?? (await this.make(gen))), makeNext };
  }

  /**
   * Run `fn` with a fresh page in a fresh context of this browser. Past `timeoutMs` the context
   * is closed (and the browser killed if even that hangs) and PageTimeout is thrown.
   *
   * The next task's context is made while this one runs, when `fn` calls `hooks.makeNext()` (or
   * when `fn` ends): making a context is a few hundred ms of the browser's main thread and a new
   * renderer process, so it is best done while this page waits for its network to go quiet, not
   * while it is being set up and navigated (every CDP call would queue behind it).
   */
  async withPage<T>(
    timeoutMs: number,
    fn: (page: Page, ctx: BrowserContext, browser: Browser, hooks: PageHooks) => Promise<T>,
    times?: PhaseTimes,
  ): Promise<T> {
    const gen = await this.generation();
    gen.pages++;
    gen.active++;
    if (gen.pages >= this.restartAfter) {
      // the next page gets a new browser; this one closes when its last page is done
      gen.retired = true;
      if (this.current === gen) this.current = undefined;
    }
    let ctx: BrowserContext | undefined;
    let timer: NodeJS.Timeout | undefined;
    let makeNext: (() => void) | undefined;
    let step: string | undefined; // none named: the message says no step
    try {
      const t0 = performance.now();
      const f = await this.fresh(gen);
      times?.add('context and page', performance.now() - t0);
      ctx = f.ctx;
      makeNext = f.makeNext;
      const timeout = new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new PageTimeout(timeoutMs, step)), timeoutMs);
      });
      return await Promise.race([
        fn(f.page, f.ctx, gen.browser, {
          makeNext: f.makeNext,
          step: (s) => {
            step = s;
          },
        }),
        timeout,
      ]);
    } catch (e) {
      if (e instanceof PageTimeout && ctx) {
        const closedInTime = await within(
          ctx.close().then(
            () => true,
            () => false,
          ),
          5000,
          false,
        );
        if (!closedInTime) {
          this.log.warn({ browser: this.launcher.configId }, 'hung page would not close; killing the browser');
          gen.browser.process()?.kill('SIGKILL');
          await this.retire(gen);
        }
        ctx = undefined;
      }
      throw e;
    } finally {
      clearTimeout(timer);
      makeNext?.();
      // closed in the background: the task's result does not wait for the browser's clean-up
      if (ctx) this.closeSoon(ctx, gen);
      else await this.done(gen);
    }
  }

  /** Finished contexts waiting for closeNow(), each with its fallback timer. */
  private toClose: { ctx: BrowserContext; gen: Generation; timer: NodeJS.Timeout }[] = [];

  /**
   * Close a finished task's context when the next page of this browser is parsed (closeNow, from
   * makeNext), or after CLOSE_LATEST_MS with no next page. Closing a context (its renderer goes) is
   * browser main-thread work, and done at once it fell on the next task's first steps: its
   * viewport and navigation queued behind it. The next page's quiet-network wait is idle time.
   */
  private closeSoon(ctx: BrowserContext, gen: Generation) {
    gen.closing++;
    const timer = setTimeout(() => this.closeNow(), CLOSE_LATEST_MS);
    this.toClose.push({ ctx, gen, timer });
  }

  private closeNow() {
    for (const { ctx, gen, timer } of this.toClose.splice(0)) {
      clearTimeout(timer);
      void within(
        ctx.close().catch(() => {}),
        5000,
        undefined,
      ).then(() => {
        gen.closing--;
        return this.done(gen);
      });
    }
  }

  private async done(gen: Generation) {
    gen.active--;
    if (gen.retired && gen.active === 0) {
      const s = this.spare;
      if (s?.gen === gen) {
        this.spare = undefined;
        void s.ready.then((f) => f.ctx.close()).catch(() => {});
      }
      await closeBrowser(gen.browser);
    }
  }

  /** withPage for callers that make their own pages. */
  withContext<T>(timeoutMs: number, fn: (ctx: BrowserContext, browser: Browser) => Promise<T>): Promise<T> {
    return this.withPage(timeoutMs, (_page, ctx, browser) => fn(ctx, browser));
  }

  async close(): Promise<void> {
    this.closed = true;
    this.closeNow();
    // the spare context goes with its browser (closing it first cost a round trip per browser)
    const s = this.spare;
    this.spare = undefined;
    s?.ready.catch(() => {});
    const gen = this.current ?? (this.starting ? await this.starting.catch(() => undefined) : undefined);
    this.current = undefined;
    if (gen) {
      gen.retired = true;
      // a stop has a deadline (the workers' 2.5 s step in main.ts): a browser slow to close under
      // load (1.9 s for five at a load of 5 a core) is killed instead; nothing of it is kept anyway
      await closeBrowser(gen.browser, CLOSE_ON_STOP_MS);
    }
  }
}

/** How long a browser may take to close when the pool stops before it is killed. */
const CLOSE_ON_STOP_MS = 1000;

async function closeBrowser(b: Browser, graceMs = 5000) {
  if (!b.connected) {
    b.process()?.kill('SIGKILL');
    return;
  }
  const ok = await within(
    b.close().then(
      () => true,
      () => false,
    ),
    graceMs,
    false,
  );
  if (!ok) b.process()?.kill('SIGKILL');
}

/** The longest a finished task's context stays open waiting for the next page (closeSoon). */
const CLOSE_LATEST_MS = 1000;
