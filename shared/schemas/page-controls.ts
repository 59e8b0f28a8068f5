// What a caller may do to a page before it is converted (websitepro) or captured (shots): the
// request fields both services share, one definition each (TypeBox: validation, types, OpenAPI).
// The service bodies spread these; browser-pool's endpoints take them as they are.
import { Type as T, type Static } from '@sinclair/typebox';

/** A CSS selector as the caller wrote it; syntax is checked at plan time (a 400 before any charge). */
// no control characters: no selector a page can match holds one, and they are refused as garbage
export const Selector = T.String({ minLength: 1, maxLength: 512, pattern: '^[^\\u0000-\\u001f\\u007f]+$', description: 'A CSS selector.' });
export const SelectorList = (description: string) => T.Array(Selector, { minItems: 1, maxItems: 20, description });

export const MAX_ACTIONS = 20;
export const ACTIONS_TOTAL_MS = 30_000;
export const MAX_PAGE_SCRIPT_BYTES = 16 * 1024;

/** One step run in the page before conversion or capture; the same format for both services. */
export const Action = T.Union(
  [
    T.Object({ type: T.Literal('click'), selector: Selector }, { additionalProperties: false }),
    T.Object({ type: T.Literal('type'), selector: Selector, text: T.String({ maxLength: 2000 }) }, { additionalProperties: false }),
    T.Object(
      { type: T.Literal('press'), key: T.String({ minLength: 1, maxLength: 32, description: 'A key name, e.g. Enter, Tab, ArrowDown.' }) },
      {
        additionalProperties: false,
      },
    ),
    T.Object(
      {
        type: T.Literal('scroll'),
        to: T.Union([T.Literal('bottom'), Selector], { description: '`bottom`, or a selector to scroll into view.' }),
      },
      { additionalProperties: false },
    ),
    T.Object({ type: T.Literal('wait'), selector: Selector }, { additionalProperties: false }),
    T.Object({ type: T.Literal('wait'), ms: T.Integer({ minimum: 0, maximum: ACTIONS_TOTAL_MS }) }, { additionalProperties: false }),
  ],
  { description: 'click, type, press, scroll or wait (for a selector or a number of milliseconds).' },
);
export const Actions = T.Array(Action, {
  maxItems: MAX_ACTIONS,
  description: `Run in order before conversion or capture; at most ${MAX_ACTIONS} steps and ${ACTIONS_TOTAL_MS / 1000} s in all. A selector that matches nothing fails the result as selector_not_found (refunded).`,
});
export type PageAction = Static<typeof Action>;

/**
 * Request headers and cookies for the target: sent only to the target's origin (a redirect back to
 * it included), never to another origin, never stored in the job, its list, events, logs, webhooks or
 * metrics (the job shows their names only). Forbidden names are refused with 400 bad_request.
 */
export const RequestHeaders = T.Record(T.String({ pattern: "^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,64}$" }), T.String({ maxLength: 4096 }), {
  maxProperties: 20,
  description: 'Sent only to the target origin; never stored. Host, Content-Length, hop-by-hop and Proxy-* headers are refused.',
});
export const Cookie = T.Object(
  {
    name: T.String({ minLength: 1, maxLength: 256, pattern: '^[^\\s;=,]+$' }),
    value: T.String({ maxLength: 4096 }),
  },
  { additionalProperties: false },
);
export const Cookies = T.Array(Cookie, { maxItems: 50, description: 'Sent only to the target origin; never stored.' });
export type PageCookie = Static<typeof Cookie>;

/** Header names a caller may never set: the request's own framing, hop-by-hop, and the proxy's. */
export const FORBIDDEN_HEADER =
  /^(host|content-length|transfer-encoding|connection|keep-alive|upgrade|te|trailer|expect|proxy-.*|cookie)$/i;

export const PDF_FORMATS = ['A3', 'A4', 'A5', 'Letter', 'Legal', 'Tabloid'] as const;
const Margin = T.String({ pattern: '^\\d{1,3}(\\.\\d{1,2})?(px|in|cm|mm)$', description: 'A length: px, in, cm or mm.' });
export const PdfOptions = T.Object(
  {
    format: T.Optional(
      T.Union(
        PDF_FORMATS.map((f) => T.Literal(f)),
        { description: 'Paper size; default A4.' },
      ),
    ),
    landscape: T.Optional(T.Boolean()),
    margin: T.Optional(
      T.Object(
        { top: T.Optional(Margin), right: T.Optional(Margin), bottom: T.Optional(Margin), left: T.Optional(Margin) },
        { additionalProperties: false },
      ),
    ),
    scale: T.Optional(T.Number({ minimum: 0.1, maximum: 2 })),
    printBackground: T.Optional(T.Boolean({ description: 'Default true.' })),
    pageRanges: T.Optional(T.String({ pattern: '^\\s*\\d+(\\s*-\\s*\\d+)?(\\s*,\\s*\\d+(\\s*-\\s*\\d+)?)*\\s*$', maxLength: 100 })),
    headerTemplate: T.Optional(
      T.String({ maxLength: MAX_PAGE_SCRIPT_BYTES, description: 'HTML; classes pageNumber, totalPages, date, title, url are filled in.' }),
    ),
    footerTemplate: T.Optional(
      T.String({ maxLength: MAX_PAGE_SCRIPT_BYTES, description: 'HTML; classes pageNumber, totalPages, date, title, url are filled in.' }),
    ),
  },
  { additionalProperties: false },
);
export type PdfOptionsDoc = Static<typeof PdfOptions>;

/** How long a page may take (seconds) when the caller says so. */
export const PageTimeout = T.Integer({ minimum: 1, maximum: 60, description: 'Seconds, 1 to 60.' });

/**
 * What browser-pool is asked to do to a page before it renders, prints or captures it: the part of
 * a request that crosses to browser-pool. Headers and cookies ride in the task only; the task
 * message is gone once the task ends (TASKS is a work queue).
 */
export interface PageControls {
  removeSelectors?: string[];
  waitFor?: string;
  timeoutMs?: number;
  actions?: PageAction[];
  headers?: Record<string, string>;
  cookies?: PageCookie[];
}

/** Per result: how many elements each selector of the request matched (`selectors` on the result). */
export type SelectorCounts = Record<string, number>;

/** The longest any caller's `actions` may wait in all (their `wait` steps' ms added up), checked at plan time. */
export const actionsWaitMs = (actions: PageAction[] | undefined) => (actions ?? []).reduce((s, a) => s + ('ms' in a ? a.ms : 0), 0);

/** Every selector a set of controls names, in the order the request gives them (counted per result). */
export function controlSelectors(c: {
  removeSelectors?: string[];
  targetSelectors?: string[];
  waitFor?: string;
  actions?: PageAction[];
}): string[] {
  const out = [...(c.removeSelectors ?? []), ...(c.targetSelectors ?? [])];
  if (c.waitFor) out.push(c.waitFor);
  for (const a of c.actions ?? []) {
    if ('selector' in a) out.push(a.selector);
    else if (a.type === 'scroll' && a.to !== 'bottom') out.push(a.to);
  }
  return [...new Set(out)];
}
