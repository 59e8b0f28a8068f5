// One TypeBox schema describes every setting. Sources, later ones winning:
// built-in defaults < config/default.json < CONFIG_FILE (a JSON file) < environment variables < overrides.
import { readFileSync, existsSync } from 'node:fs';
import { resolve, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Type as T, type Static } from '@sinclair/typebox';
import { Ajv } from 'ajv';
import { ServerConfig, NatsConfig, RetentionConfig, LimitsConfig } from './platform.ts';
import { PricingConfig } from './pricing.ts';
import { OutboundConfig } from './outbound.ts';
import { JobsConfig, WebsiteproConfig, ShotsConfig, LabsConfig, WebhooksConfig, DEPRECATED_SETTINGS } from './services.ts';
import { WalletConfig } from './wallet.ts';
import { CrawlConfig } from './crawl.ts';

export const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');

export const ConfigSchema = T.Object(
  {
    dataDir: T.String({
      default: '',
      description: 'Folder for the embedded nats-server store and SQLite projections (env DATA_DIR). Empty: ./data.',
    }),
    server: ServerConfig,
    nats: NatsConfig,
    retention: RetentionConfig,
    limits: LimitsConfig,
    pricing: PricingConfig,
    outbound: OutboundConfig,
    jobs: JobsConfig,
    websitepro: WebsiteproConfig,
    crawl: CrawlConfig,
    shots: ShotsConfig,
    labs: LabsConfig,
    webhooks: WebhooksConfig,
    wallet: WalletConfig,
  },
  { additionalProperties: false },
);

export type Config = Static<typeof ConfigSchema>;

export class ConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ConfigError';
  }
}

type Json = Record<string, unknown>;

/** Environment variables and the setting each one sets (documented in the README). */
export const ENV: Record<string, { path: string; parse: (v: string) => unknown }> = {
  PORT: { path: 'server.port', parse: Number },
  HOST: { path: 'server.host', parse: String },
  BASE_URL: { path: 'server.baseUrl', parse: String },
  MODE: { path: 'server.mode', parse: String },
  LOG_LEVEL: { path: 'server.logLevel', parse: String },
  DATA_DIR: { path: 'dataDir', parse: String },
  NATS_URL: { path: 'nats.url', parse: String },
  NATS_REPLICAS: { path: 'nats.replicas', parse: Number },
  NATS_PORT: { path: 'nats.embeddedPort', parse: Number },
  NATS_CREDS: { path: 'nats.credsFile', parse: String },
  NATS_SYNC_INTERVAL: { path: 'nats.syncInterval', parse: String },
  BROWSERS: {
    path: 'shots.browsers',
    parse: (v) =>
      v
        .split(',')
        .map((s) => s.trim())
        .filter(Boolean),
  },
  UNIT_THREADS: {
    path: 'server.unitThreads',
    parse: (v) =>
      v === 'none'
        ? []
        : v
            .split(',')
            .map((s) => s.trim())
            .filter(Boolean),
  },
  UNIT_THREAD_NICE: { path: 'server.unitThreadNice', parse: Number },
  LIGHTNING_BACKEND: { path: 'wallet.lightning.backend', parse: String },
  LIGHTNING_URL: { path: 'wallet.lightning.url', parse: String },
  LND_MACAROON: { path: 'wallet.lightning.macaroonHex', parse: String },
  LNBITS_API_KEY: { path: 'wallet.lightning.apiKey', parse: String },
  CLN_RUNE: { path: 'wallet.lightning.rune', parse: String },
  RATE_PROVIDER: { path: 'wallet.rate.provider', parse: String },
  UNSAFE_DEV_TOPUPS_ON_PUBLIC_ADDRESS: {
    path: 'server.unsafeDevTopupsOnPublicAddress',
    parse: (v) => v === '1' || v.toLowerCase() === 'true',
  },
};

function setPath(o: Json, path: string, value: unknown) {
  const parts = path.split('.');
  let cur = o;
  for (const p of parts.slice(0, -1)) {
    if (typeof cur[p] !== 'object' || cur[p] === null) cur[p] = {};
    cur = cur[p] as Json;
  }
  cur[parts.at(-1)!] = value;
}

function getPath(o: Json, path: string): unknown {
  let cur: unknown = o;
  for (const p of path.split('.')) cur = cur && typeof cur === 'object' ? (cur as Json)[p] : undefined;
  return cur;
}

/** Deprecated names set in `raw` and not yet replaced there, each copied onto its new name. */
function applyDeprecated(raw: Json): string[] {
  const used: string[] = [];
  for (const [old, now] of Object.entries(DEPRECATED_SETTINGS)) {
    const v = getPath(raw, old);
    if (v === undefined) continue;
    used.push(old);
    if (getPath(raw, now) === undefined) setPath(raw, now, v);
  }
  return used;
}

function merge(a: Json, b: Json): Json {
  const out: Json = { ...a };
  for (const [k, v] of Object.entries(b)) {
    const prev = out[k];
    out[k] =
      v && typeof v === 'object' && !Array.isArray(v) && prev && typeof prev === 'object' && !Array.isArray(prev)
        ? merge(prev as Json, v as Json)
        : v;
  }
  return out;
}

function readJson(file: string): Json {
  try {
    return JSON.parse(readFileSync(file, 'utf8')) as Json;
  } catch (e) {
    throw new ConfigError(`config: cannot read ${file}: ${(e as Error).message}`);
  }
}

const ajv = new Ajv({ useDefaults: true, allErrors: true, coerceTypes: false, strict: false });
const validate = ajv.compile(ConfigSchema);

const deprecatedUse = new WeakMap<Config, string[]>();
/** The deprecated setting names this configuration was given, for a warning at start. */
export const deprecatedSettings = (c: Config): string[] => deprecatedUse.get(c) ?? [];

export interface LoadOptions {
  env?: NodeJS.ProcessEnv;
  overrides?: Json;
  /** Skip config/default.json (tests start from built-in defaults). */
  noDefaultFile?: boolean;
}

export function loadConfig(opts: LoadOptions = {}): Config {
  const env = opts.env ?? process.env;
  let raw: Json = {};
  const defaultFile = join(ROOT, 'config', 'default.json');
  if (!opts.noDefaultFile && existsSync(defaultFile)) raw = merge(raw, readJson(defaultFile));
  if (env.CONFIG_FILE) raw = merge(raw, readJson(resolve(env.CONFIG_FILE)));
  for (const [name, { path, parse }] of Object.entries(ENV)) {
    const v = env[name];
    if (v === undefined || v === '') continue;
    const parsed = parse(v);
    if (typeof parsed === 'number' && Number.isNaN(parsed))
      throw new ConfigError(`config: ${name}=${JSON.stringify(v)} is not a number (setting ${path})`);
    const patch: Json = {};
    setPath(patch, path, parsed);
    raw = merge(raw, patch);
  }
  if (opts.overrides) raw = merge(raw, opts.overrides);
  const cfg = structuredClone(raw);
  const deprecated = applyDeprecated(cfg);
  if (!validate(cfg)) {
    const first = validate.errors!.map((e) => {
      const where = e.instancePath ? e.instancePath.slice(1).replaceAll('/', '.') : '(root)';
      const extra =
        e.keyword === 'additionalProperties' ? ` (${String((e.params as { additionalProperty: string }).additionalProperty)})` : '';
      return `${where} ${e.message}${extra}`;
    });
    throw new ConfigError(`config: invalid setting: ${first.join('; ')}`);
  }
  const c = cfg as unknown as Config;
  if (!c.dataDir) c.dataDir = join(ROOT, 'data');
  c.dataDir = resolve(c.dataDir);
  if (!c.server.baseUrl) c.server.baseUrl = `http://localhost:${c.server.port}`;
  c.server.baseUrl = c.server.baseUrl.replace(/\/+$/, '');
  if (c.server.mode === 'production') {
    if (c.wallet.lightning.backend === 'dev')
      throw new ConfigError('config: wallet.lightning.backend "dev" is refused in production mode (set LIGHTNING_BACKEND)');
    if (c.wallet.rate.provider === 'fixed')
      throw new ConfigError('config: wallet.rate.provider "fixed" is refused in production mode (set RATE_PROVIDER=exchanges)');
    if (c.outbound.allowCidrs.length) throw new ConfigError('config: outbound.allowCidrs must be empty in production mode');
  }
  if (deprecated.length)
    deprecatedUse.set(
      c,
      deprecated.map((d) => `${d} (use ${DEPRECATED_SETTINGS[d]})`),
    );
  return c;
}
