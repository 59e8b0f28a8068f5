// shots `options` that shape the page before it is captured and the file it becomes (issue 43):
// their schema, the checks made before any charge, what each costs, and what each browser engine
// cannot do. What crosses to browser-pool is `ShotControls` in the task's params.
import { Type as T } from '@sinclair/typebox';
import { ApiError } from '../errors.ts';
import type { Config } from '../config/index.ts';
import {
  Actions,
  ACTIONS_TOTAL_MS,
  Cookies,
  FORBIDDEN_HEADER,
  MAX_PAGE_SCRIPT_BYTES,
  RequestHeaders,
  Selector,
  SelectorList,
  type PageAction,
  type PageCookie,
} from '../schemas/page-controls.ts';
import { checkSelectors } from '../schemas/selector-check.ts';

export const SHOT_FORMATS = ['png', 'jpeg', 'webp'] as const;
export type ShotFormat = (typeof SHOT_FORMATS)[number];
export const FORMAT_EXT: Record<ShotFormat, string> = { png: 'png', jpeg: 'jpg', webp: 'webp' };
export const FORMAT_TYPE: Record<ShotFormat, string> = { png: 'image/png', jpeg: 'image/jpeg', webp: 'image/webp' };
export const DEFAULT_QUALITY = 80;
export const THUMB_WIDTHS = { min: 100, max: 800, default: 400 };

/** The option fields (spread into ShotsBody.options). */
export const ShotControlFields = {
  selector: T.Optional(
    T.String({
      ...Selector,
      description:
        'Capture only the first element this selector matches: its border box, rounded to whole CSS pixels, in every browser and version. Not with fullPage. With compare, crops of different sizes are compared over their common top-left area (the rest is reported as uncompared).',
    }),
  ),
  hideSelectors: T.Optional(
    SelectorList('Elements hidden (display: none) before the capture; one that matches nothing is not an error (its count is 0).'),
  ),
  css: T.Optional(
    T.String({ maxLength: MAX_PAGE_SCRIPT_BYTES, description: 'A style sheet added to the page before the capture; at most 16 KB.' }),
  ),
  js: T.Optional(
    T.String({
      maxLength: MAX_PAGE_SCRIPT_BYTES,
      description: 'A script run in the page before the capture (as the body of an async function, awaited); at most 16 KB.',
    }),
  ),
  click: T.Optional(T.String({ ...Selector, description: 'An element clicked before the capture.' })),
  waitFor: T.Optional(T.String({ ...Selector, description: 'Wait until an element matches this selector before anything else is done.' })),
  actions: T.Optional(Actions),
  format: T.Optional(
    T.Union(
      SHOT_FORMATS.map((f) => T.Literal(f)),
      { description: 'The image format: png (default), jpeg or webp.' },
    ),
  ),
  quality: T.Optional(T.Integer({ minimum: 1, maximum: 100, description: 'jpeg and webp quality, 1 to 100; default 80.' })),
  thumbWidth: T.Optional(
    T.Integer({
      minimum: THUMB_WIDTHS.min,
      maximum: THUMB_WIDTHS.max,
      description: 'Width of the WebP thumbnail, 100 to 800; default 400.',
    }),
  ),
  userAgent: T.Optional(
    T.String({ minLength: 1, maxLength: 512, pattern: '^[\\x20-\\x7e]+$', description: 'The User-Agent the browser sends and shows.' }),
  ),
  locale: T.Optional(
    T.String({
      pattern: '^[A-Za-z]{2,3}(-[A-Za-z0-9]{2,8}){0,3}$',
      maxLength: 35,
      description: 'A BCP 47 language tag, e.g. de-DE (Accept-Language and navigator.language).',
    }),
  ),
  timezone: T.Optional(T.String({ minLength: 1, maxLength: 64, description: 'An IANA time zone, e.g. Europe/Berlin.' })),
  headers: T.Optional(RequestHeaders),
  cookies: T.Optional(Cookies),
  blockAds: T.Optional(
    T.Boolean({ description: 'Block requests to ad and tracker hosts (EasyList, kept in the repository; docs/shots.md).' }),
  ),
};

/** What browser-pool gets in a task's `options` besides the older fields. */
export interface ShotControls {
  selector?: string;
  hideSelectors?: string[];
  css?: string;
  js?: string;
  click?: string;
  waitFor?: string;
  actions?: PageAction[];
  format: ShotFormat;
  quality: number;
  thumbWidth: number;
  userAgent?: string;
  locale?: string;
  timezone?: string;
  headers?: Record<string, string>;
  cookies?: PageCookie[];
  /** The names of the caller's headers and cookies: what the job keeps (their values ride in the task message only). */
  headerNames?: string[];
  cookieNames?: string[];
  blockAds?: boolean;
}

/** What a shots task carries in its message only (`params.secret`), never in the job document. */
export interface ShotSecrets {
  headers?: Record<string, string>;
  cookies?: PageCookie[];
}

export type ShotControlOptions = Partial<Omit<ShotControls, 'format' | 'quality' | 'thumbWidth'>> & {
  format?: ShotFormat;
  quality?: number;
  thumbWidth?: number;
  fullPage?: boolean;
};

/** Options a browser engine cannot honour: the catalogue lists them (`lacks`) and a request using one is a 400. */
export const ENGINE_LACKS: Record<'chromium' | 'gecko', (keyof ShotControls)[]> = {
  chromium: [],
  // Firefox over WebDriver BiDi: puppeteer has no locale override for it
  gecko: ['locale'],
};

/** Page work before the capture: priced as `pricing.shots.scripted`. */
const SCRIPTED: (keyof ShotControls)[] = ['css', 'js', 'click', 'waitFor', 'actions'];

/** Every selector of the options, with the field it came from (checks, counts). */
export function selectorsOf(o: ShotControlOptions): { field: string; selector: string }[] {
  const out: { field: string; selector: string }[] = [];
  if (o.waitFor) out.push({ field: 'options.waitFor', selector: o.waitFor });
  (o.actions ?? []).forEach((a, i) => {
    if ('selector' in a) out.push({ field: `options.actions[${i}].selector`, selector: a.selector });
    if (a.type === 'scroll' && a.to !== 'bottom') out.push({ field: `options.actions[${i}].to`, selector: a.to });
  });
  if (o.click) out.push({ field: 'options.click', selector: o.click });
  (o.hideSelectors ?? []).forEach((s, i) => out.push({ field: `options.hideSelectors[${i}]`, selector: s }));
  if (o.selector) out.push({ field: 'options.selector', selector: o.selector });
  return out;
}

const bytes = (s: string) => Buffer.byteLength(s, 'utf8');

/**
 * The checks no schema can make (a 400 bad_request before any charge), the extra price per shot,
 * and the task's controls. `engines`: the engines of the browsers asked for.
 */
export async function planShotControls(
  o: ShotControlOptions,
  pricing: Config['pricing']['shots'],
  engines: { id: string; engine: 'chromium' | 'gecko'; lacks?: string[] }[],
): Promise<{ controls: ShotControls; extraPrice: number; secret?: ShotSecrets }> {
  if (o.selector && o.fullPage)
    throw new ApiError('bad_request', 'options.selector captures one element: it cannot be combined with options.fullPage');
  for (const f of ['css', 'js'] as const) {
    const v = o[f];
    if (v !== undefined && bytes(v) > MAX_PAGE_SCRIPT_BYTES)
      throw new ApiError('bad_request', `options.${f} is ${bytes(v)} bytes; at most ${MAX_PAGE_SCRIPT_BYTES}`);
  }
  if (o.js !== undefined) {
    try {
      // compiled, never run: a syntax error is the caller's, said before any charge
      new (Object.getPrototypeOf(async () => {}).constructor as FunctionConstructor)(o.js);
    } catch (e) {
      throw new ApiError('bad_request', `options.js does not compile: ${String((e as Error).message).slice(0, 200)}`);
    }
  }
  if (o.actions) {
    const waits = o.actions.reduce((s, a) => s + ('ms' in a ? a.ms : 0), 0);
    if (waits > ACTIONS_TOTAL_MS) throw new ApiError('bad_request', `options.actions wait ${waits} ms in all; at most ${ACTIONS_TOTAL_MS}`);
  }
  for (const name of Object.keys(o.headers ?? {}))
    if (FORBIDDEN_HEADER.test(name))
      throw new ApiError('bad_request', `options.headers: ${name} may not be set (use options.cookies for cookies)`, { header: name });
  if (o.timezone !== undefined) {
    try {
      new Intl.DateTimeFormat('en', { timeZone: o.timezone });
    } catch {
      throw new ApiError('bad_request', `options.timezone: ${JSON.stringify(o.timezone)} is not an IANA time zone`);
    }
  }
  if (o.quality !== undefined && (o.format ?? 'png') === 'png')
    throw new ApiError('bad_request', 'options.quality applies to jpeg and webp only');
  for (const { id, engine, lacks: offered } of engines) {
    const lacks = (offered ?? ENGINE_LACKS[engine]).filter((k) => o[k as keyof ShotControlOptions] !== undefined);
    if (lacks.length)
      throw new ApiError(
        'bad_request',
        `browser ${id} cannot honour options.${lacks.join(', options.')} (see lacks in GET /v1/services/shots)`,
        {
          browser: id,
          lacks,
        },
      );
  }
  await checkSelectors(selectorsOf(o));
  const controls: ShotControls = {
    format: o.format ?? 'png',
    quality: o.quality ?? DEFAULT_QUALITY,
    thumbWidth: o.thumbWidth ?? THUMB_WIDTHS.default,
  };
  for (const k of ['selector', 'hideSelectors', 'css', 'js', 'click', 'waitFor', 'actions', 'userAgent', 'locale', 'timezone'] as const)
    if (o[k] !== undefined) (controls as unknown as Record<string, unknown>)[k] = o[k];
  // the values of headers and cookies go in the task message only; the job (its request and its
  // tasks' params) keeps their names
  const secret: ShotSecrets = {};
  if (o.headers && !Array.isArray(o.headers) && Object.keys(o.headers).length) {
    secret.headers = o.headers;
    controls.headerNames = Object.keys(o.headers);
    (o as Record<string, unknown>).headers = controls.headerNames;
  }
  if (o.cookies?.length && typeof o.cookies[0] === 'object') {
    secret.cookies = o.cookies;
    controls.cookieNames = o.cookies.map((c) => c.name);
    (o as Record<string, unknown>).cookies = controls.cookieNames;
  }
  if (o.blockAds) controls.blockAds = true;
  const extraPrice =
    (SCRIPTED.some((k) => o[k as keyof ShotControlOptions] !== undefined) ? pricing.scripted : 0) + (o.blockAds ? pricing.blockAds : 0);
  return { controls, extraPrice, ...(secret.headers || secret.cookies ? { secret } : {}) };
}
