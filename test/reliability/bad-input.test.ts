// Bad input, property-based (fast-check): every operation of the gateway's own /openapi.json gets
// malformed JSON, wrong types, missing and unknown fields, huge and unicode strings, bad query and
// path values, bad keys, oversized and mistyped bodies. Every answer must be a 4xx carrying the
// error body with a code that the operation documents for that status; afterwards nothing was
// charged (balance and ledger unchanged, nothing published to JOBS or TASKS, no job documents), the
// gateway still answers /healthz, and the money audit is clean.
//   BAD_INPUT_RUNS=200 npx tap test/reliability/bad-input.test.ts   (default 25 runs per property)
import t from 'tap';
import fc from 'fast-check';
import { jetstreamManager } from '@nats-io/jetstream';
import { Kvm } from '@nats-io/kv';
import { startTestApp } from '../helpers/app.ts';
import { ERRORS, ApiError } from '../../shared/errors.ts';
import { BUCKETS, STREAMS, SERVICES } from '../../shared/names.ts';
import { wallet } from '../../shared/protocol/wallet.ts';
import { audit, readLedger } from '../../shared/audit.ts';
import { MAX_REQUEST_HEAD_BYTES } from '../../gateway/uws.ts';

/** Query values no integer or literal parameter may accept. */
const NON_FINITE = ['1e400', 'Infinity', '-Infinity'];
const FIXED_BAD_QUERY = [...NON_FINITE, '-1', 'abc', '1.5', '', '９', '1_000', '1,5'];
const RUNS = Number(process.env.BAD_INPUT_RUNS ?? 25);
const GRANT = 5_000_000;

type Schema = {
  type?: string;
  properties?: Record<string, Schema>;
  required?: string[];
  $ref?: string;
  anyOf?: Schema[];
  enum?: unknown[];
  const?: unknown;
  minimum?: number;
  maximum?: number;
};
interface Param {
  name: string;
  in: 'path' | 'query';
  schema: Schema;
}
interface Operation {
  method: string;
  path: string;
  auth: boolean;
  params: Param[];
  body?: Schema;
  bodyName?: string;
  /** status → codes the operation documents for it */
  codes: Map<number, Set<string>>;
}

/** Bodies that pass the schema; the properties mutate them into something that must not. */
const VALID_BODIES: Record<string, Record<string, unknown>> = {
  WebsiteproBody: { url: 'https://example.com/page', outputs: ['metadata', 'text'] },
  ShotsBody: { url: 'https://example.com/', browsers: ['chromium'] },
  LabsBody: { relay: 'wss://relay.example.com', modules: ['quick'] },
};

t.test('bad input to every endpoint: 4xx with a documented code, nothing charged, nothing crashes', async (t) => {
  const app = await startTestApp(t, {
    actors: ['wallet', 'job-supervisor'],
    config: {
      // the properties must meet validation, not the limiter
      limits: { jobsPerHour: 1_000_000, jobRequestsPerMinute: 1_000_000 },
      server: { keyRequestsPerMinute: 1_000_000, publicRequestsPerMinute: 1_000_000 },
      // production outbound rules: no loopback targets
      outbound: { allowCidrs: [], checksPerKeyPerMinute: 1_000_000, checksPerTargetPerMinute: 1_000_000 },
    },
  });
  const { key, walletId } = await app.newKey();
  await wallet.grant(app.nc, walletId, GRANT, 'bad-input test funds', 'bad-input-grant');

  const doc = (await app.request('GET', '/openapi.json')).json;
  t.ok(doc?.paths, 'the gateway serves its OpenAPI document');
  const resolve = (s: Schema): Schema => (s?.$ref ? doc.components.schemas[s.$ref.split('/').pop()!] : s);
  const ops: Operation[] = [];
  for (const [path, methods] of Object.entries<Record<string, any>>(doc.paths)) {
    for (const [method, op] of Object.entries<any>(methods)) {
      const codes = new Map<number, Set<string>>();
      for (const [status, r] of Object.entries<any>(op.responses)) {
        const found = [...String(r.description ?? '').matchAll(/`([a-z_]+)` \(/g)].map((m) => m[1]!);
        if (found.length) codes.set(Number(status), new Set(found));
      }
      const bodyRef = op.requestBody?.content?.['application/json']?.schema;
      ops.push({
        method: method.toUpperCase(),
        path,
        auth: (op.security ?? []).length > 0,
        params: (op.parameters ?? []).map((p: Param) => ({ ...p, schema: resolve(p.schema) })),
        ...(bodyRef ? { body: resolve(bodyRef), bodyName: bodyRef.$ref?.split('/').pop() } : {}),
        codes,
      });
    }
  }
  t.ok(ops.length >= 15, `${ops.length} operations in /openapi.json`);
  for (const s of SERVICES)
    t.ok(
      ops.some((o) => o.path === `/v1/${s}/jobs` && o.method === 'POST'),
      `POST /v1/${s}/jobs is documented`,
    );

  const answers = new Map<string, number>();
  let requests = 0;
  /** One request; the answer must be a documented 4xx (or, where `okAllowed`, a 2xx). */
  const send = async (
    op: Operation | undefined,
    method: string,
    path: string,
    o: { key?: string; body?: unknown; raw?: string; headers?: Record<string, string> },
    okAllowed = false,
  ) => {
    const r = await app.request(method, path, o);
    requests++;
    const where = `${method} ${path.slice(0, 120)} ${o.raw !== undefined ? `raw(${o.raw.length})` : JSON.stringify(o.body ?? null).slice(0, 160)}`;
    if (okAllowed && r.status < 300) return r;
    // a request head over the HTTP layer's bound is answered 431 by uWS itself, before the pipeline
    // (docs/decisions.md, HTTP); only a path that long may get it
    if (r.status === 431 && path.length > MAX_REQUEST_HEAD_BYTES - 2048) {
      answers.set(
        "431 (request head over the HTTP layer's bound)",
        (answers.get("431 (request head over the HTTP layer's bound)") ?? 0) + 1,
      );
      return r;
    }
    const code = r.json?.error?.code;
    answers.set(`${r.status} ${code}`, (answers.get(`${r.status} ${code}`) ?? 0) + 1);
    if (r.status < 400 || r.status > 499) throw new Error(`${where}: answered ${r.status} ${r.text.slice(0, 300)}`);
    if (typeof code !== 'string' || !ApiError.isCode(code))
      throw new Error(`${where}: ${r.status} without a known error code: ${r.text.slice(0, 300)}`);
    if (typeof r.json.error.message !== 'string' || !r.json.error.message) throw new Error(`${where}: error without a message`);
    if (ERRORS[code].status !== r.status)
      throw new Error(`${where}: code ${code} with status ${r.status} (the code's status is ${ERRORS[code].status})`);
    if (op) {
      const documented = op.codes.get(r.status);
      if (!documented?.has(code))
        throw new Error(
          `${where}: ${r.status} ${code} is not among the codes /openapi.json documents for ${op.method} ${op.path} (${[...(documented ?? [])].join(', ')})`,
        );
    }
    return r;
  };

  // --- generators ----------------------------------------------------------------------------
  const unicode = fc.string({ unit: 'grapheme', minLength: 1, maxLength: 40 });
  const anyString = fc.oneof(unicode, fc.string({ unit: 'binary', maxLength: 40 }), fc.string({ maxLength: 40 }));
  const huge = fc
    .tuple(fc.constantFrom('a', 'é', '𝌆', '\u0000', '%', '/', ' '), fc.integer({ min: 3000, max: 20000 }))
    .map(([c, n]) => c.repeat(n));
  const jsonOfType = (type: string | undefined) => {
    const all = {
      string: anyString as fc.Arbitrary<unknown>,
      integer: fc.integer() as fc.Arbitrary<unknown>,
      number: fc.double({ noNaN: true, noDefaultInfinity: true }) as fc.Arbitrary<unknown>,
      boolean: fc.boolean() as fc.Arbitrary<unknown>,
      null: fc.constant(null) as fc.Arbitrary<unknown>,
      array: fc.array(fc.jsonValue(), { maxLength: 4 }) as fc.Arbitrary<unknown>,
      object: fc.dictionary(fc.string({ maxLength: 8 }), fc.jsonValue(), { maxKeys: 3 }) as fc.Arbitrary<unknown>,
    };
    const wrong = Object.entries(all)
      .filter(([k]) => k !== type && !(type === 'number' && k === 'integer') && !(type === 'integer' && k === 'number'))
      .map(([, a]) => a);
    return fc.oneof(...wrong);
  };

  /** Bodies that must be refused: each is invalid for the schema in at least one way. */
  const badBody = (op: Operation) => {
    const schema = op.body!;
    const props = schema.properties ?? {};
    const required = schema.required ?? [];
    const base = VALID_BODIES[op.bodyName ?? ''] ?? {};
    const typed = Object.entries(props).filter(([, s]) => typeof s.type === 'string');
    const strings = Object.entries(props).filter(([, s]) => s.type === 'string');
    const kinds: fc.Arbitrary<{ raw?: string; body?: unknown }>[] = [
      // not JSON at all
      anyString
        .filter((s) => {
          try {
            JSON.parse(s);
            return false;
          } catch {
            return true;
          }
        })
        .map((raw) => ({ raw })),
      // JSON, but not an object
      fc
        .oneof(fc.integer(), fc.boolean(), fc.constant(null), anyString, fc.array(fc.jsonValue(), { maxLength: 3 }))
        .map((body) => ({ body })),
      // an unknown field next to valid ones
      fc
        .tuple(
          fc.string({ unit: 'grapheme', minLength: 1, maxLength: 20 }).filter((k) => !(k in props) && k !== '__proto__'),
          fc.jsonValue(),
        )
        .map(([k, v]) => ({ body: { ...base, [k]: v } })),
    ];
    if (required.length)
      kinds.push(
        fc.constantFrom(...required).map((k) => {
          const b = { ...base };
          delete b[k];
          return { body: b };
        }),
      );
    if (typed.length)
      kinds.push(fc.constantFrom(...typed).chain(([k, s]) => jsonOfType(s.type).map((v) => ({ body: { ...base, [k]: v } }))));
    if (strings.length) {
      // huge and unicode strings where a URL or relay address goes, plus a wrong-typed field so the body is surely invalid
      kinds.push(
        fc
          .tuple(
            fc.constantFrom(...strings),
            fc.oneof(
              huge,
              unicode.map((s) => `\u202e${s}\u0000`),
            ),
          )
          .map(([[k], v]) => ({ body: { ...base, [k]: v } })),
      );
    }
    if (op.bodyName === 'TopupBody' || op.path === '/v1/topups') {
      kinds.push(
        fc
          .oneof(
            fc.double({ max: 0.2499, noNaN: true }),
            fc.double({ min: 100.001, noNaN: true, noDefaultInfinity: true }),
            fc.constant(-1),
            fc.constant(1e308),
          )
          .map((eur) => ({ body: { eur } })),
      );
    }
    return fc.oneof(...kinds);
  };

  const badQueryValue = (s: Schema) => {
    if (s.type === 'integer' || s.type === 'number') {
      const below = s.minimum !== undefined ? fc.integer({ min: -1_000_000, max: s.minimum - 1 }).map(String) : fc.constant('-1.5');
      const above = s.maximum !== undefined ? fc.integer({ min: s.maximum + 1, max: 1_000_000_000 }).map(String) : fc.constant('2.5');
      return fc.oneof(
        below,
        above,
        fc.constantFrom('abc', '1.5', 'true', 'null', '[]', '{}', '0x', '--1', 'NaN', '1e-3'),
        unicode.filter((u) => Number.isNaN(Number(u))),
      );
    }
    if (s.const !== undefined || s.enum) {
      const allowed = new Set((s.enum ?? [s.const]).map(String));
      return anyString.filter((v) => !allowed.has(v) && v.length > 0);
    }
    return fc.constant(undefined);
  };
  const fill = (path: string, values: Record<string, string>) =>
    path.replace(/\{(\w+)\}/g, (_, n: string) => encodeURIComponent(values[n] ?? 'x'));
  // `.` and `..` segments are resolved by the client before sending: not a path value at all
  const pathValue = anyString.filter((s) => s.length > 0 && s !== '.' && s !== '..' && !(SERVICES as readonly string[]).includes(s));

  // --- properties ----------------------------------------------------------------------------
  const prop = async (name: string, arb: fc.Arbitrary<unknown>, run: (v: any) => Promise<void>) => {
    const out = await fc.check(
      fc.asyncProperty(arb, async (v) => {
        await run(v);
      }),
      { numRuns: RUNS },
    );
    t.notOk(
      out.failed,
      `${name}${out.failed ? `: ${String((out.errorInstance as Error)?.message ?? out.errorInstance)} (counterexample ${fc.stringify(out.counterexample)}, seed ${out.seed})` : ` (${out.numRuns} runs)`}`,
    );
  };

  for (const op of ops.filter((o) => o.body)) {
    const path = fill(op.path, {});
    await prop(`${op.method} ${op.path}: invalid bodies`, badBody(op), async (b) => {
      await send(op, op.method, path, { key, ...b, ...(b.raw !== undefined ? { headers: { 'content-type': 'application/json' } } : {}) });
    });
    // the same valid body, wrong media type or too large: refused before anything else
    await send(op, op.method, path, {
      key,
      raw: JSON.stringify(VALID_BODIES[op.bodyName ?? ''] ?? {}),
      headers: { 'content-type': 'text/plain' },
    });
    await send(op, op.method, path, {
      key,
      raw: JSON.stringify({ pad: 'x'.repeat(70 * 1024) }),
      headers: { 'content-type': 'application/json' },
    });
    await send(op, op.method, path, { key, raw: '', headers: { 'content-type': 'application/json' } });
  }

  for (const op of ops.filter((o) => o.params.some((p) => p.in === 'query'))) {
    const qs = op.params.filter(
      (p) =>
        p.in === 'query' && (p.schema.type === 'integer' || p.schema.type === 'number' || p.schema.const !== undefined || p.schema.enum),
    );
    if (!qs.length) continue;
    // edge values every run, then random ones
    for (const p of qs) {
      for (const v of FIXED_BAD_QUERY) {
        if (p.schema.const !== undefined && v === '') continue;
        // Ajv's type coercion turns "Infinity" and "1e400" into Infinity; the gateway refuses non-finite values
        await t.test(`${op.method} ${op.path}?${p.name}=${v}`, async (t) => {
          const path = `${fill(op.path, { id: 'job_nope', key: 'nope' })}?${new URLSearchParams({ [p.name]: v })}`;
          const r = await send(op, op.method, path, { key, ...(op.body ? { body: VALID_BODIES[op.bodyName ?? ''] ?? {} } : {}) }).catch(
            (e: Error) => e,
          );
          if (r instanceof Error) t.fail(r.message);
          else t.equal(r.json.error.code, 'bad_request', `${r.status} ${r.json.error.code}`);
        });
      }
    }
    const arb = fc.tuple(
      fc.constantFrom(...qs).chain((p) => badQueryValue(p.schema).map((v) => [p.name, String(v)] as const)),
      pathValue,
    );
    await prop(`${op.method} ${op.path}: bad query values`, arb, async ([[name, v], id]) => {
      const path = `${fill(op.path, { id, key: id })}?${new URLSearchParams({ [name]: v, unknownField: 'x' })}`;
      // a bad query value is refused even when the body is fine
      await send(op, op.method, path, { key, ...(op.body ? { body: VALID_BODIES[op.bodyName ?? ''] ?? {} } : {}) });
    });
  }

  for (const op of ops.filter((o) => o.params.some((p) => p.in === 'path'))) {
    await prop(
      `${op.method} ${op.path}: unknown, huge and unicode path values`,
      fc.oneof(
        pathValue,
        huge.map((h) => h.slice(0, 4000)),
      ),
      async (id) => {
        await send(op, op.method, fill(op.path, { id, key: id, service: id }), {
          key,
          ...(op.body ? { body: VALID_BODIES[op.bodyName ?? ''] ?? {} } : {}),
        });
      },
    );
  }

  const keyHeader = fc.oneof(
    fc.constant(undefined),
    fc
      .string({ minLength: 1, maxLength: 80 })
      .filter((s) => /^[\x20-\x7e]+$/.test(s.trim()) && s.trim().length > 0)
      .map((s) => `Bearer ${s.trim()}`),
    fc.string({ minLength: 1, maxLength: 40 }).filter((s) => /^[\x21-\x7e]+$/.test(s)),
    fc.constant(`Bearer ${key}x`),
    fc.constant(`Basic ${Buffer.from('a:b').toString('base64')}`),
    fc.constant(`Bearer  `),
  );
  const authOps = ops.filter((o) => o.auth);
  await prop(
    'every authenticated operation: missing or wrong keys',
    fc.tuple(fc.constantFrom(...authOps), keyHeader, pathValue),
    async ([op, h, id]) => {
      const r = await send(op, op.method, fill(op.path, { id, key: id }), {
        headers: h === undefined ? {} : { authorization: h },
        ...(op.body ? { body: VALID_BODIES[op.bodyName ?? ''] ?? {} } : {}),
      });
      if (r.status !== 401) throw new Error(`${op.method} ${op.path} with authorization ${JSON.stringify(h)}: ${r.status}, not 401`);
    },
  );

  const publicOps = ops.filter((o) => !o.auth && o.method === 'GET');
  await prop(
    'public operations: junk query strings never break them',
    fc.tuple(
      fc.constantFrom(...publicOps),
      fc.dictionary(fc.string({ minLength: 1, maxLength: 10 }), anyString, { maxKeys: 4 }),
      pathValue,
    ),
    async ([op, q, id]) => {
      // unknown query fields are ignored here: a 2xx is right, a 5xx never is
      const path = `${fill(op.path, { service: id })}?${new URLSearchParams(q as Record<string, string>)}`;
      await send(op, 'GET', path, {}, true);
    },
  );

  await prop(
    'unknown paths and methods',
    fc.tuple(fc.constantFrom('GET', 'POST', 'DELETE', 'PUT', 'PATCH'), fc.array(pathValue, { minLength: 1, maxLength: 4 })),
    async ([m, segs]) => {
      await send(undefined, m, `/v1/${segs.map(encodeURIComponent).join('/')}x`, { key, ...(m === 'GET' ? {} : { body: { a: 1 } }) });
    },
  );

  t.comment(
    `${requests} requests; answers: ${[...answers]
      .sort()
      .map(([k, n]) => `${k}×${n}`)
      .join(', ')}`,
  );

  // --- nothing charged, nothing created, nothing crashed ---------------------------------------
  t.equal((await app.request('GET', '/healthz')).status, 200, 'the gateway still answers /healthz');
  t.equal((await app.request('GET', '/v1/balance', { key })).json?.balance, GRANT, 'the balance is what was granted');
  const mine = (await readLedger(app.nc)).filter((e) => e.walletId === walletId);
  t.same(
    mine.map((e) => e.type),
    ['grant'],
    "the wallet's ledger holds only the grant",
  );
  const jsm = await jetstreamManager(app.nc);
  t.equal((await jsm.streams.info(STREAMS.jobs)).state.last_seq, 0, 'nothing was ever published to JOBS');
  t.equal((await jsm.streams.info(STREAMS.tasks)).state.last_seq, 0, 'nothing was ever published to TASKS');
  const jobKeys: string[] = [];
  for await (const k of await (await new Kvm(app.nc).open(BUCKETS.jobs)).keys()) jobKeys.push(k);
  t.same(jobKeys, [], 'no job documents');
  const report = await audit(app.nc);
  t.same(report.violations, [], 'the money audit is clean');
});
