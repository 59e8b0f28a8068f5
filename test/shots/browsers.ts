// A real browser for a test file, launched once and closed at teardown, and one-call captures.
import { launcherFor } from '../../actors/browser-pool/launchers/registry.ts';
import { ManagedBrowser, PageTimeout } from '../../actors/browser-pool/pool.ts';
import { captureShot, type Shot, type ShotParams } from '../../actors/browser-pool/capture.ts';
import type { Scheme } from '../../actors/browser-pool/launchers/types.ts';
import { testLog } from '../helpers/nats.ts';

type Tap = { teardown(fn: () => unknown): void };

export interface TestBrowser {
  version: string;
  shoot(url: string, p?: Partial<Omit<ShotParams, 'options'>> & { options?: Partial<ShotParams['options']> }): Promise<Shot>;
}

export async function testBrowser(t: Tap, configId: string, opts: { proxy?: string; restartAfter?: number; timeoutMs?: number } = {}): Promise<TestBrowser & { managed(scheme?: Scheme): ManagedBrowser }> {
  const launcher = launcherFor(configId);
  const all = new Map<string, ManagedBrowser>();
  const managed = (scheme: Scheme = 'light') => {
    const k = launcher.schemePerBrowser ? scheme : 'any';
    let b = all.get(k);
    if (!b) {
      b = new ManagedBrowser(launcher, { proxy: opts.proxy, ...(launcher.schemePerBrowser ? { scheme } : {}) }, opts.restartAfter ?? 100, testLog());
      all.set(k, b);
    }
    return b;
  };
  t.teardown(async () => { await Promise.all([...all.values()].map((b) => b.close())); });
  const version = await managed().warm();
  const timeoutMs = opts.timeoutMs ?? 30000;
  return {
    version,
    managed,
    shoot: (url, p = {}) => {
      const params: ShotParams = {
        url,
        browser: launcher.browserId,
        version,
        viewport: p.viewport ?? { w: 1280, h: 720 },
        scheme: p.scheme ?? 'light',
        options: { fullPage: false, retina: false, hideCookieBanner: false, delay: 0, ...(p.options ?? {}) },
      };
      return managed(params.scheme).withPage(timeoutMs, (page) => captureShot(page, params, { launcher, version, navTimeoutMs: timeoutMs - 2000, progress: async () => {} }));
    },
  };
}

/** The failure a shot ended in (`{error, message}`, as the actor reports it), or null when it delivered. */
export async function failureOf(p: Promise<unknown>): Promise<{ error: string; message: string } | null> {
  return p.then(() => null, (e: unknown) => (e instanceof PageTimeout ? { error: 'timeout', message: e.message } : e as { error: string; message: string }));
}

/** Milliseconds `fn` took, with its result. */
export async function timed<T>(fn: () => Promise<T>): Promise<[T, number]> {
  const t0 = Date.now();
  const r = await fn();
  return [r, Date.now() - t0];
}
