// The exchanges rate provider against local stub exchanges answering in each exchange's documented shape.
import t from 'tap';
import http from 'node:http';
import { startTestNats, testConfig, testLog } from '../helpers/nats.ts';
import { startWallet, walletId } from './_helpers.ts';
import { wallet } from '../../shared/protocol/wallet.ts';
import { createExchangesRate, median } from '../../actors/wallet/rates/exchanges.ts';
import { satsFor } from '../../actors/wallet/rates/types.ts';

type Tap = { teardown(fn: () => unknown): void };

interface Stub {
  price: number;
  status?: number;
  hits: number;
  bitstampAgeS?: number;
}

async function stubExchanges(t: Tap, prices: Record<'kraken' | 'bitstamp' | 'coinbase' | 'bitfinex', Stub>) {
  const server = http.createServer((req, res) => {
    const url = new URL(req.url!, 'http://x');
    const kind = url.pathname.split('/')[1] as keyof typeof prices;
    const s = prices[kind];
    if (!s) {
      res.writeHead(404).end();
      return;
    }
    s.hits++;
    if (s.status && s.status !== 200) {
      res.writeHead(s.status).end('down');
      return;
    }
    const p = s.price.toFixed(1);
    const body = {
      kraken: { error: [], result: { XXBTZEUR: { a: [p, '1', '1.000'], b: [p, '1', '1.000'], c: [p, '0.001'], v: ['1', '1'] } } },
      bitstamp: { last: p, timestamp: String(Math.floor(Date.now() / 1000) - (s.bitstampAgeS ?? 0)), bid: p, ask: p },
      coinbase: { data: { amount: p, base: 'BTC', currency: 'EUR' } },
      bitfinex: [s.price, 1, s.price, 1, 0, 0, s.price, 10, s.price, s.price],
    }[kind];
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(body));
  });
  t.teardown(() => new Promise((r) => server.close(r)));
  const port = await new Promise<number>((r) => server.listen(0, '127.0.0.1', () => r((server.address() as { port: number }).port)));
  const base = `http://127.0.0.1:${port}`;
  return (Object.keys(prices) as (keyof typeof prices)[]).map((kind) => ({ kind, url: `${base}/${kind}/ticker` }));
}

const stubs = (k: number, b: number, c: number, f: number): Record<'kraken' | 'bitstamp' | 'coinbase' | 'bitfinex', Stub> => ({
  kraken: { price: k, hits: 0 },
  bitstamp: { price: b, hits: 0 },
  coinbase: { price: c, hits: 0 },
  bitfinex: { price: f, hits: 0 },
});

t.test('median of the answering exchanges, cached, outliers and absurd or stale quotes dropped', async (t) => {
  t.equal(median([3, 1, 2]), 2);
  t.equal(median([4, 1, 2, 3]), 2.5);
  const s = stubs(60000, 60100, 60300, 90000);
  const sources = await stubExchanges(t, s);
  const cfg = testConfig({ wallet: { rate: { provider: 'exchanges', sources, cacheSeconds: 60 } } });
  const p = createExchangesRate(cfg, testLog());
  const r = await p.get();
  t.equal(r.eurPerBtc, 60100, 'median of the three that agree; bitfinex is 45 % off and dropped');
  t.equal(r.source, 'median(kraken,bitstamp,coinbase)');
  t.ok(Math.abs(r.at - Date.now()) < 5000);
  await p.get();
  t.equal(s.kraken.hits, 1, 'cached');

  s.kraken.status = 503;
  s.bitstamp.bitstampAgeS = 3600; // stale quote
  s.coinbase.price = 5; // absurd
  const p2 = createExchangesRate(cfg, testLog());
  await t.rejects(p2.get(), /only 1 exchange/, 'one sane answer is not enough (minSources 2)');
});

t.test('a top-up stores the rate, its source and time; no rate means 502 invoice_failed', async (t) => {
  const s = stubs(50000, 50000, 50010, 49990);
  const sources = await stubExchanges(t, s);
  const tn = await startTestNats(t, { wallet: { rate: { provider: 'exchanges', sources } } });
  await startWallet(t, tn);
  const w = walletId();
  const { topup } = await wallet.topupCreate(tn.nc, w, 10);
  t.equal(topup.sats, satsFor(1000, 50000));
  t.equal(topup.sats, 20000);
  const { Kvm } = await import('@nats-io/kv');
  const rec = (await (await new Kvm(tn.nc).open('topups')).get(topup.id))!.json<{
    rate: { eurPerBtc: number; source: string; at: number };
  }>();
  t.match(rec.rate, { eurPerBtc: 50000, source: /^median\(/ });

  const down = await startTestNats(t, {
    wallet: {
      rate: { provider: 'exchanges', sources: sources.map((x) => ({ ...x, url: x.url.replace(/:\d+\//, ':9/') })), timeoutMs: 500 },
    },
  });
  await startWallet(t, down);
  await t.rejects(wallet.topupCreate(down.nc, w, 10), { code: 'invoice_failed' });
});
