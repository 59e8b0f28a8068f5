// The development top-up backend pays itself: in development mode with the dev Lightning backend,
// POST /account/dev-pay settles any key's top-up for free. Only listening on loopback keeps that
// to the developer's machine, so the gateway refuses any other address unless the operator sets
// the loudly named opt-in, and says at start what is on.
import ipaddr from 'ipaddr.js';
import type { Config } from '../shared/config/index.ts';

/** True when `host` (server.host) is reachable only from this machine. */
export function isLoopbackHost(host: string): boolean {
  const h = host
    .trim()
    .toLowerCase()
    .replace(/^\[(.*)\]$/, '$1');
  if (h === 'localhost' || h.endsWith('.localhost')) return true;
  if (!ipaddr.isValid(h)) return false;
  const a = ipaddr.parse(h);
  const v4 = a.kind() === 'ipv6' && (a as ipaddr.IPv6).isIPv4MappedAddress() ? (a as ipaddr.IPv6).toIPv4Address() : a;
  return v4.range() === 'loopback';
}

export const devTopupsOn = (c: Config) => c.server.mode === 'development' && c.wallet.lightning.backend === 'dev';

/** Headers a reverse proxy adds; any one of them says the request did not come straight from this machine. */
export const FORWARDING_HEADERS = ['x-forwarded-for', 'forwarded', 'x-real-ip', 'x-forwarded-host', 'x-forwarded-proto', 'via'];

/**
 * Whether a request came through a proxy: a forwarding header is present, or its TCP peer is one of
 * `server.trustedProxies`. Listening on loopback keeps dev-pay on the developer's machine only
 * until a reverse proxy on that machine forwards the internet to it (the documented set-up): so
 * dev-pay (and the account page's pay button) are refused for any such request.
 */
export const cameThroughProxy = (headers: Record<string, string>, viaTrustedProxy: boolean | undefined): boolean =>
  !!viaTrustedProxy || FORWARDING_HEADERS.some((h) => headers[h] !== undefined);

/**
 * What the gateway says at start about free top-ups: nothing (not on), a warning, or a refusal
 * (`refuse`: the gateway must not start).
 */
export function devTopupGuard(c: Config): { refuse?: string; warn?: string } {
  if (!devTopupsOn(c)) return {};
  const free =
    'the dev Lightning backend is on (MODE=development, LIGHTNING_BACKEND=dev): POST /account/dev-pay settles any top-up for free';
  if (isLoopbackHost(c.server.host)) return { warn: `${free}; listening on loopback (${c.server.host}) only` };
  if (!c.server.unsafeDevTopupsOnPublicAddress) {
    return {
      refuse: `refusing to listen on ${c.server.host}: ${free}, so anyone who reaches this address pays nothing. Listen on 127.0.0.1 (HOST), use a real backend (LIGHTNING_BACKEND, MODE=production), or, for a shared demo where free money is the point, set UNSAFE_DEV_TOPUPS_ON_PUBLIC_ADDRESS=1 (server.unsafeDevTopupsOnPublicAddress)`,
    };
  }
  return { warn: `UNSAFE: ${free}, on ${c.server.host}, reachable from other machines (server.unsafeDevTopupsOnPublicAddress is set)` };
}

/**
 * What `npm start` prints under its URLs: the mode and what it means, so that a development start
 * (the default: free top-ups) put behind a public proxy cannot pass unnoticed (README, Production).
 */
export function modeSummary(c: Config): string[] {
  if (c.server.mode === 'production')
    return [
      `production (Lightning backend ${c.wallet.lightning.backend}): real payments; failpoints and WALLET_FAULT ignored; browsers refuse to run outside a network namespace unless outbound.browserNetns is off`,
    ];
  const free = devTopupsOn(c);
  return [
    `development${free ? ' with the dev Lightning backend: top-ups are FREE (POST /account/dev-pay pays them),' : ','} for this machine only.`,
    ...(free ? ['          dev-pay refuses any request that came through a proxy, but nothing else here is ready for the internet:'] : []),
    '          before putting it behind a public proxy, set MODE=production and a real Lightning backend (README, "Production").',
  ];
}
