import { Type as T, type Static } from '@sinclair/typebox';
import { OBJECT_STORES, subjects } from '../names.ts';
import { ApiError } from '../errors.ts';
import { readCatalogue, type CatalogueEntry } from '../catalogue.ts';
import type { ServiceModule } from './types.ts';
import { parseTargetUrl, hostOf, precheckTarget } from '../outbound/index.ts';
import { parseWebhook, precheckWebhook, WebhookField } from '../webhook.ts';
import { planControls, WEBSITEPRO_CONTROL_FIELDS, type WebsiteproControlsBody } from './websitepro-controls.ts';
import { CRAWL_BODY_FIELDS } from '../schemas/crawl.ts';
import { planBatchJob, precheckBatch } from './websitepro-batch.ts';
import { planCrawlJob, planMapJob } from './websitepro-crawl.ts';

export const WEBSITEPRO_OUTPUTS = ['metadata', 'markdown', 'text', 'html', 'pdf', 'links', 'images', 'rawHtml', 'map'] as const;
export type WebsiteproOutput = (typeof WEBSITEPRO_OUTPUTS)[number];

export const WebsiteproBody = T.Object(
  {
    url: T.Optional(T.String({ description: 'Public http(s) URL (exactly one of `url` and `urls`).', maxLength: 2048 })),
    outputs: T.Array(T.Union(WEBSITEPRO_OUTPUTS.map((o) => T.Literal(o))), {
      minItems: 1,
      maxItems: 8,
      description: 'Outputs to produce; duplicates count once.',
    }),
    webhook: T.Optional(WebhookField),
    ...WEBSITEPRO_CONTROL_FIELDS,
    ...CRAWL_BODY_FIELDS,
  },
  { $id: 'WebsiteproBody', additionalProperties: false },
);
export type WebsiteproRequest = Omit<Static<typeof WebsiteproBody>, 'headers' | 'cookies'> & WebsiteproControlsBody;

/** The result that charges for a browser render (waitFor, actions): done when the page was rendered, with its facts. */
export const RENDER_KEY = 'render';

/** A browser-pool instance that prints: what a `pdf` output needs besides a converter (actors/browser-pool advertises `prints`). */
const printsPdfEntry = (e: CatalogueEntry) => Array.isArray(e.catalogue.prints) && e.catalogue.prints.includes('pdf');
const printsPdf = (entries: CatalogueEntry[]) => entries.some(printsPdfEntry);

/**
 * Body fields a page set (`urls`, `crawl`) does not take: credentials (headers, cookies) are never
 * stored, while a page set's tasks are published as its pages are admitted, long after the request
 * (docs/websitepro.md). A render per page (waitFor, actions, timeout) it takes, priced per page.
 */
const PAGE_SET_REFUSED = ['headers', 'cookies'] as const;

export const websitepro: ServiceModule<WebsiteproRequest> = {
  name: 'websitepro',
  title: 'Web page conversion',
  description:
    'Fetches a public page and returns metadata (JSON), Markdown, plain text, sanitised HTML, PDF, its links, its images or its raw HTML.',
  body: WebsiteproBody,
  store: OBJECT_STORES.results,
  retentionSeconds: (c) => c.retention.websitepro,
  errorCode(err) {
    if (err.instancePath === '' && err.keyword === 'required' && (err.params as { missingProperty: string }).missingProperty === 'outputs')
      return 'no_output';
    if (err.instancePath === '/outputs' && (err.keyword === 'minItems' || err.keyword === 'type')) return 'no_output';
    if (err.instancePath === '/url' || err.instancePath.startsWith('/urls')) return 'bad_url';
    if (err.instancePath === '/webhook') return 'bad_webhook';
    return 'bad_request';
  },
  async plan(body, { config, catalogueKv }) {
    if (body.url !== undefined && body.urls !== undefined) throw new ApiError('bad_url', 'give either `url` or `urls`, not both');
    if (body.url === undefined && body.urls === undefined) throw new ApiError('bad_url', 'url (or urls) is required');
    if (body.maxAge !== undefined && body.maxAge > config.websitepro.cacheMaxAgeSeconds)
      throw new ApiError('bad_request', `\`maxAge\` is at most ${config.websitepro.cacheMaxAgeSeconds} seconds on this server`);
    if (body.crawl !== undefined && body.urls !== undefined)
      throw new ApiError('bad_request', '`crawl` starts from one `url`; a crawl of several start URLs is several jobs');
    const url = body.urls ? null : parseTargetUrl(body.url);
    if (body.webhook !== undefined) parseWebhook(body.webhook);
    const outputs = [...new Set(body.outputs)];
    if (!outputs.length) throw new ApiError('no_output');
    // a map (the site's URLs, one JSON result) is a job of its own: websitepro-crawl.ts checks its body
    const map = outputs.includes('map') ? planMapJob(body as unknown as Parameters<typeof planMapJob>[0], url, outputs, config) : null;
    // a page set (urls, crawl) takes every control but credentials
    if (!map && (body.urls || body.crawl)) {
      const control = PAGE_SET_REFUSED.find((k) => body[k as keyof WebsiteproRequest] !== undefined);
      const set = body.urls ? '`urls`' : '`crawl`';
      if (control)
        throw new ApiError(
          'bad_request',
          `\`${control}\` applies to a one-page job (\`url\`), not to ${set}: credentials are never stored, and a page set sends its pages long after the request`,
        );
    }
    // every control is checked (400) before the service's own availability (503)
    const c = await planControls(body, outputs);
    // a render (waitFor, actions) is charged as a result of its own when a text output needs the
    // browser (a pdf is printed by one anyway): once in a one-page job, once per page in a page set
    const render = c.render && outputs.some((o) => o !== 'pdf');
    const pageOutputs = render ? [...outputs, RENDER_KEY] : outputs;
    const batch = map
      ? map
      : body.urls
        ? planBatchJob(body.urls, pageOutputs, config)
        : body.crawl
          ? planCrawlJob(url!, pageOutputs, body.crawl, config)
          : null;
    // no converter: 503 before any charge, not a job that waits hours for worker_lost
    if (!(await readCatalogue(catalogueKv, 'websitepro', (running) => running.length > 0)).length)
      throw new ApiError('service_unavailable', 'no converter instance is running');
    if (batch) return batch;
    // refunded like any result when the page cannot be rendered
    const keys: string[] = pageOutputs;
    const params = (o: string): Record<string, unknown> => ({
      url: url!.href,
      output: o,
      outputs: keys,
      ...(c.controls ? { controls: c.controls } : {}),
      ...(o === 'pdf' && body.pdf ? { pdf: body.pdf } : {}),
      ...(body.maxAge ? { maxAge: body.maxAge } : {}),
    });
    return {
      target: hostOf(url!),
      items: keys.map((o) => ({
        key: o,
        price: o === RENDER_KEY ? config.pricing.websitepro.render : config.pricing.websitepro[o as WebsiteproOutput],
        task: { subject: subjects.taskWebsitepro, params: params(o), ...(c.secret ? { secret: { ...c.secret } } : {}) },
      })),
    };
  },
  // every kind of worker an output needs runs (the converter is checked by the plan), then
  // blocked_address / unreachable before any charge; the worker checks every hop again
  async precheck(body, plan, { config, catalogueKv, walletId }) {
    if (body.outputs.includes('pdf') && !(await readCatalogue(catalogueKv, 'shots', printsPdf)).some(printsPdfEntry)) {
      throw new ApiError(
        'service_unavailable',
        'no browser-pool instance that prints PDFs is running; nothing was charged',
        {},
        { 'retry-after': '30' },
      );
    }
    if (body.urls) await precheckBatch(body.urls, plan, config, walletId);
    else await precheckTarget(body.url!, config, undefined, walletId);
    if (body.webhook !== undefined) await precheckWebhook(body.webhook, config);
  },
};
