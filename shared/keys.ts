// API keys: stored only as sha256 hashes in the `keys` bucket, each pointing at its wallet.
import { Kvm, type KV } from '@nats-io/kv';
import type { NatsConnection } from '@nats-io/nats-core';
import { BUCKETS } from './names.ts';
import { newApiKey, hashKey, newId } from './ids.ts';

export interface KeyRecord {
  walletId: string;
  createdAt: number;
  /** How the key was made: `admin` (operator CLI) or `account` (the account page). */
  via: 'admin' | 'account';
}

export async function keysBucket(nc: NatsConnection): Promise<KV> {
  return new Kvm(nc).open(BUCKETS.keys);
}

/** Make a new key for a new wallet. The plain key is returned once and never stored. */
export async function createKey(nc: NatsConnection, via: KeyRecord['via']): Promise<{ key: string; walletId: string }> {
  const kv = await keysBucket(nc);
  const key = newApiKey();
  const walletId = newId('w');
  await kv.create(hashKey(key), JSON.stringify({ walletId, createdAt: Date.now(), via } satisfies KeyRecord));
  return { key, walletId };
}

export async function lookupKey(kv: KV, key: string): Promise<KeyRecord | null> {
  const e = await kv.get(hashKey(key));
  if (!e || e.operation !== 'PUT' || !e.value.length) return null;
  return e.json<KeyRecord>();
}
