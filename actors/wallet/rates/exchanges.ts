// Public exchange tickers (documented, keyless endpoints). Asks all of them at once, drops answers
// that are absurd, stale or far from the others, takes the median of the rest, caches it briefly.
import type { Config } from '../../../shared/config/index.ts';
import type { Logger } from '../../../shared/log.ts';
import { RateError, type Rate, type RateProvider } from './types.ts';

type Kind = 'kraken' | 'bitstamp' | 'coinbase' | 'bitfinex';

/** The documented public endpoint of each exchange, and how to read its answer: [price, quote time (ms) if given]. */
export const EXCHANGES: Record<Kind, { url: string; parse(body: unknown): [number, number | undefined] }> = {
  // https://docs.kraken.com/api/docs/rest-api/get-ticker-information : {error: [], result: {XXBTZEUR: {c: [price, lot], ...}}}
  kraken: {
    url: 'https://api.kraken.com/0/public/Ticker?pair=XBTEUR',
    parse(b) {
      const o = b as { error?: unknown[]; result?: Record<string, { c?: string[] }> };
      if (o.error?.length) throw new Error(String(o.error[0]));
      const pair = Object.values(o.result ?? {})[0];
      return [Number(pair?.c?.[0]), undefined];
    },
  },
  // https://www.bitstamp.net/api/#tag/Tickers : {last, timestamp (unix s as string), ...}
  bitstamp: {
    url: 'https://www.bitstamp.net/api/v2/ticker/btceur/',
    parse(b) {
      const o = b as { last?: string; timestamp?: string };
      return [Number(o.last), o.timestamp ? Number(o.timestamp) * 1000 : undefined];
    },
  },
  // https://docs.cdp.coinbase.com/coinbase-app/track-apis/prices : {data: {amount, base, currency}}
  coinbase: {
    url: 'https://api.coinbase.com/v2/prices/BTC-EUR/spot',
    parse(b) {
      const o = b as { data?: { amount?: string; currency?: string } };
      if (o.data?.currency && o.data.currency !== 'EUR') throw new Error(`currency ${o.data.currency}`);
      return [Number(o.data?.amount), undefined];
    },
  },
  // https://docs.bitfinex.com/reference/rest-public-ticker : [BID, BID_SIZE, ASK, ASK_SIZE, DAILY_CHANGE, DAILY_CHANGE_RELATIVE, LAST_PRICE, ...]
  bitfinex: {
    url: 'https://api-pub.bitfinex.com/v2/ticker/tBTCEUR',
    parse(b) {
      if (!Array.isArray(b)) throw new Error('not an array');
      return [Number(b[6]), undefined];
    },
  },
};

export function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
}

export function createExchangesRate(config: Config, log: Logger, fetchImpl: typeof fetch = fetch): RateProvider {
  const c = config.wallet.rate;
  const sources = (c.sources.length ? c.sources : (Object.keys(EXCHANGES) as Kind[]).map((kind) => ({ kind, url: '' }))).map((s) => ({
    kind: s.kind as Kind,
    url: s.url || EXCHANGES[s.kind as Kind].url,
  }));
  let cached: Rate | undefined;
  let inflight: Promise<Rate> | undefined;

  async function ask(s: { kind: Kind; url: string }): Promise<number> {
    const res = await fetchImpl(s.url, { signal: AbortSignal.timeout(c.timeoutMs), headers: { accept: 'application/json' } });
    if (!res.ok) throw new Error(`HTTP ${res.status}`);
    const [price, at] = EXCHANGES[s.kind].parse(await res.json());
    if (!Number.isFinite(price) || price <= 0) throw new Error('no price in the answer');
    if (price < c.minEurPerBtc || price > c.maxEurPerBtc) throw new Error(`absurd rate ${price}`);
    if (at !== undefined && Date.now() - at > c.staleSeconds * 1000) throw new Error(`stale quote from ${new Date(at).toISOString()}`);
    return price;
  }

  async function refresh(): Promise<Rate> {
    const answers = await Promise.allSettled(sources.map(ask));
    const good: { kind: Kind; price: number }[] = [];
    answers.forEach((a, i) => {
      if (a.status === 'fulfilled') good.push({ kind: sources[i]!.kind, price: a.value });
      else log.warn({ exchange: sources[i]!.kind, err: String((a.reason as Error)?.message ?? a.reason) }, 'rate: exchange answer refused');
    });
    const mid = good.length ? median(good.map((g) => g.price)) : NaN;
    const near = good.filter((g) => (Math.abs(g.price - mid) / mid) * 100 <= c.maxDeviationPercent);
    if (near.length < c.minSources) throw new RateError(`only ${near.length} exchange(s) gave a sane rate; ${c.minSources} needed`);
    return { eurPerBtc: median(near.map((g) => g.price)), source: `median(${near.map((g) => g.kind).join(',')})`, at: Date.now() };
  }

  return {
    name: 'exchanges',
    async get() {
      if (cached && Date.now() - cached.at < c.cacheSeconds * 1000) return cached;
      inflight ??= refresh().finally(() => {
        inflight = undefined;
      });
      cached = await inflight;
      return cached;
    },
  };
}
