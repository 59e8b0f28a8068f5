// websitepro's page controls (issue 43): the body fields (spread into WebsiteproBody from the shared
// definitions in shared/schemas/page-controls.ts) and what plan() checks and makes of them before
// anything is charged: selector syntax, forbidden header names, the actions' total wait, PDF
// template sizes; the task's `controls`; the credentials taken out of the stored request.
import { checkSelectors } from '../schemas/selector-check.ts';
import { Type as T } from '@sinclair/typebox';
import { ApiError } from '../errors.ts';
import {
  ACTIONS_TOTAL_MS,
  Actions,
  Cookies,
  FORBIDDEN_HEADER,
  MAX_PAGE_SCRIPT_BYTES,
  PageTimeout,
  PdfOptions,
  RequestHeaders,
  Selector,
  SelectorList,
  actionsWaitMs,
  controlSelectors,
  type PageAction,
  type PageCookie,
  type PdfOptionsDoc,
} from '../schemas/page-controls.ts';

/** The websitepro body's control fields, all optional (docs/websitepro.md, "Page controls"). */
export const WEBSITEPRO_CONTROL_FIELDS = {
  removeSelectors: T.Optional(SelectorList('Removed from the page before anything else (every output, links and images included).')),
  targetSelectors: T.Optional(SelectorList('Convert only what these match, in document order; main-content extraction is then off.')),
  mainContent: T.Optional(T.Boolean({ description: 'Default true: the main content (Readability); false converts the whole body.' })),
  waitFor: T.Optional({ ...Selector, description: 'Render the page in a browser and wait for this selector (priced as `render`).' }),
  timeout: T.Optional(PageTimeout),
  headers: T.Optional(RequestHeaders),
  cookies: T.Optional(Cookies),
  actions: T.Optional(Actions),
  pdf: T.Optional(PdfOptions),
};

export interface WebsiteproControlsBody {
  removeSelectors?: string[];
  targetSelectors?: string[];
  mainContent?: boolean;
  waitFor?: string;
  timeout?: number;
  /** As sent: an object; after plan(): the names only (what the job stores and shows). */
  headers?: Record<string, string> | string[];
  cookies?: PageCookie[] | string[];
  actions?: PageAction[];
  pdf?: PdfOptionsDoc;
}

/** What the converter is told (task params `controls`): no credential values, their names only. */
export interface ConverterControls {
  removeSelectors?: string[];
  targetSelectors?: string[];
  mainContent?: boolean;
  waitFor?: string;
  timeoutMs?: number;
  actions?: PageAction[];
  headerNames?: string[];
  cookieNames?: string[];
}

/** The credentials, carried by the task message only (PlanItem.task.secret), never by the job. */
export interface ControlSecrets {
  headers?: Record<string, string>;
  cookies?: PageCookie[];
}

const bad = (message: string, details?: Record<string, unknown>) => new ApiError('bad_request', message, details);

/** A header value Node would refuse to send (or that would split the request). */
const BAD_HEADER_VALUE = /[^\t\x20-\x7e\x80-\xff]/;
const BAD_COOKIE_VALUE = /[;\r\n\0]/;

/** Every selector of the request parses, or 400 bad_request naming the first that does not. */
export function checkSelectorSyntax(selectors: string[]): Promise<void> {
  return checkSelectors(selectors.map((selector) => ({ field: 'selector', selector })));
}

export function checkHeaders(headers: Record<string, string> | undefined, cookies: PageCookie[] | undefined): void {
  for (const [name, value] of Object.entries(headers ?? {})) {
    if (FORBIDDEN_HEADER.test(name))
      throw bad(`header ${name} may not be set (Host, Content-Length, hop-by-hop, Proxy-* and Cookie are refused; use cookies)`, {
        header: name,
      });
    if (BAD_HEADER_VALUE.test(value)) throw bad(`header ${name}: its value has control characters`, { header: name });
  }
  const seen = new Set<string>();
  for (const c of cookies ?? []) {
    if (BAD_COOKIE_VALUE.test(c.value)) throw bad(`cookie ${c.name}: its value has ';' or a control character`, { cookie: c.name });
    if (seen.has(c.name)) throw bad(`cookie ${c.name} is given twice`, { cookie: c.name });
    seen.add(c.name);
  }
}

export function checkPdf(pdf: PdfOptionsDoc | undefined, outputs: readonly string[]): void {
  if (!pdf) return;
  if (!outputs.includes('pdf')) throw bad('pdf options are given but the pdf output is not asked for');
  for (const k of ['headerTemplate', 'footerTemplate'] as const) {
    const v = pdf[k];
    if (v !== undefined && Buffer.byteLength(v, 'utf8') > MAX_PAGE_SCRIPT_BYTES)
      throw bad(`pdf.${k} is more than ${MAX_PAGE_SCRIPT_BYTES} bytes`, { field: `pdf.${k}` });
  }
  if (pdf.pageRanges) {
    for (const part of pdf.pageRanges.split(',')) {
      const [a, b] = part.split('-').map((x) => Number(x.trim()));
      if (a === 0 || (b !== undefined && (b === 0 || b < a!))) throw bad(`pdf.pageRanges: ${part.trim()} is not a page range`);
    }
  }
}

export interface PlannedControls {
  /** Task params `controls` (absent when the body has none). */
  controls?: ConverterControls;
  /** For the task message only. */
  secret?: ControlSecrets;
  /** The page must be rendered in a browser before it is converted (waitFor, actions). */
  render: boolean;
  /** Every selector of the request (the result's `extra.selectors` counts each). */
  selectors: string[];
}

/**
 * Checks every control (400 bad_request before any charge) and splits them into what the task may
 * carry in the job (controls, names only) and what only its message carries (the values). The body
 * itself is left with the names of the headers and cookies: it is stored as the job's `request`.
 */
export async function planControls(body: WebsiteproControlsBody, outputs: readonly string[]): Promise<PlannedControls> {
  const headers = body.headers && !Array.isArray(body.headers) ? body.headers : undefined;
  const cookies = body.cookies?.length && typeof body.cookies[0] === 'object' ? (body.cookies as PageCookie[]) : undefined;
  checkHeaders(headers, cookies);
  if (body.targetSelectors && body.mainContent === true)
    throw bad('targetSelectors and mainContent: true contradict each other (the selected parts are the content)');
  const waited = actionsWaitMs(body.actions);
  if (waited > ACTIONS_TOTAL_MS) throw bad(`the actions wait ${waited} ms in all, more than ${ACTIONS_TOTAL_MS} ms`);
  checkPdf(body.pdf, outputs);
  const selectors = controlSelectors(body);
  await checkSelectorSyntax(selectors);

  const c: ConverterControls = {};
  if (body.removeSelectors) c.removeSelectors = body.removeSelectors;
  if (body.targetSelectors) c.targetSelectors = body.targetSelectors;
  if (body.mainContent === false) c.mainContent = false;
  if (body.waitFor) c.waitFor = body.waitFor;
  if (body.timeout !== undefined) c.timeoutMs = body.timeout * 1000;
  if (body.actions?.length) c.actions = body.actions;
  const secret: ControlSecrets = {};
  if (headers && Object.keys(headers).length) {
    c.headerNames = Object.keys(headers);
    secret.headers = headers;
    body.headers = c.headerNames;
  }
  if (cookies) {
    c.cookieNames = cookies.map((x) => x.name);
    secret.cookies = cookies;
    body.cookies = c.cookieNames;
  }
  return {
    ...(Object.keys(c).length ? { controls: c } : {}),
    ...(secret.headers || secret.cookies ? { secret } : {}),
    render: !!(body.waitFor || body.actions?.length),
    selectors,
  };
}
