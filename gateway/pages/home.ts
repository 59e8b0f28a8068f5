// The front door's page (`/` to a browser, gateway/routes/home.ts): what the service sells, its
// prices (the price list of GET /v1/pricing, given) and where to go next.
import { ERRORS_PATH } from '../../shared/errors.ts';
import { SERVICES, type ServiceName } from '../../shared/names.ts';
import { SERVICE_MODULES } from '../../shared/services/index.ts';
import { REFERENCE_PATH } from './reference.ts';
import { VERSION } from '../version.ts';

/** What the page shows of the price list (gateway/routes/public.ts `pricing`). */
export interface PriceList {
  payloadsPerEur: number;
  services: Record<ServiceName, { items: { key: string; payloads: number; eur: number; per: string }[] }>;
  topups: { minEur: number; maxEur: number; bonus: { minEur: number; percent: number }[] };
}

const esc = (s: string) => s.replace(/[&<>"]/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' })[c]!);
const eur = (n: number) => `${n < 0.01 ? n.toFixed(4) : n.toFixed(n < 1 ? 3 : 2)} EUR`;

export const HOME_CSP =
  "default-src 'none'; style-src 'unsafe-inline'; img-src data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

export function homePage(baseUrl: string, prices: PriceList): string {
  const services = SERVICES.map((s) => {
    const rows = prices.services[s].items
      .map((i) => `<tr><td><code>${esc(i.key)}</code></td><td>${i.payloads}</td><td>${eur(i.eur)}</td><td>${esc(i.per)}</td></tr>`)
      .join('\n');
    return `<section id="${s}"><h2>${esc(SERVICE_MODULES[s].title)} <small><code>${s}</code></small></h2>
<p>${esc(SERVICE_MODULES[s].description)}</p>
<table><thead><tr><th>Item</th><th>Payloads</th><th>EUR</th><th>Per</th></tr></thead><tbody>
${rows}
</tbody></table></section>`;
  }).join('\n');
  const bonus = prices.topups.bonus.map((b) => `${b.percent} % from ${b.minEur} EUR`).join(', ');
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<link rel="icon" href="data:,">
<title>Payloads: web page conversion, screenshots and Nostr relay tests</title>
<style>
body{font:16px/1.5 system-ui,sans-serif;margin:0 auto;max-width:60rem;padding:1rem;color:#1b1b1b;background:#fff}
@media (prefers-color-scheme: dark){body{background:#111;color:#eee}a{color:#8ab4ff}}
nav a{margin-right:1.2rem}table{border-collapse:collapse;width:100%}th,td{text-align:left;padding:.3rem .5rem;border-bottom:1px solid #8884}
small{font-weight:normal}td:nth-child(-n+3){white-space:nowrap}
</style></head><body>
<h1>Payloads</h1>
<p>One HTTP API, three services, paid from a prepaid wallet: no account, no subscription. A job is charged when it is created and every result that is not delivered is refunded.
Prices are in Payloads: ${prices.payloadsPerEur} Payloads = 1 EUR. Top up ${prices.topups.minEur} to ${prices.topups.maxEur} EUR with a Bitcoin Lightning invoice${bonus ? ` (bonus: ${esc(bonus)})` : ''}.</p>
<nav aria-label="Start here"><a href="/account">Get an API key</a><a href="${REFERENCE_PATH}">API reference</a><a href="${ERRORS_PATH}">Errors</a><a href="/openapi.json">openapi.json</a><a href="/v1/pricing">Price list (JSON)</a></nav>
${services}
<h2>A first request</h2>
<pre><code>curl -X POST '${esc(baseUrl)}/v1/websitepro/jobs?wait=25' \\
  -H "Authorization: Bearer $PAYLOADS_KEY" -H 'Content-Type: application/json' \\
  -d '{"url": "https://example.com", "outputs": ["markdown"]}'</code></pre>
<p><small>Payloads ${esc(VERSION)} · API v1 · <a href="/v1">/v1</a></small></p>
</body></html>`;
}
