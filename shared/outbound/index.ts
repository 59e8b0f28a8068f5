// The outbound-address guard: the one way the service connects anywhere on a customer's behalf.
//   isPublicAddress(ip, allowCidrs)          pure: is this address public (or allow-listed)?
//   classifyHost(hostname)                   pure: IP literal, name to resolve, or refused name
//   checkTarget(url, {allowCidrs})           resolve once and check → {url, pinned}
//   pinnedLookup(pinned)                     a node:net `lookup` that answers the checked address only
//   guardedFetch(url, opts)                  http(s) fetch with re-checked redirects, size cap, timeouts, decompression
//   startGuardProxy({allowCidrs})            local CONNECT/HTTP proxy for browsers → {port, url, stop}
//   parseTargetUrl(raw), hostOf(url)        pure: a customer's target URL → URL or ApiError bad_url
//   precheckTarget(url, config)              job-creation check → ApiError bad_url / blocked_address / unreachable
export { isPublicAddress, blockReason, classifyHost, parseIp, unwrapIp, type HostClass } from './address.ts';
export {
  OutboundError,
  checkTarget,
  resolvePinned,
  pinnedLookup,
  parseHttpUrl,
  systemResolver,
  type OutboundErrorCode,
  type Resolver,
  type GuardOptions,
  type PinnedAddress,
} from './resolve.ts';
export {
  guardedFetch,
  fetchOptionsFromConfig,
  decode,
  DEFAULT_USER_AGENT,
  ROBOTS_AGENT,
  type GuardedFetchOptions,
  type GuardedResponse,
} from './fetch.ts';
export { startGuardProxy, chromiumProxyArgs, type GuardProxy, type GuardProxyOptions } from './proxy.ts';
export { precheckTarget, takeCheck, toApiError, tcpProbe, type PrecheckConfig } from './check.ts';
export { parseTargetUrl, hostOf } from './url.ts';
