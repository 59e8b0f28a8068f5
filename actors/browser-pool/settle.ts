// Opening a page of the real web so that it always ends, in a bounded time, in a page to capture
// or a named failure: dialogs are answered, popups closed, downloads and types a browser cannot
// show refused at once, a crashed renderer noticed, and "loaded" decided by a documented settle
// rule instead of waiting for a network idle that some pages never reach. Shared by shots and by
// websitepro's PDF / rendered-HTML endpoints. The rule is described in docs/shots.md.
import type { CDPSession, HTTPRequest, HTTPResponse, Page, Target } from 'puppeteer-core';
import { TaskFailure } from '../../shared/protocol/jobs.ts';
import { within } from '../../shared/runtime.ts';
import type { PhaseTimes } from './pool.ts';
import { quietEval } from './quiet-eval.ts';

/** The settle rule (docs/shots.md, "When a page counts as loaded"). */
export const SETTLE = {
  /** After DOMContentLoaded, the longest wait for the load event: an endless video, frame or
   *  image never fires it, and such a page is captured as it is. */
  loadCapMs: 6_000,
  /** Web fonts still loading at the load event: waited for this long at most. */
  fontsCapMs: 3_000,
  /** Network counted as settled after this long with no request in flight (counted from the
   *  last request that started or ended, not from the load event)... */
  quietMs: 200,
  /** ...or after this long anyway: long polls, open sockets and fetch loops never go quiet. */
  quietCapMs: 2_000,
  /** A `<meta http-equiv=refresh>` this soon (seconds) is followed before the capture. */
  metaRefreshMaxSec: 5,
  /** Documents (redirects by script or meta refresh) followed after the first one. */
  maxHops: 5,
  /** A main thread that runs no script of ours for this long past the load cap is stuck. */
  stuckMs: 3_000,
};

/**
 * Unanswered questions in a row (each `stuckMs`) before the settle's last check counts a main thread
 * as stuck. One is not enough on a loaded machine: a phone page pushing history state every 5 ms,
 * with other pages and browsers busy beside it, left one 3 s question unanswered and was failed as
 * stuck (session 21, CI-like runs); a script that does not end leaves every one unanswered. The
 * watch after the settle (watchMainThread) still fails at the first: a second question there
 * would come after the capture has begun, whose own time is excused.
 */
export const UNANSWERED_TO_FAIL = 2;

/** The settle rule's figures; a caller may open a page with other ones (a test proves "stops at
 *  the cap" with shorter caps). */
export type Settle = { readonly [K in keyof typeof SETTLE]: number };

export interface DismissedDialog {
  type: string;
  message: string;
}

/** What the page did that the result reports (`extra`). */
export interface PageReport {
  /** Dialogs (alert, confirm, prompt, beforeunload) answered automatically, in order. */
  dialogs?: DismissedDialog[];
  /** Popup windows the page managed to open; each was closed at once. */
  popupsClosed?: number;
  /** The load event had not fired when the load cap ran out. */
  loadCapped?: boolean;
  /** The network had not gone quiet when its cap ran out (a long poll, a socket, a fetch loop). */
  networkCapped?: boolean;
  /** Documents followed after the first (meta refresh, script redirects). */
  hops?: number;
}

const RENDERABLE = /^(text\/|image\/|video\/|audio\/|application\/(xhtml\+xml|xml|json|javascript|ecmascript|pdf|[\w.+-]+\+(xml|json)))/i;

/** Why a main-document answer cannot become a picture, or null when it can. */
export function unrenderable(headers: Record<string, string>): string | null {
  const disposition = headers['content-disposition'] ?? '';
  if (/^\s*attachment/i.test(disposition))
    return `the URL answers with a download (Content-Disposition: ${disposition.slice(0, 100)}), not a page`;
  const type = (headers['content-type'] ?? '').split(';')[0]!.trim();
  if (type && !RENDERABLE.test(type)) return `the URL answers with ${type}, which a browser does not display`;
  return null;
}

/** A navigation's error that a download (or a page cancelling itself) gives. */
const ABORTED = /ERR_ABORTED|NS_BINDING_ABORTED|NS_ERROR_ABORT/i;

const cut = (s: string) => s.split('\n')[0]!.slice(0, 300);

/**
 * Listens to one page from before its navigation to the capture: answers dialogs, closes popups,
 * and turns a download answer, a guard refusal or a renderer crash into a failure that `race()`
 * throws at once instead of letting the navigation wait for its timeout.
 */
export class PageWatch {
  readonly report: Required<Pick<PageReport, 'dialogs'>> & PageReport = { dialogs: [] };
  /** Main-frame document requests so far (the first navigation included). */
  documents = 0;
  /** The latest main-frame document answer. */
  mainResponse: HTTPResponse | null = null;
  /** Main-frame documents answered (a server's 3xx is not a document of its own). */
  answeredDocuments = 0;
  /** The document's own address once settled (over BiDi page.url() can lag a script redirect). */
  finalUrl?: string;
  /** Requests in flight, and when the network last started or ended one (ms). */
  private inflight = new Set<HTTPRequest>();
  private lastActivity = Date.now();
  failure?: TaskFailure;
  private fail!: (f: TaskFailure) => void;
  private readonly failed: Promise<never>;

  private readonly page: Page;

  /** Waits until the page has failed, or `ms` at most (a failure already seen: at once). */
  async failureWithin(ms: number): Promise<void> {
    if (!this.failure)
      await within(
        this.failed.catch(() => {}),
        ms,
        undefined,
      );
  }

  constructor(page: Page) {
    this.page = page;
    this.failed = new Promise<never>((_, reject) => {
      this.fail = (f) => {
        this.failure ??= f;
        reject(this.failure);
      };
    });
    this.failed.catch(() => {});
    page.on('dialog', (d) => {
      const type = d.type();
      this.report.dialogs.push({ type, message: d.message().slice(0, 200) });
      // leaving is what the page's own redirect wants; every other dialog gets "cancel"
      void (type === 'beforeunload' ? d.accept() : d.dismiss()).catch(() => {});
    });
    page.on('popup', (p) => {
      if (p) this.closePopup(p.target(), () => p.close());
    });
    // Not every window the page opens becomes a 'popup' event: in Chromium a popup whose script
    // raises a dialog before puppeteer has set its page up never does (the set-up waits on the
    // blocked renderer), and its dialog freezes the opener too (same process); over BiDi a window
    // opened by a frame is nobody's popup. The task's context holds only this page, so any other
    // page appearing in it is a window the page opened: closed as it appears. In Chromium by
    // target id from the browser's side, which does not need the popup's renderer.
    const ctx = page.browserContext();
    if ((page.browser() as unknown as { protocol?: string }).protocol === 'cdp') {
      ctx.on('targetcreated', (target: Target) => {
        const targetId = (target as unknown as { _targetId?: string })._targetId;
        if (target.type() === 'page' && target !== page.target() && targetId)
          this.closePopup(target, () => closeTargetById(page, targetId));
      });
    } else {
      // BiDi calls a frame a 'page' target too (and asking it for its page makes one), so the
      // context's top-level pages are looked at instead
      ctx.on('targetcreated', (target: Target) => {
        if (target.type() !== 'page') return;
        setImmediate(
          () =>
            void ctx
              .pages()
              .then((pages) => {
                for (const p of pages) if (p !== page) this.closePopup(p.target(), () => p.close());
              })
              .catch(() => {}),
        );
      });
    }
    page.on('request', (r: HTTPRequest) => {
      if (r.isNavigationRequest() && r.frame() === page.mainFrame()) this.documents++;
      this.inflight.add(r);
      this.lastActivity = Date.now();
    });
    const ended = (r: HTTPRequest) => {
      this.inflight.delete(r);
      this.lastActivity = Date.now();
    };
    page.on('requestfinished', ended);
    page.on('requestfailed', ended);
    page.on('response', (r: HTTPResponse) => {
      if (!r.request().isNavigationRequest() || r.frame() !== page.mainFrame()) return;
      this.mainResponse = r;
      if (r.status() < 300 || r.status() >= 400) this.answeredDocuments++;
      // the previous document's requests end with it, and Chromium does not always say so (its
      // favicon fetch stayed "in flight" and held every quiet wait after a redirect to its cap)
      for (const q of this.inflight) if (q !== r.request()) this.inflight.delete(q);
      const h = r.headers();
      // the guard proxy answers a plain-http request it refuses itself, with this header
      const guard = h['x-guard-error'];
      if (guard === 'blocked_address')
        this.fail(new TaskFailure('blocked_address', 'the page or one of its redirects points at a non-public address'));
      else if (guard) this.fail(new TaskFailure('unreachable', `${r.url()} could not be reached (${guard})`));
      const why = unrenderable(h);
      if (why && r.status() < 300) this.fail(new TaskFailure('render_failed', why));
    });
    // Chromium: the renderer died (out of memory, a crash); Firefox reports no such event, its
    // pages fail by the script heap limit instead (launchers/firefox.ts)
    page.on('error', (e: Error) =>
      this.fail(new TaskFailure('render_failed', `the page crashed (${cut(e.message)}); it may have run out of memory`)),
    );
  }

  private popups = new WeakSet<Target>();
  private closePopup(target: Target, close: () => Promise<unknown>) {
    if (!this.popups.has(target)) {
      this.popups.add(target);
      this.report.popupsClosed = (this.report.popupsClosed ?? 0) + 1;
    }
    void close().catch(() => {});
  }

  /**
   * Until no request has been in flight for `quietMs`, counted from the network's last activity
   * (so time already spent waiting for the load event counts), or `capMs` at most: 'quiet' or
   * 'capped', whichever ended it.
   */
  async quiet(quietMs: number, capMs: number): Promise<'quiet' | 'capped'> {
    const until = Date.now() + capMs;
    for (;;) {
      const idleFor = this.inflight.size ? 0 : Date.now() - this.lastActivity;
      if (idleFor >= quietMs) return 'quiet';
      if (Date.now() >= until) return 'capped';
      await sleep(Math.max(10, Math.min(until - Date.now(), this.inflight.size ? 50 : quietMs - idleFor)));
    }
  }

  /**
   * From now until the page closes, asks the page a trivial question every `stuckMs`; no answer
   * within that long fails the page with `timeout`. The capture after the settle (address,
   * screenshot, PDF) needs the main thread, and a script whose endless loop starts just after the
   * settle would otherwise hold it until the page's own timeout.
   */
  watchMainThread(stuckMs = SETTLE.stuckMs): void {
    const page = this.page;
    void (async () => {
      while (!page.isClosed() && !this.failure) {
        await sleep(stuckMs);
        if (page.isClosed() || this.failure) return;
        const asked = Date.now();
        // closed, its browser gone, or moving on: watched no more
        const answer = await within(
          quietEval(page, '1').then(
            () => 'yes' as const,
            () => 'gone' as const,
          ),
          stuckMs,
          'none' as const,
        );
        if (answer === 'gone') return;
        // our own work (a long document's print layout held it 20 s) is not a script that does not
        // end, when it had begun before the question: one begun after it found the thread stuck
        const ours = this.ownBusySince <= asked && (this.ownWork > 0 || this.ownWorkEndedAt >= asked);
        if (answer === 'none' && !ours && !page.isClosed())
          this.fail(new TaskFailure('timeout', "the page's main thread stopped answering (a script that does not end)"));
      }
    })();
  }

  /** Captures of ours in progress (print, serialisation), and when the last one ended. */
  private ownWork = 0;
  private ownWorkEndedAt = 0;
  private ownBusySince = 0;

  /**
   * `p`, a capture of ours that holds the page's main thread (a PDF, the DOM's serialisation):
   * the main-thread watch does not count its time as a stuck page. Raced with the page's failure.
   */
  ownCapture<T>(p: Promise<T>): Promise<T> {
    if (this.ownWork++ === 0) this.ownBusySince = Date.now();
    const done = () => {
      this.ownWork--;
      this.ownWorkEndedAt = Date.now();
    };
    p.then(done, done);
    return this.race(p);
  }

  /** `p`, or the page's failure if that comes first. */
  race<T>(p: Promise<T>): Promise<T> {
    return Promise.race([p, this.failed]);
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** One CDP session per opener page, made on its first popup, for closing targets by id. */
const closers = new WeakMap<Page, Promise<CDPSession>>();
async function closeTargetById(opener: Page, targetId: string) {
  let session = closers.get(opener);
  if (!session) {
    session = opener.createCDPSession();
    closers.set(opener, session);
  }
  await (await session).send('Target.closeTarget', { targetId });
}

interface LoadState {
  loaded: boolean;
  refresh: number | null;
  /** performance.timeOrigin: one per document, so it tells a new document from the old one. */
  origin: number;
}

/**
 * In the page: the load event (capped), fonts (capped), and a pending meta refresh. Sent as text:
 * a function would be compiled by the TypeScript loader, which may wrap inner functions in a
 * `__name()` helper that does not exist in the page.
 */
const WAIT_LOAD = `(async (loadCap, fontsCap) => {
  const capped = (p, ms) => Promise.race([p, new Promise((r) => setTimeout(() => r('cap'), ms))]);
  const loaded = document.readyState === 'complete'
    || (await capped(new Promise((r) => addEventListener('load', () => r('load'), { once: true })), loadCap)) !== 'cap';
  if (document.fonts && document.fonts.status !== 'loaded') await capped(document.fonts.ready, fontsCap);
  const meta = document.querySelector('meta[http-equiv="refresh" i]');
  const refresh = meta ? Number.parseFloat(meta.content) : Number.NaN;
  return { loaded, refresh: Number.isFinite(refresh) ? refresh : null, origin: performance.timeOrigin };
})`;

/**
 * Until a document other than the one of `origin` is parsed, or `ms`. Asked of the page instead of
 * waiting for a navigation event: a refresh of 0 s has often left before the wait could start.
 */
async function otherDocumentParsed(page: Page, origin: number, ms: number): Promise<boolean> {
  const until = Date.now() + ms;
  while (Date.now() < until) {
    const now = await within(
      quietEval<[number, string]>(page, '[performance.timeOrigin, document.readyState]').catch(() => null),
      1000,
      null,
    );
    if (now && now[0] !== origin && now[1] !== 'loading') return true;
    await sleep(100);
  }
  return false;
}

async function waitLoad(page: Page, loadCapMs: number, fontsCapMs: number): Promise<LoadState> {
  return quietEval<LoadState>(page, `${WAIT_LOAD}(${Math.round(loadCapMs)}, ${Math.round(fontsCapMs)})`);
}

/** The page's document went away under a script of ours: it navigated by itself. */
const MOVED =
  /context was destroyed|navigat|detached|Cannot find context|Cannot find default execution context|No realm|DiscardedBrowsingContext|no such frame/i;

/**
 * Puppeteer's `domcontentloaded` over CDP also waits for every child frame's, so a frame that
 * never finishes would hold the navigation until its timeout. The main document alone decides:
 * once its answer arrived, its readyState is polled.
 */
async function mainDocumentParsed(page: Page, watch: PageWatch, done: () => boolean): Promise<HTTPResponse | null> {
  for (;;) {
    await sleep(250);
    if (done()) return new Promise<never>(() => {});
    if (!watch.mainResponse) continue;
    const state = await within(
      quietEval<string>(page, `location.href === 'about:blank' ? 'loading' : document.readyState`).catch(() => 'loading'),
      1000,
      'loading',
    );
    if (state !== 'loading' && !done()) return watch.mainResponse;
  }
}

export interface OpenOptions {
  /** Absolute time (ms) by which the page must be settled. */
  deadline: number;
  /** From the guard proxy: whether it refused a non-public address since `t`. */
  blockedSince?(t: number): boolean;
  times?: PhaseTimes;
  /** Called once the main document is parsed: the page then mostly waits (the pool uses it). */
  onParsed?(): void;
  /** Told each step as it starts (the pool names it if the page runs out of time). */
  step?(name: string): void;
  /** The settle rule's figures: SETTLE unless given. */
  settle?: Settle;
}

/**
 * Navigate and settle (the rule in SETTLE): DOMContentLoaded within the page's time, else
 * `timeout`; then the load event (capped), fonts (capped), documents the page moves on to (meta
 * refresh, script redirects; each through the guard proxy), and a quiet network (capped).
 * Returns the main document's answer.
 */
export async function openPage(page: Page, watch: PageWatch, url: string, opts: OpenOptions): Promise<HTTPResponse | null> {
  const S = opts.settle ?? SETTLE;
  const t0 = Date.now();
  const left = () => Math.max(500, opts.deadline - Date.now());
  let resp: HTTPResponse | null;
  const tNav = performance.now();
  const step = opts.step ?? (() => {});
  step('navigation (to DOMContentLoaded)');
  // Firefox (BiDi) keeps a navigation that the poll below settled waiting on its own timer until
  // `timeout`, holding the page's objects that long (and a process that should end alive); the
  // abort in `finally` lets go of it. Chromium's goto does not take the signal and needs none.
  const letGo = new AbortController();
  const navigation = page.goto(url, { waitUntil: 'domcontentloaded', timeout: left(), signal: letGo.signal });
  let parsed = false;
  try {
    resp = await watch.race(Promise.race([navigation, mainDocumentParsed(page, watch, () => parsed)]));
  } catch (e) {
    if (e instanceof TaskFailure) throw e;
    // A download aborts the navigation a moment before or after its answer is seen; under load
    // the answer came more than 100 ms after the abort and the failure lost its reason. An
    // aborted navigation waits up to 2 s for that answer, any other failure 100 ms.
    await watch.failureWithin(ABORTED.test(String((e as Error)?.message)) ? 2000 : 100);
    if (watch.failure) throw watch.failure;
    throw navigationFailure(e, opts.blockedSince?.(t0));
  } finally {
    parsed = true;
    navigation.catch(() => {}); // settled by the poll; its own timeout later is of no interest
    letGo.abort();
    opts.times?.add('navigation (to DOMContentLoaded)', performance.now() - tNav);
  }
  opts.onParsed?.();
  const tSettle = performance.now();
  for (let hop = 0; ; hop++) {
    const before = watch.documents;
    let state: LoadState | 'stuck' | 'moved';
    try {
      const loadCap = Math.min(S.loadCapMs, left());
      step(hop ? `the load event and fonts (document ${hop + 1})` : 'the load event and fonts');
      state = await watch.race(
        within(waitLoad(page, loadCap, Math.min(S.fontsCapMs, left())), loadCap + S.fontsCapMs + S.stuckMs, 'stuck' as const),
      );
    } catch (e) {
      if (e instanceof TaskFailure) throw e;
      if (!MOVED.test(String((e as Error)?.message)))
        throw new TaskFailure('render_failed', `the page could not be inspected: ${cut(String((e as Error)?.message ?? e))}`);
      state = 'moved';
    }
    if (state === 'stuck') throw new TaskFailure('timeout', "the page's main thread stopped answering (a script that does not end)");
    if (state !== 'moved' && !state.loaded) watch.report.loadCapped = true;
    if (state !== 'moved' && state.refresh !== null && state.refresh <= S.metaRefreshMaxSec && hop < S.maxHops) {
      // the document count cannot tell: the refresh may have been requested before it was read
      step('a meta refresh');
      if (await watch.race(otherDocumentParsed(page, state.origin, Math.min(left(), state.refresh * 1000 + 5000)))) state = 'moved';
    } else {
      // capped by the rule, not by the page's deadline: the result says so (of the last document)
      const byDeadline = left() < S.quietCapMs;
      step('a quiet network');
      if ((await watch.race(watch.quiet(S.quietMs, Math.min(S.quietCapMs, left())))) === 'capped' && !byDeadline)
        watch.report.networkCapped = true;
      else delete watch.report.networkCapped;
    }
    if (watch.documents === before && state !== 'moved') break;
    if (hop >= S.maxHops) break;
    watch.report.hops = hop + 1;
    // a hop refused by the guard over https leaves Chromium on its error page
    if (opts.blockedSince?.(t0) && !/^https?:/i.test(page.url()))
      throw new TaskFailure('blocked_address', 'the page or one of its redirects points at a non-public address');
  }
  // A script that starts its endless loop just after the load event has passed every check so far,
  // and would hold the capture (which needs the main thread) until the page's timeout: the page's
  // own address is asked for here, within the stuck limit.
  step("the main thread's answer");
  const askHref = () =>
    within(
      quietEval<string>(page, 'location.href').catch(() => page.url()),
      Math.min(S.stuckMs, left()),
      null,
    );
  let href: string | null = null;
  for (let i = 0; i < UNANSWERED_TO_FAIL && href === null; i++) href = await watch.race(askHref());
  if (href === null) throw new TaskFailure('timeout', "the page's main thread stopped answering (a script that does not end)");
  watch.finalUrl = href;
  // a meta refresh of 0 s or an early script redirect can move on before the loop above takes its
  // first count, and is then not counted there (seen in Firefox under load)
  const followed = Math.min(S.maxHops, watch.answeredDocuments - 1);
  if (followed > (watch.report.hops ?? 0)) watch.report.hops = followed;
  watch.watchMainThread(S.stuckMs);
  opts.times?.add('settle (load, fonts, quiet network)', performance.now() - tSettle);
  if (/^chrome-error:/i.test(page.url()))
    throw opts.blockedSince?.(t0)
      ? new TaskFailure('blocked_address', 'the page or one of its redirects points at a non-public address')
      : new TaskFailure('unreachable', 'a redirect of the page could not be reached');
  return resp;
}

const BLOCKED = () => new TaskFailure('blocked_address', 'the page or one of its redirects points at a non-public address');

/**
 * Browser error text of a failed navigation → the result's error code. `unreachable` only when
 * the target could not be reached (name, connection, TLS, the guard proxy's upstream); `timeout`
 * when it answered too slowly; `render_failed` for everything else (a download, an aborted
 * navigation). The guard proxy answers a refused CONNECT with 403 (blocked) or 502 (unreachable);
 * Firefox tells them apart, Chromium does not, so for a failed tunnel `blocked` says whether the
 * proxy refused an address meanwhile.
 */
export function navigationFailure(e: unknown, blocked = false): TaskFailure {
  const m = cut(String((e as Error)?.message ?? e));
  if (/NS_ERROR_PROXY_FORBIDDEN|blocked_address/i.test(m)) return BLOCKED();
  if (/ERR_TUNNEL_CONNECTION_FAILED|ERR_PROXY_CONNECTION_FAILED|NS_ERROR_PROXY/i.test(m))
    return blocked ? BLOCKED() : new TaskFailure('unreachable', m);
  if (
    /ERR_NAME_NOT_RESOLVED|ERR_CONNECTION|ERR_ADDRESS|NS_ERROR_UNKNOWN_HOST|NS_ERROR_CONNECTION_REFUSED|NS_ERROR_NET_(RESET|REFUSED|TIMEOUT|INTERRUPT)|NS_ERROR_OFFLINE|ERR_EMPTY_RESPONSE|ERR_SSL|SEC_ERROR|SSL_ERROR|ERR_CERT|ERR_INTERNET_DISCONNECTED|ERR_TIMED_OUT|ERR_UNSAFE_PORT|NS_ERROR_PORT_ACCESS_NOT_ALLOWED/i.test(
      m,
    )
  )
    return new TaskFailure('unreachable', m);
  if (/timeout|timed out/i.test(m)) return new TaskFailure('timeout', m);
  if (ABORTED.test(m))
    return new TaskFailure('render_failed', `the navigation was abandoned (${m}): a download, or a page that cancelled itself`);
  if (/ERR_TOO_MANY_REDIRECTS|NS_ERROR_REDIRECT_LOOP/i.test(m))
    return new TaskFailure('render_failed', `the page redirects in a loop (${m})`);
  return new TaskFailure('render_failed', m);
}
