// The browser pool's service endpoints: real-browser work for websitepro (PDF printing, rendering a
// page with JavaScript). Only instances with a browser that can print offer them.
import { Type as T } from '@sinclair/typebox';
import { MICRO, subjects } from '../names.ts';
import { client } from '../micro.ts';
import { endpoint, type ServiceApi } from './endpoint.ts';
import { Actions, Cookies, PdfOptions, RequestHeaders, SelectorList, Selector } from '../schemas/page-controls.ts';

/** PageControls (shared/schemas/page-controls.ts) as the endpoints validate it. */
const Controls = T.Object(
  {
    removeSelectors: T.Optional(SelectorList('Taken out of the document before it is read or printed.')),
    waitFor: T.Optional(Selector),
    timeoutMs: T.Optional(
      T.Integer({ minimum: 1000, maximum: 60_000, description: 'The page timeout, ms (default shots.pageTimeoutMs).' }),
    ),
    actions: T.Optional(Actions),
    headers: T.Optional(RequestHeaders),
    cookies: T.Optional(Cookies),
  },
  { additionalProperties: false },
);
/** How many elements each selector matched. */
const Selectors = T.Record(T.String(), T.Integer({ minimum: 0 }));

export const browserApi = {
  renderPdf: endpoint({
    subject: subjects.browser.renderPdf,
    summary:
      'Print a page to PDF and store it as objectName in store (the converter waits controls.timeoutMs, else shots.pageTimeoutMs, + 10 s)',
    request: T.Object({
      url: T.String(),
      store: T.String(),
      objectName: T.String(),
      controls: T.Optional(Controls),
      pdf: T.Optional(PdfOptions),
    }),
    reply: T.Object({ bytes: T.Integer(), contentType: T.Literal('application/pdf'), selectors: T.Optional(Selectors) }),
  }),
  renderHtml: endpoint({
    subject: subjects.browser.renderHtml,
    summary: 'The HTML of a page after its scripts ran (the converter waits controls.timeoutMs, else shots.pageTimeoutMs, + 5 s)',
    request: T.Object({ url: T.String(), controls: T.Optional(Controls) }),
    reply: T.Object({
      html: T.String(),
      finalUrl: T.String(),
      status: T.Union([T.Integer(), T.Null()]),
      selectors: T.Optional(Selectors),
    }),
  }),
};

export const BROWSER_POOL_API: ServiceApi = {
  service: MICRO.browserPool,
  description: 'Real browsers: PDF printing and JavaScript rendering for websitepro',
  endpoints: Object.values(browserApi),
};

/** The typed clients (the converter's calls pass their own wait, from shots.pageTimeoutMs). */
export const browserService = { renderPdf: client(browserApi.renderPdf), renderHtml: client(browserApi.renderHtml) };
