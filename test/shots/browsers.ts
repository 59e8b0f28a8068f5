// A real browser for a test file, launched once and closed at teardown, and one-call captures.
import { launcherFor } from '../../actors/browser-pool/launchers/registry.ts';
import { ManagedBrowser, PageTimeout } from '../../actors/browser-pool/pool.ts';
import { captureShot, type Shot, type ShotParams } from '../../actors/browser-pool/capture.ts';
import { SETTLE, type Settle } from '../../actors/browser-pool/settle.ts';
import type { Scheme } from '../../actors/browser-pool/launchers/types.ts';
import { testLog } from '../helpers/nats.ts';

type Tap = { teardown(fn: () => unknown): void };

export interface TestBrowser {
  version: string;
  /** One capture; `timeoutMs` and `settle`: this shot's page timeout and settle caps (the browser's unless given). */
  shoot(
    url: string,
    p?: Partial<Omit<ShotParams, 'options'>> & { options?: Partial<ShotParams['options']>; timeoutMs?: number; settle?: Partial<Settle> },
  ): Promise<Shot>;
}

/**
 * `settle`: settle caps other than the production ones (SETTLE), for tests whose behaviour is
 * "stops at the cap", not the cap's value.
 */
export async function testBrowser(
  t: Tap,
  configId: string,
  opts: { proxy?: string; restartAfter?: number; timeoutMs?: number; settle?: Partial<Settle>; pageHeapMb?: number } = {},
): Promise<TestBrowser & { managed(scheme?: Scheme): ManagedBrowser }> {
  const launcher = launcherFor(configId);
  const all = new Map<string, ManagedBrowser>();
  const managed = (scheme: Scheme = 'light') => {
    const k = launcher.schemePerBrowser ? scheme : 'any';
    let b = all.get(k);
    if (!b) {
      b = new ManagedBrowser(
        launcher,
        {
          proxy: opts.proxy,
          ...(opts.pageHeapMb ? { pageHeapMb: opts.pageHeapMb } : {}),
          ...(launcher.schemePerBrowser ? { scheme } : {}),
        },
        opts.restartAfter ?? 100,
        testLog(),
      );
      all.set(k, b);
    }
    return b;
  };
  t.teardown(async () => {
    await Promise.all([...all.values()].map((b) => b.close()));
  });
  const version = await managed().warm();
  const defaultTimeoutMs = opts.timeoutMs ?? 30000;
  const settle: Settle = { ...SETTLE, ...(opts.settle ?? {}) };
  return {
    version,
    managed,
    shoot: (url, p = {}) => {
      const timeoutMs = p.timeoutMs ?? defaultTimeoutMs;
      const params: ShotParams = {
        url,
        browser: launcher.browserId,
        version,
        viewport: p.viewport ?? { w: 1280, h: 720 },
        scheme: p.scheme ?? 'light',
        options: { fullPage: false, retina: false, hideCookieBanner: false, delay: 0, ...(p.options ?? {}) },
      };
      return managed(params.scheme).withPage(timeoutMs, (page, _ctx, _browser, ahead) =>
        captureShot(page, params, {
          launcher,
          version,
          navTimeoutMs: timeoutMs - 2000,
          settle: { ...settle, ...(p.settle ?? {}) },
          progress: async () => {},
          ahead,
        }),
      );
    },
  };
}

/**
 * The failure a shot ended in (`{error, message}`, as the actor reports it), or null when it
 * delivered. `by` names what ended it: the page timeout (the pool's), the navigation's own time
 * (the page's deadline), the main-thread watch (a stuck script), or anything else.
 */
/** One browser per browser id for a whole test file, launched on first use (contexts are per shot). */
export function sharedBrowsers(t: Tap): (id: string) => ReturnType<typeof testBrowser> {
  const browsers = new Map<string, ReturnType<typeof testBrowser>>();
  return (id) => {
    let b = browsers.get(id);
    if (!b) browsers.set(id, (b = testBrowser(t, id)));
    return b;
  };
}

export async function failureOf(
  p: Promise<unknown>,
): Promise<{ error: string; message: string; by: 'page timeout' | 'navigation deadline' | 'stuck main thread' | 'other' } | null> {
  return p.then(
    () => null,
    (e: unknown) => {
      const f = e instanceof PageTimeout ? { error: 'timeout', message: e.message } : (e as { error: string; message: string });
      const by =
        e instanceof PageTimeout
          ? ('page timeout' as const)
          : /main thread stopped answering/.test(f.message)
            ? ('stuck main thread' as const)
            : f.error === 'timeout' && /timeout of \d+ ms exceeded|timed out|timeout/i.test(f.message)
              ? ('navigation deadline' as const)
              : ('other' as const);
      return { error: f.error, message: f.message, by }; // an Error's message is not enumerable: named, not spread
    },
  );
}

/** Milliseconds `fn` took, with its result. */
export async function timed<T>(fn: () => Promise<T>): Promise<[T, number]> {
  const t0 = Date.now();
  const r = await fn();
  return [r, Date.now() - t0];
}
