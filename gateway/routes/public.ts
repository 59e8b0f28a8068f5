// Public endpoints (spec 4.1): index, pricing, services and their live catalogues.
import { Type as T } from '@sinclair/typebox';
import { API_VERSION, type Route, type GatewayContext } from '../route.ts';
import { ApiError } from '../../shared/errors.ts';
import { SERVICES, isService, type ServiceName } from '../../shared/names.ts';
import { followCatalogue, readCatalogue, type CatalogueEntry } from '../../shared/catalogue.ts';
import { SERVICE_MODULES } from '../../shared/services/index.ts';
import {
  mergeOffers,
  VIEWPORT_PRESETS,
  VIEWPORT_LIMITS,
  DELAYS,
  SCHEMES,
  DEFAULT_VIEWPORT,
  COMPARE_MAX_PAIRS,
} from '../../shared/services/index.ts';
import { PAYLOADS_PER_EUR, UNIT, toEur } from '../../shared/protocol/wallet.ts';
import type { Config } from '../../shared/config/index.ts';
import { loadWebhookKey, webhookInfo, type WebhookKey } from '../../shared/webhook.ts';
import { VERSION } from '../version.ts';
import { REFERENCE_PATH } from '../pages/reference.ts';

const webhookKeys = new WeakMap<Config, WebhookKey>();
/** The key every webhook is signed with (the same setting or data-folder file the senders use). */
function webhooks(config: Config) {
  let key = webhookKeys.get(config);
  if (!key) webhookKeys.set(config, (key = loadWebhookKey(config)));
  return webhookInfo(key, config);
}

const serviceLinks = (base: string, s: ServiceName) => ({
  catalogue: `${base}/v1/services/${s}`,
  quote: `${base}/v1/${s}/quote`,
  jobs: `${base}/v1/${s}/jobs`,
});

/** The price list: every price in Payloads and EUR, from config. */
export function pricing(config: Config) {
  const p = config.pricing;
  const item = (key: string, payloads: number, per: string) => ({ key, payloads, eur: toEur(payloads), per });
  return {
    unit: UNIT,
    payloadsPerEur: PAYLOADS_PER_EUR,
    services: {
      websitepro: {
        items: Object.entries(p.websitepro).map(([k, v]) =>
          // the page controls are free but for the browser they need (waitFor, actions): `render`
          item(
            k,
            v,
            k === 'render'
              ? 'job whose page is rendered for waitFor or actions (not a pdf-only job)'
              : k === 'map'
                ? 'block of 1,000 URLs a map lists'
                : 'output',
          ),
        ),
      },
      shots: {
        items: [
          item('screenshot', p.shots.screenshot, 'screenshot (browser version x viewport x scheme)'),
          item('fullPage', p.shots.fullPage, 'extra per screenshot with options.fullPage'),
          item('retina', p.shots.retina, 'extra per screenshot with options.retina'),
          item(
            'comparePair',
            p.shots.comparePair,
            'compared pair of screenshots with options.compare (same viewport and scheme; a diff image and its summary)',
          ),
        ],
      },
      labs: {
        items: [
          item('quick', p.labs.quick, 'module'),
          item('conformance', p.labs.conformance, 'module'),
          item('customPerCheck', p.labs.customPerCheck, 'selected check in the custom result'),
          item('customMin', p.labs.customMin, 'least price of a custom result'),
          item('dataset', p.labs.dataset, 'once per wallet, first job needing the test dataset'),
        ],
      },
    },
    topups: {
      minEur: 0.25,
      maxEur: 100,
      bonus: [...config.wallet.bonus].sort((a, b) => a.minEur - b.minEur).map((b) => ({ minEur: b.minEur, percent: b.percent })),
    },
  };
}

/** The live catalogue of a service, merged over its running instances. */
export function mergeCatalogue(service: ServiceName, entries: CatalogueEntry[], config: Config): Record<string, unknown> {
  const instances = entries.map((e) => ({ id: e.instanceId, at: e.at }));
  const first = entries[0]!.catalogue;
  const base = { service, instances, prices: pricing(config).services[service].items };
  if (service === 'shots') {
    return {
      ...base,
      ...first,
      browsers: mergeOffers(entries),
      presets: VIEWPORT_PRESETS,
      defaults: { viewports: [DEFAULT_VIEWPORT], schemes: ['light'] },
      limits: {
        viewports: VIEWPORT_LIMITS.max,
        width: [VIEWPORT_LIMITS.minW, VIEWPORT_LIMITS.maxW],
        height: [VIEWPORT_LIMITS.minH, VIEWPORT_LIMITS.maxH],
      },
      options: { fullPage: 'boolean', retina: 'boolean', hideCookieBanner: 'boolean', delay: DELAYS, schemes: SCHEMES, compare: 'boolean' },
      compare: { maxPairs: COMPARE_MAX_PAIRS },
    };
  }
  if (service === 'labs')
    return { ...base, ...first, allowedPorts: config.labs.allowedPorts, relayTestsPerHour: config.labs.relayTestsPerHour };
  return { ...base, ...first };
}

async function liveServices(ctx: GatewayContext) {
  return Promise.all(SERVICES.map(async (s) => ({ s, entries: await readCatalogue(ctx.kv.catalogue, s) })));
}

/** The `/v1` answer (and `/` to an API client): version, services and links. */
export function apiIndex(ctx: GatewayContext) {
  return {
    name: 'payloads',
    version: VERSION,
    apiVersion: API_VERSION,
    services: SERVICES.map((s) => ({
      name: s,
      title: SERVICE_MODULES[s].title,
      description: SERVICE_MODULES[s].description,
      links: serviceLinks(ctx.baseUrl, s),
    })),
    webhooks: webhooks(ctx.config),
    links: {
      self: `${ctx.baseUrl}/v1`,
      pricing: `${ctx.baseUrl}/v1/pricing`,
      services: `${ctx.baseUrl}/v1/services`,
      openapi: `${ctx.baseUrl}/openapi.json`,
      reference: `${ctx.baseUrl}${REFERENCE_PATH}`,
      account: ctx.accountUrl,
      errors: ctx.docsUrl,
      balance: `${ctx.baseUrl}/v1/balance`,
      transactions: `${ctx.baseUrl}/v1/transactions`,
      topups: `${ctx.baseUrl}/v1/topups`,
      jobs: `${ctx.baseUrl}/v1/jobs`,
    },
  };
}

const Json = (description: string) => ({ description, schema: T.Object({}, { additionalProperties: true }) });

export const publicRoutes: Route[] = [
  {
    method: 'GET',
    path: '/v1',
    auth: false,
    tags: ['public'],
    summary: 'Index: services and links',
    description:
      "The API's entry point: the release (`version`, package.json's; CHANGELOG.md) and the API's major version (`apiVersion`), then the services with their catalogue, quote and job links, the webhook signing key, and the links to the price list, this description, the reference page, the account page and the errors page. `GET /` answers the same to an API client (and a page to a browser).",
    errors: ['rate_limited'],
    fixedAnswer: true,
    responses: { 200: Json('Services and links') },
    handler: async (_req, ctx) => ({ json: apiIndex(ctx) }),
  },
  {
    method: 'GET',
    path: '/v1/pricing',
    auth: false,
    tags: ['public'],
    summary: 'Price list in Payloads and EUR',
    errors: ['rate_limited'],
    fixedAnswer: true,
    description: 'Every price in Payloads (10000 = 1 EUR) with its EUR value, and the top-up range and bonus tiers.',
    responses: { 200: Json('Price list') },
    handler: async (_req, ctx) => ({ json: pricing(ctx.config) }),
  },
  {
    method: 'GET',
    path: '/v1/services',
    auth: false,
    tags: ['public'],
    summary: 'List of services',
    errors: ['rate_limited'],
    description:
      '`available` is true while at least one instance of the service runs. The answer is rebuilt when the live catalogue changes: ' +
      "an instance that starts or stops shows here within moments (the time this gateway's catalogue watch takes to deliver it); " +
      'one that dies without stopping drops out once its entry is 30 s old.',
    // built from the catalogue, not per request: the catalogue watch rebuilds it
    fixedAnswer: { follows: (ctx, changed) => followCatalogue(ctx.kv.catalogue, changed) },
    responses: { 200: Json('Services') },
    handler: async (_req, ctx) => ({
      json: {
        services: (await liveServices(ctx)).map(({ s, entries }) => ({
          name: s,
          title: SERVICE_MODULES[s].title,
          description: SERVICE_MODULES[s].description,
          available: entries.length > 0,
          instances: entries.length,
          links: serviceLinks(ctx.baseUrl, s),
        })),
      },
    }),
  },
  {
    method: 'GET',
    path: '/v1/services/:service',
    auth: false,
    tags: ['public'],
    summary: 'Live catalogue of a service',
    description:
      'What the running instances offer right now: browsers and versions (shots), outputs (websitepro), modules, checks, selectable checks and allowed ports (labs).',
    errors: ['unknown_service', 'service_unavailable', 'rate_limited'],
    responses: { 200: Json('Catalogue') },
    handler: async (req, ctx) => {
      const s = req.params.service!;
      if (!isService(s)) throw new ApiError('unknown_service', `no service ${JSON.stringify(s)}; services: ${SERVICES.join(', ')}`);
      const entries = await readCatalogue(ctx.kv.catalogue, s);
      if (!entries.length) throw new ApiError('service_unavailable', `no ${s} instance is running`, {}, { 'retry-after': '10' });
      return { json: mergeCatalogue(s, entries, ctx.config), headers: { 'cache-control': 'no-cache' } };
    },
  },
];
