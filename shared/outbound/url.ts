import { ApiError } from '../errors.ts';

/** Parse a customer target URL: absolute http(s), a host, no credentials, at most 2048 chars. */
export function parseTargetUrl(raw: unknown, field = 'url'): URL {
  if (typeof raw !== 'string' || raw.trim() === '') throw new ApiError('bad_url', `${field} must be an absolute http(s) URL`);
  if (raw.length > 2048) throw new ApiError('bad_url', `${field} is longer than 2048 characters`);
  let u: URL;
  try {
    u = new URL(raw.trim());
  } catch {
    throw new ApiError('bad_url', `${field} is not a valid URL`);
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:')
    throw new ApiError('bad_url', `${field} must use http or https, not ${u.protocol.replace(':', '')}`);
  if (!u.hostname) throw new ApiError('bad_url', `${field} has no host`);
  if (u.username || u.password) throw new ApiError('bad_url', `${field} must not carry credentials`);
  return u;
}

/** Host name as shown in `job.target` (no brackets around IPv6). */
export const hostOf = (u: URL) => u.hostname.replace(/^\[|\]$/g, '');
