// A NATS service endpoint declared once: its subject, its request and reply as TypeBox schemas, its
// timeout. `addService` (shared/micro.ts) validates every request with the declaration before the
// handler sees it; `client()` (shared/micro.ts) derives the typed caller; docs/operations.md's
// endpoint table is generated from the declarations (scripts/endpoints-doc.ts).
import { Type as T, type Static, type TSchema } from '@sinclair/typebox';

export interface Endpoint<Q extends TSchema = TSchema, R extends TSchema = TSchema> {
  subject: string;
  summary: string;
  request: Q;
  reply: R;
  /** How long a caller waits for the answer. */
  timeoutMs: number;
}

export type RequestOf<E extends Endpoint> = Static<E['request']>;
export type ReplyOf<E extends Endpoint> = Static<E['reply']>;

export function endpoint<Q extends TSchema, R extends TSchema>(e: {
  subject: string;
  summary: string;
  request: Q;
  reply: R;
  timeoutMs?: number;
}): Endpoint<Q, R> {
  return { timeoutMs: 10_000, ...e };
}

/** A stored document passed through as it is, in a reply: its shape is the TypeScript interface named. */
export const stored = <X>(name: string) => T.Unsafe<X>(T.Object({}, { additionalProperties: true, description: name }));

/** A micro service's name, what it does, and its endpoints: the input of the generated docs. */
export interface ServiceApi {
  service: string;
  description: string;
  endpoints: Endpoint[];
}
