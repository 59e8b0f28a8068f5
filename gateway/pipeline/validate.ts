// Validation against the route's TypeBox schemas (the ones /openapi.json is generated from),
// compiled once: queries are coerced from strings, bodies are not; defaults are applied to both.
import { Ajv, type ValidateFunction, type ErrorObject } from 'ajv';
import addFormats from 'ajv-formats';
import { ApiError, type ErrorCode } from '../../shared/errors.ts';
import { COMPONENTS } from '../../shared/schemas/api.ts';
import type { Route } from '../route.ts';

export interface Validators {
  query?: ValidateFunction;
  body?: ValidateFunction;
}

function makeAjv(coerce: boolean): Ajv {
  const ajv = new Ajv({ allErrors: false, coerceTypes: coerce, useDefaults: true, strict: false });
  (addFormats as unknown as (a: Ajv) => void)(ajv);
  for (const s of COMPONENTS) ajv.addSchema(s);
  return ajv;
}

/** One compiler for a route table: returns each route's validators. */
export function createValidatorCompiler(): (route: Pick<Route, 'query' | 'body'>) => Validators {
  const bodyAjv = makeAjv(false);
  const queryAjv = makeAjv(true);
  return (route) => ({
    ...(route.body ? { body: bodyAjv.compile(route.body) } : {}),
    ...(route.query ? { query: queryAjv.compile(route.query) } : {}),
  });
}

/** A schema violation in words a client can act on: `outputs is required`, `url must be string`. */
export function describe(err: ErrorObject): string {
  const where = err.instancePath ? err.instancePath.slice(1).replaceAll('/', '.') : 'body';
  if (err.keyword === 'required')
    return `${where === 'body' ? '' : where + '.'}${(err.params as { missingProperty: string }).missingProperty} is required`;
  if (err.keyword === 'additionalProperties')
    return `${where} has an unknown field ${(err.params as { additionalProperty: string }).additionalProperty}`;
  return `${where} ${err.message}`;
}

/** Validate and coerce the query in place, or throw bad_request. */
// biome-ignore lint/suspicious/noExplicitAny: the query was just validated against the route's schema; the handler reads it by name
export function validateQuery(validate: ValidateFunction, q: Record<string, unknown>): Record<string, any> {
  if (!validate(q)) throw new ApiError('bad_request', `query: ${describe(validate.errors![0]!).replace(/^body/, 'query')}`);
  // coercion turns "Infinity" and "1e400" into Infinity, which JSON Schema calls a number
  for (const k in q) {
    const v = q[k];
    if (typeof v === 'number' && !Number.isFinite(v)) throw new ApiError('bad_request', `query: ${k} must be a finite number`);
  }
  return q;
}

/** Validate the parsed body, or throw the route's code for the first violation (default bad_request). */
export function validateBody(validate: ValidateFunction, body: unknown, codeOf?: (err: ErrorObject) => ErrorCode): unknown {
  if (!validate(body)) {
    const first = validate.errors![0]!;
    throw new ApiError(codeOf?.(first) ?? 'bad_request', describe(first), { field: first.instancePath || undefined });
  }
  return body;
}
