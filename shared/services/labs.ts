import { Kvm } from '@nats-io/kv';
import { Type as T, type Static } from '@sinclair/typebox';
import { BUCKETS, OBJECT_STORES, subjects } from '../names.ts';
import { ApiError } from '../errors.ts';
import { readCatalogue } from '../catalogue.ts';
import { datasetFeeOwed } from './dataset.ts';
import { takeToken } from '../limits.ts';
import { wallet } from '../protocol/wallet.ts';
import { resolvePinned, toApiError, tcpProbe, takeCheck, type PinnedAddress } from '../outbound/index.ts';
import type { Config } from '../config/index.ts';
import type { ServiceModule, PlanItem } from './types.ts';
import { parseWebhook, precheckWebhook, WebhookField } from '../webhook.ts';

export { parseWebhook };

export const LABS_MODULES = ['quick', 'conformance'] as const;
export type LabsModule = (typeof LABS_MODULES)[number];

export const LabsBody = T.Object(
  {
    relay: T.String({ description: 'wss://host[:port][/path], ws://..., or a bare host (means wss://)', maxLength: 2048 }),
    modules: T.Optional(T.Array(T.Union(LABS_MODULES.map((m) => T.Literal(m))), { maxItems: 2 })),
    checks: T.Optional(
      T.Array(T.String({ maxLength: 100 }), {
        maxItems: 200,
        description: 'Ids from `selectable` of GET /v1/services/labs; unknown ids are ignored.',
      }),
    ),
    webhook: T.Optional(WebhookField),
  },
  { $id: 'LabsBody', additionalProperties: false },
);
export type LabsRequest = Static<typeof LabsBody>;

/** A check as the relay-prober advertises it. */
export interface CheckInfo {
  id: string;
  title: string;
  module: LabsModule;
  needsDataset: boolean;
  selectable: boolean;
  basis: { nip: string; section?: string; level: string; quote?: string; nipOptional?: boolean };
}

export type CheckedAddress = PinnedAddress;

/**
 * The outbound-address check, in one call: resolve once, refuse when any address is not public
 * (the test allow-list aside), return the address to connect to (no second lookup). Throws
 * ApiError blocked_address / unreachable.
 */
export async function checkAddress(hostname: string, config: Config): Promise<CheckedAddress> {
  try {
    return await resolvePinned(hostname, { allowCidrs: config.outbound.allowCidrs, timeoutMs: config.outbound.checkTimeoutMs });
  } catch (e) {
    throw toApiError(e);
  }
}

/**
 * Key of a relay in the relay_busy counter: the relay is its host and port, never the path (each
 * path its own 30 tests an hour would make the bound per URL, as many as a client likes). The URL
 * parser has already lower-cased the host and turned an IDN into its punycode; here a trailing dot
 * goes and the default port is written out, so every spelling of one relay is one counter.
 */
export const relayCounterId = (u: URL) => `${u.hostname.replace(/\.+$/, '')}:${u.port || (u.protocol === 'wss:' ? 443 : 80)}`;

/** Parse a relay address; returns the normalised ws(s) URL. */
export function parseRelayUrl(raw: string, allowedPorts: number[]): URL {
  const s = raw.trim();
  if (!s) throw new ApiError('bad_relay_url', 'relay is empty');
  const withScheme = /^[a-z][a-z0-9+.-]*:\/\//i.test(s) ? s : `wss://${s}`;
  let u: URL;
  try {
    u = new URL(withScheme);
  } catch {
    throw new ApiError('bad_relay_url', 'relay is not a valid address');
  }
  if (u.protocol !== 'wss:' && u.protocol !== 'ws:')
    throw new ApiError('bad_relay_url', `relay must be wss:// or ws://, not ${u.protocol.replace(':', '')}`);
  if (!u.hostname || u.username || u.password || u.hash) throw new ApiError('bad_relay_url', 'relay must be wss://host[:port][/path]');
  const port = u.port ? Number(u.port) : u.protocol === 'wss:' ? 443 : 80;
  if (!allowedPorts.includes(port))
    throw new ApiError('bad_port', `port ${port} is not allowed; allowed: ${allowedPorts.join(', ')}`, { allowedPorts });
  return u;
}

export const labs: ServiceModule<LabsRequest> = {
  name: 'labs',
  title: 'Nostr relay tests',
  description: 'Connects to a Nostr relay as a normal client and tests it against the NIPs; returns labs.report/1 JSON.',
  body: LabsBody,
  store: OBJECT_STORES.reports,
  retentionSeconds: (c) => c.retention.labs,
  errorCode(err) {
    if (err.instancePath === '/relay') return 'bad_relay_url';
    if (err.instancePath === '/webhook') return 'bad_webhook';
    return 'bad_request';
  },
  async plan(body, { config, catalogueKv, datasetsKv, datasetStale, walletId }) {
    const relay = parseRelayUrl(body.relay, config.labs.allowedPorts);
    if (body.webhook !== undefined) parseWebhook(body.webhook);
    const entries = await readCatalogue(catalogueKv, 'labs');
    if (!entries.length) throw new ApiError('service_unavailable', 'no relay-prober instance is running');
    const checks = (entries[0]!.catalogue.checks as CheckInfo[] | undefined) ?? [];
    const modules = [...new Set(body.modules ?? [])];
    const selectable = new Set(checks.filter((c) => c.selectable).map((c) => c.id));
    const custom = [...new Set(body.checks ?? [])].filter((id) => selectable.has(id));
    if (!modules.length && !custom.length)
      throw new ApiError('no_checks', 'give modules and/or checks from the selectable list of GET /v1/services/labs');
    const p = config.pricing.labs;
    const params = { relay: relay.href, webhook: body.webhook ?? null };
    const moduleNeeds = (m: LabsModule) => checks.some((c) => c.needsDataset && c.module === m);
    const customNeeds = checks.some((c) => c.needsDataset && custom.includes(c.id));
    const items: PlanItem[] = modules.map((m) => ({
      key: m,
      price: p[m],
      needsDataset: moduleNeeds(m),
      task: { subject: subjects.taskLabs, params: { ...params, module: m } },
    }));
    if (custom.length)
      items.push({
        key: 'custom',
        price: Math.max(p.customMin, p.customPerCheck * custom.length),
        needsDataset: customNeeds,
        task: { subject: subjects.taskLabs, params: { ...params, module: 'custom', checks: custom } },
      });
    if (items.some((i) => i.needsDataset)) {
      // what the quote shows; job creation claims the wallet's mark atomically (gateway/jobs/create.ts),
      // taking over a mark whose job never appeared
      if (await datasetFeeOwed(datasetsKv, walletId, datasetStale)) items.push({ key: 'dataset', price: p.dataset, oneTime: true });
    }
    return { target: relay.hostname.replace(/^\[|\]$/g, ''), items };
  },
  async precheck(body, plan, { config, nc, walletId }) {
    const relay = parseRelayUrl(body.relay, config.labs.allowedPorts);
    takeCheck(config, walletId, relayCounterId(relay));
    const pinned = await checkAddress(relay.hostname, config);
    await tcpProbe(pinned, Number(relay.port) || (relay.protocol === 'wss:' ? 443 : 80), config.outbound.checkTimeoutMs);
    if (body.webhook !== undefined) await precheckWebhook(body.webhook, config);
    // A job its wallet cannot pay is refused by the charge (402, with what to top up); it must not
    // spend one of the relay's tests on the way, or a key without money could make the relay busy
    // for every customer. (A balance that drops between here and the charge only costs one test.)
    const cost = plan.items.reduce((s, i) => s + i.price, 0);
    if ((await wallet.balance(nc, walletId)).balance < cost) return;
    // All customers together: exact over any rolling hour, revision-checked in the limits bucket.
    const kv = await new Kvm(nc).open(BUCKETS.limits);
    const d = await takeToken(kv, 'relay', relayCounterId(relay), config.labs.relayTestsPerHour, 3600_000);
    if (!d.allowed)
      throw new ApiError(
        'relay_busy',
        `${relay.host} was tested ${config.labs.relayTestsPerHour} times in the last hour; retry in ${d.retryAfter} s`,
        { retryAfter: d.retryAfter },
        { 'Retry-After': String(d.retryAfter) },
      );
  },
};
