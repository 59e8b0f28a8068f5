import { Type as T, type Static } from '@sinclair/typebox';
import { OBJECT_STORES, subjects } from '../names.ts';
import { ApiError } from '../errors.ts';
import { readCatalogue } from '../catalogue.ts';
import type { ServiceModule, PlanItem } from './types.ts';
import { parseTargetUrl, hostOf, precheckTarget } from '../outbound/index.ts';
import { parseWebhook, precheckWebhook, WebhookField } from '../webhook.ts';
import { FORMAT_EXT, planShotControls, ShotControlFields, type ShotControlOptions, type ShotFormat } from './shots-options.ts';

/**
 * Viewport presets (CSS pixels). `fhd`, `qhd`, `hd` are the usual screen sizes; `laptop` (1440x900),
 * `tablet` (820x1180, iPad Air portrait) and `phone` (390x844, iPhone 12-15) are our choice
 * (docs/shots.md). They size a desktop browser's window; the `mobile` browser emulates a phone.
 */
export const VIEWPORT_PRESETS: Record<string, { w: number; h: number }> = {
  fhd: { w: 1920, h: 1080 },
  qhd: { w: 2560, h: 1440 },
  hd: { w: 1280, h: 720 },
  laptop: { w: 1440, h: 900 },
  tablet: { w: 820, h: 1180 },
  phone: { w: 390, h: 844 },
};
export const VIEWPORT_LIMITS = { minW: 320, maxW: 3840, minH: 320, maxH: 2400, max: 3 };
export const DEFAULT_VIEWPORT = '1920x1080';
export const SCHEMES = ['light', 'dark'] as const;
export const DELAYS = [0, 2, 5] as const;
const MAX_VERSIONS = 10;

const BrowserItem = T.Union([
  T.String({ description: 'Browser id: its newest version.' }),
  // the versions cap is checked in plan(): inside the union a schema error would surface as the
  // string form's type error (unknown_browser) rather than as a count out of range
  T.Object({ id: T.String(), versions: T.Array(T.String(), { minItems: 1, description: 'At most 10.' }) }, { additionalProperties: false }),
]);
const Viewport = T.Union([
  T.String({ description: 'WIDTHxHEIGHT or a preset id: ' + Object.keys(VIEWPORT_PRESETS).join(', ') }),
  T.Object(
    { w: T.Integer({ minimum: 320, maximum: 3840 }), h: T.Integer({ minimum: 320, maximum: 2400 }) },
    { additionalProperties: false },
  ),
]);

export const ShotsBody = T.Object(
  {
    url: T.String({ description: 'Public http(s) URL', maxLength: 2048 }),
    browsers: T.Array(BrowserItem, { minItems: 1, maxItems: 20 }),
    viewports: T.Optional(T.Array(Viewport, { maxItems: 3, description: 'Desktop browsers only; default 1920x1080.' })),
    schemes: T.Optional(T.Array(T.Union(SCHEMES.map((s) => T.Literal(s))), { minItems: 1, maxItems: 2, description: 'Default [light].' })),
    options: T.Optional(
      T.Object(
        {
          fullPage: T.Optional(T.Boolean()),
          retina: T.Optional(T.Boolean()),
          hideCookieBanner: T.Optional(T.Boolean()),
          delay: T.Optional(
            T.Union(
              DELAYS.map((d) => T.Literal(d)),
              { description: 'Seconds to wait after load: 0, 2 or 5.' },
            ),
          ),
          compare: T.Optional(
            T.Boolean({
              description:
                'Also compare every pair of screenshots of the same viewport and scheme: a result `diff_<a>_vs_<b>_<WxH>_<scheme>.png` each (differing pixels in red over a faded copy of the first) with a `compare` summary (differing and perceptual percentages, largest regions). Priced per pair (pricing.shots.comparePair).',
            }),
          ),
          ...ShotControlFields,
        },
        { additionalProperties: false },
      ),
    ),
    webhook: T.Optional(WebhookField),
  },
  { $id: 'ShotsBody', additionalProperties: false },
);
export type ShotsRequest = Static<typeof ShotsBody>;

/** What a browser-pool instance advertises for each browser it really launched. */
export interface BrowserOffer {
  id: string;
  name: string;
  engine: 'chromium' | 'gecko';
  versions: string[]; // newest first
  /** Mobile emulation: its own viewport; request viewports do not apply. */
  mobile?: { w: number; h: number; deviceScaleFactor: number };
  /** Options this browser cannot honour (a request using one is a 400). */
  lacks?: string[];
}

export function parseViewport(v: unknown): { w: number; h: number } {
  let w: number, h: number;
  if (typeof v === 'string') {
    const preset = VIEWPORT_PRESETS[v];
    if (preset) return preset;
    const m = /^(\d{1,5})x(\d{1,5})$/.exec(v);
    if (!m)
      throw new ApiError(
        'bad_viewport',
        `viewport ${JSON.stringify(v)} is not WIDTHxHEIGHT or a preset (${Object.keys(VIEWPORT_PRESETS).join(', ')})`,
      );
    w = Number(m[1]);
    h = Number(m[2]);
  } else if (v && typeof v === 'object' && 'w' in v && 'h' in v) {
    w = Number((v as { w: unknown }).w);
    h = Number((v as { h: unknown }).h);
  } else {
    throw new ApiError('bad_viewport', 'a viewport is a string or {w, h}');
  }
  const L = VIEWPORT_LIMITS;
  if (!Number.isInteger(w) || !Number.isInteger(h) || w < L.minW || w > L.maxW || h < L.minH || h > L.maxH) {
    throw new ApiError('bad_viewport', `viewport ${w}x${h} is outside ${L.minW}..${L.maxW} x ${L.minH}..${L.maxH}`);
  }
  return { w, h };
}

/** Every browser offered by live browser-pool instances, versions merged newest first. */
export function mergeOffers(entries: { catalogue: Record<string, unknown> }[]): BrowserOffer[] {
  const byId = new Map<string, BrowserOffer>();
  for (const e of entries) {
    for (const b of (e.catalogue.browsers as BrowserOffer[] | undefined) ?? []) {
      const cur = byId.get(b.id);
      if (!cur) byId.set(b.id, { ...b, versions: [...b.versions] });
      else cur.versions = [...new Set([...cur.versions, ...b.versions])];
    }
  }
  for (const b of byId.values()) b.versions.sort((a, z) => Number(z) - Number(a) || z.localeCompare(a));
  return [...byId.values()].sort((a, b) => a.id.localeCompare(b.id));
}

/** Most compared pairs in one job (options.compare): n screenshots of one viewport and scheme make n(n-1)/2. */
export const COMPARE_MAX_PAIRS = 45;

export const diffKey = (
  a: { browser: string; version: string },
  b: { browser: string; version: string },
  vp: { w: number; h: number },
  scheme: string,
) => `diff_${a.browser}-${a.version}_vs_${b.browser}-${b.version}_${vp.w}x${vp.h}_${scheme}.png`;

export const shotKey = (browserId: string, version: string, vp: { w: number; h: number }, scheme: string, format: ShotFormat = 'png') =>
  `${browserId}-${version}_${vp.w}x${vp.h}_${scheme}.${FORMAT_EXT[format]}`;

/**
 * One diff item per pair of screenshots with the same viewport, scheme and kind of browser (a phone's
 * pixel ratio differs from a desktop window's), in request order; each waits for its two shots.
 */
function comparePairs(
  shotItems: { key: string; task: { params: Record<string, unknown> } }[],
  price: number,
  mobile: Set<string>,
): PlanItem[] {
  const groups = new Map<string, typeof shotItems>();
  for (const it of shotItems) {
    const q = it.task.params as { browser: string; viewport: { w: number; h: number }; scheme: string; options: { retina: boolean } };
    const g = `${q.viewport.w}x${q.viewport.h}_${q.scheme}_${q.options.retina ? 'r' : ''}${mobile.has(q.browser) ? 'm' : ''}`;
    (groups.get(g) ?? groups.set(g, []).get(g)!).push(it);
  }
  const pairs: PlanItem[] = [];
  for (const g of groups.values()) {
    for (let i = 0; i < g.length; i++) {
      for (let j = i + 1; j < g.length; j++) {
        const a = g[i]!.task.params as { browser: string; version: string; viewport: { w: number; h: number }; scheme: string };
        const b = g[j]!.task.params as typeof a;
        pairs.push({
          key: diffKey(a, b, a.viewport, a.scheme),
          price,
          after: [g[i]!.key, g[j]!.key],
          task: { subject: subjects.taskCompare, params: { a: g[i]!.key, b: g[j]!.key } },
        });
      }
    }
  }
  if (pairs.length > COMPARE_MAX_PAIRS)
    throw new ApiError(
      'bad_request',
      `options.compare: ${pairs.length} pairs; at most ${COMPARE_MAX_PAIRS} per job (fewer browsers or versions)`,
    );
  if (!pairs.length)
    throw new ApiError(
      'bad_request',
      'options.compare needs at least two screenshots of the same viewport and scheme (two browsers or versions)',
    );
  return pairs;
}

export const shots: ServiceModule<ShotsRequest> = {
  name: 'shots',
  title: 'Cross-browser screenshots',
  description: 'PNG screenshots in real browsers and versions, viewports, light and dark, with WebP thumbnails and a zip.',
  body: ShotsBody,
  store: OBJECT_STORES.results,
  retentionSeconds: (c) => c.retention.shots,
  errorCode(err) {
    if (err.instancePath === '/url') return 'bad_url';
    if (err.instancePath === '/webhook') return 'bad_webhook';
    if (err.instancePath.startsWith('/viewports')) return 'bad_viewport';
    // a count outside the caps (1..20 browsers, 1..10 versions) is a malformed request, not an unknown browser
    if (err.instancePath.startsWith('/browsers'))
      return err.keyword === 'minItems' || err.keyword === 'maxItems' ? 'bad_request' : 'unknown_browser';
    return 'bad_request';
  },
  async plan(body, { config, catalogueKv }) {
    const url = parseTargetUrl(body.url);
    if (body.webhook !== undefined) parseWebhook(body.webhook);
    const vps = (body.viewports?.length ? body.viewports : [DEFAULT_VIEWPORT]).map(parseViewport);
    if (vps.length > VIEWPORT_LIMITS.max) throw new ApiError('bad_viewport', `at most ${VIEWPORT_LIMITS.max} viewports`);
    const viewports = [...new Map(vps.map((v) => [`${v.w}x${v.h}`, v])).values()];
    const schemes = [...new Set(body.schemes?.length ? body.schemes : ['light'])];
    const offers = mergeOffers(await readCatalogue(catalogueKv, 'shots'));
    if (!offers.length) throw new ApiError('service_unavailable', 'no browser-pool instance is running');
    const opts = body.options ?? {};
    const p = config.pricing.shots;
    const asked = body.browsers.map((b) => offers.find((o) => o.id === (typeof b === 'string' ? b : b.id))).filter((o) => !!o);
    const { controls, extraPrice, secret } = await planShotControls(opts as ShotControlOptions, p, asked);
    // a phone has its own pixel ratio: `retina` neither applies to nor is charged for it
    const priceOf = (mobile: boolean) =>
      p.screenshot + (opts.fullPage ? p.fullPage : 0) + (opts.retina && !mobile ? p.retina : 0) + extraPrice;
    const items = new Map<
      string,
      { key: string; price: number; task: { subject: string; params: Record<string, unknown>; secret?: Record<string, unknown> } }
    >();
    for (const item of body.browsers) {
      const id = typeof item === 'string' ? item : item.id;
      const offer = offers.find((o) => o.id === id);
      if (!offer)
        throw new ApiError('unknown_browser', `browser ${JSON.stringify(id)} is not offered; see GET /v1/services/shots`, {
          available: offers.map((o) => o.id),
        });
      const versions = typeof item === 'string' ? [offer.versions[0]!] : item.versions;
      if (versions.length > MAX_VERSIONS) throw new ApiError('bad_request', `at most ${MAX_VERSIONS} versions per browser`);
      for (const version of versions) {
        if (!offer.versions.includes(version))
          throw new ApiError('unknown_browser', `browser ${id} has no version ${JSON.stringify(version)}`, { versions: offer.versions });
        for (const vp of offer.mobile ? [{ w: offer.mobile.w, h: offer.mobile.h }] : viewports) {
          for (const scheme of schemes) {
            const key = shotKey(id, version, vp, scheme, controls.format);
            items.set(key, {
              key,
              price: priceOf(!!offer.mobile),
              task: {
                subject: subjects.taskShots(id, version),
                params: {
                  url: url.href,
                  browser: id,
                  version,
                  viewport: vp,
                  scheme,
                  options: {
                    fullPage: !!opts.fullPage,
                    retina: !!opts.retina && !offer.mobile,
                    hideCookieBanner: !!opts.hideCookieBanner,
                    delay: opts.delay ?? 0,
                    ...controls,
                  },
                },
                ...(secret ? { secret: { ...secret } } : {}),
              },
            });
          }
        }
      }
    }
    const shotItems = [...items.values()];
    return {
      target: hostOf(url),
      items: opts.compare
        ? [...shotItems, ...comparePairs(shotItems, p.comparePair, new Set(offers.filter((o) => o.mobile).map((o) => o.id)))]
        : shotItems,
    };
  },
  /** The target resolves to public addresses and accepts a connection (blocked_address, unreachable). */
  async precheck(body, _plan, { config, walletId }) {
    await precheckTarget(body.url, config, undefined, walletId);
    if (body.webhook !== undefined) await precheckWebhook(body.webhook, config);
  },
};
