import { randomBytes, createHash } from 'node:crypto';

/** Sortable, URL-safe ids: time prefix (ms, base36) + random. */
export function newId(prefix: string): string {
  return `${prefix}_${Date.now().toString(36).padStart(9, '0')}${randomBytes(8).toString('hex')}`;
}

/** API keys: `pk_` + 32 random bytes base64url. Stored only as sha256 hex. */
export function newApiKey(): string {
  return `pk_${randomBytes(32).toString('base64url')}`;
}
export function hashKey(key: string): string {
  return createHash('sha256').update(key).digest('hex');
}
