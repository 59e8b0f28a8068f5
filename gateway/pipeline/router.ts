// The route table, compiled once at start: static paths in a map (their answer per method is
// precomputed, parameterised routes that also match them included), parameterised paths grouped by
// segment count. A request costs one map lookup, or one split and a few segment compares, instead
// of a regex per route. Matching is on the raw path (a parameter may hold %2F); one trailing slash
// is ignored; the first declared route wins for a method.
import type { Method } from '../route.ts';

export interface RouteMatch<T> {
  target: T;
  /** Decoded path parameters (left raw, all of them, when one does not decode). */
  params: Record<string, string>;
}

export interface Router<T> {
  /** The route for this method and raw path; HEAD is answered by GET routes. */
  find(method: string, rawPath: string): RouteMatch<T> | undefined;
  /** Methods some route answers on this path, in declaration order (for 405 and OPTIONS); empty: no such path. */
  allowed(rawPath: string): readonly string[];
}

interface Pattern<T> {
  index: number;
  method: string;
  /** One entry per segment: the literal, or null for a parameter. */
  segments: (string | null)[];
  names: string[];
  positions: number[];
  target: T;
}

interface StaticPath<T> {
  byMethod: Map<string, RouteMatch<T>>;
  allow: string[];
}

const NO_PARAMS: Record<string, string> = Object.freeze({}) as Record<string, string>;
const trimSlash = (p: string) => (p.length > 1 && p.endsWith('/') ? p.slice(0, -1) : p);

function matches(p: Pattern<unknown>, segments: string[]): boolean {
  for (let i = 1; i < segments.length; i++) {
    const lit = p.segments[i];
    if (lit === null ? segments[i] === '' : lit !== segments[i]) return false;
  }
  return true;
}

function paramsOf(p: Pattern<unknown>, segments: string[]): Record<string, string> {
  const params: Record<string, string> = {};
  try {
    for (let i = 0; i < p.names.length; i++) params[p.names[i]!] = decodeURIComponent(segments[p.positions[i]!]!);
  } catch {
    for (let i = 0; i < p.names.length; i++) params[p.names[i]!] = segments[p.positions[i]!]!;
  }
  return params;
}

export function compileRouter<T>(routes: readonly { method: Method; path: string; target: T }[]): Router<T> {
  const byCount = new Map<number, Pattern<T>[]>();
  const staticDecl = new Map<string, { index: number; method: string; target: T }[]>();
  routes.forEach((r, index) => {
    if (!r.path.includes('/:')) {
      const path = trimSlash(r.path);
      staticDecl.set(path, [...(staticDecl.get(path) ?? []), { index, method: r.method, target: r.target }]);
      return;
    }
    const segments: (string | null)[] = [];
    const names: string[] = [];
    const positions: number[] = [];
    trimSlash(r.path)
      .split('/')
      .forEach((s, i) => {
        if (s.startsWith(':')) {
          names.push(s.slice(1));
          positions.push(i);
          segments.push(null);
        } else segments.push(s);
      });
    const bucket = byCount.get(segments.length) ?? [];
    bucket.push({ index, method: r.method, segments, names, positions, target: r.target });
    byCount.set(segments.length, bucket);
  });

  const statics = new Map<string, StaticPath<T>>();
  for (const [path, decl] of staticDecl) {
    const segments = path.split('/');
    const candidates: { index: number; method: string; match: RouteMatch<T> }[] = decl.map((d) => ({
      index: d.index,
      method: d.method,
      match: { target: d.target, params: NO_PARAMS },
    }));
    for (const p of byCount.get(segments.length) ?? []) {
      if (matches(p, segments))
        candidates.push({ index: p.index, method: p.method, match: { target: p.target, params: Object.freeze(paramsOf(p, segments)) } });
    }
    candidates.sort((a, b) => a.index - b.index);
    const byMethod = new Map<string, RouteMatch<T>>();
    for (const c of candidates) if (!byMethod.has(c.method)) byMethod.set(c.method, c.match);
    statics.set(path, { byMethod, allow: [...byMethod.keys()] });
  }

  return {
    find(method, rawPath) {
      const m = method === 'HEAD' ? 'GET' : method;
      const path = trimSlash(rawPath);
      const s = statics.get(path);
      if (s) return s.byMethod.get(m);
      const segments = path.split('/');
      const bucket = byCount.get(segments.length);
      if (!bucket) return undefined;
      for (const p of bucket) if (p.method === m && matches(p, segments)) return { target: p.target, params: paramsOf(p, segments) };
      return undefined;
    },
    allowed(rawPath) {
      const path = trimSlash(rawPath);
      const s = statics.get(path);
      if (s) return s.allow;
      const segments = path.split('/');
      const allow: string[] = [];
      for (const p of byCount.get(segments.length) ?? []) if (!allow.includes(p.method) && matches(p, segments)) allow.push(p.method);
      return allow;
    },
  };
}
