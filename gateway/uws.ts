// Load a native uWebSockets.js build and refuse to run on anything else. The npm packages of uWS
// ship one binary per platform and Node ABI (uws_<platform>_<arch>_<abi>.node) and a uws.js that
// may fall back to something else when none loads; we bypass their loaders and require the binary
// for the running Node ourselves, trying each package in turn. Which one loads where (glibc):
//   @btc-vision/uwebsockets.js 20.57.0 (uWS v20.57.0): Node 22, 24 (ABI 127, 137); its linux builds
//     need glibc >= 2.38 (Debian 13, Ubuntu 24.04).
//   @based/uws 6.0.1 (uWS v20.51.0), installed as `uWebSockets.js` (its types are the code's): Node 20
//     and 22 on glibc 2.36 (Debian 12); its Node 24 build also needs glibc >= 2.38.
// No package has a Node 26 build yet: there the gateway refuses to start, saying so.
import { createRequire } from 'node:module';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

const require = createRequire(import.meta.url);

export type Uws = typeof import('uWebSockets.js');

export interface UwsCandidate {
  /** npm package name (or alias) */
  pkg: string;
  /** binary path inside the package for this platform / ABI */
  binary: (abi: string) => string;
}

const triple = (abi: string) => `uws_${process.platform}_${process.arch}_${abi}.node`;

/** Tried in order: the newer uWS where glibc allows it, then the build that runs on Debian 12. */
export const UWS_CANDIDATES: UwsCandidate[] = [
  { pkg: '@btc-vision/uwebsockets.js', binary: triple },
  { pkg: 'uWebSockets.js', binary: triple },
];

/** Node major of each ABI a uWS package may ship (process.versions.modules). */
const NODE_OF_ABI: Record<string, string> = { 108: '18', 115: '20', 127: '22', 131: '23', 137: '24', 141: '25', 147: '26' };

/** The C library the running Node uses: glibc's version, or what else it is. */
let libc: string | undefined;
export function libcOf(): string {
  if (process.platform !== 'linux') return process.platform;
  const header = libc ? undefined : (process.report?.getReport() as { header?: { glibcVersionRuntime?: string } } | undefined)?.header;
  return (libc ??= header?.glibcVersionRuntime ? `glibc ${header.glibcVersionRuntime}` : 'not glibc (musl?)');
}

/**
 * A package's folder, found the way Node finds a bare specifier (the node_modules folders up from
 * here) but without `require.resolve('<pkg>/package.json')`, which throws ERR_PACKAGE_PATH_NOT_EXPORTED
 * for packages whose `exports` map omits it (both uWS packages).
 */
export function packageDir(pkg: string): string | undefined {
  for (const dir of require.resolve.paths(pkg) ?? []) {
    if (existsSync(join(dir, pkg, 'package.json'))) return join(dir, pkg);
  }
  return undefined;
}

export interface LoadedUws {
  uws: Uws;
  /** the binary's path */
  from: string;
  /** the npm package it came from (the real name, not an alias) and its version */
  pkg: string;
  version: string;
}

export class NativeUwsError extends Error {
  readonly attempts: string[];
  constructor(attempts: string[]) {
    super(
      `no native uWebSockets.js build loads on Node ${process.versions.node} (ABI ${process.versions.modules}), ${process.platform}-${process.arch}, ${libcOf()}; refusing to start without one (no JS fallback). Tried:\n  ${attempts.join('\n  ')}\n` +
        'Node 22 runs on glibc >= 2.36 (Debian 12); Node 24 needs glibc >= 2.38 (Debian 13, Ubuntu 24.04); no uWS package has a build for Node 26 yet.',
    );
    this.attempts = attempts;
    this.name = 'NativeUwsError';
  }
}

let cached: LoadedUws | undefined;

/**
 * The largest request head (request line and headers) uWS reads, in bytes; a larger one is answered
 * `431` by uWS itself, before the pipeline. uWS reads UWS_HTTP_MAX_HEADERS_SIZE once, when its binary
 * loads; its default, 4 KB, would answer a long but legal path (a percent-encoded URL in a job id or
 * query) with uWS's HTML page instead of our error document. An operator's own value wins.
 */
export const MAX_REQUEST_HEAD_BYTES = 32 * 1024;

export function loadNativeUws(candidates = UWS_CANDIDATES): LoadedUws {
  if (cached && candidates === UWS_CANDIDATES) return cached;
  process.env.UWS_HTTP_MAX_HEADERS_SIZE ??= String(MAX_REQUEST_HEAD_BYTES);
  const attempts: string[] = [];
  const abi = process.versions.modules;
  for (const c of candidates) {
    const root = packageDir(c.pkg);
    if (!root) {
      attempts.push(`${c.pkg}: not installed`);
      continue;
    }
    const meta = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { name?: string; version?: string };
    const label = `${c.pkg}${meta.name && meta.name !== c.pkg ? ` (${meta.name})` : ''} ${meta.version ?? '?'}`;
    const file = join(root, c.binary(abi));
    if (!file.endsWith('.node')) {
      attempts.push(`${label}: ${file} is not a native addon`);
      continue;
    }
    if (!existsSync(file)) {
      const abis = readdirSync(root)
        .map((f) => f.match(/^uws_(.+)_(\d+)\.node$/))
        .filter((m) => m && m[1] === `${process.platform}_${process.arch}`)
        .map((m) => m![2]!);
      const have = abis.length ? abis.map((a) => `${a} (Node ${NODE_OF_ABI[a] ?? '?'})`).join(', ') : 'none';
      attempts.push(
        `${label}: no build for ABI ${abi} (Node ${process.versions.node.split('.')[0]}); its ${process.platform}-${process.arch} builds: ${have}`,
      );
      continue;
    }
    try {
      const uws = require(file) as Uws;
      if (typeof uws.App !== 'function' || typeof uws.us_listen_socket_close !== 'function') throw new Error('not a uWS binary');
      const loaded = { uws, from: file, pkg: meta.name ?? c.pkg, version: meta.version ?? '?' };
      if (candidates === UWS_CANDIDATES) cached = loaded;
      return loaded;
    } catch (e) {
      // e.g. "version `GLIBC_2.38' not found": the build needs a newer C library than this machine's
      attempts.push(`${label}: ${file} does not load: ${(e as Error).message.split('\n')[0]}`);
    }
  }
  throw new NativeUwsError(attempts);
}

/** What the service runs on, for the start banner and the gateway's runtime-info gauge. */
export function runtimeInfo(): { node: string; abi: string; libc: string; uws: string; uwsBinary: string } {
  const base = { node: process.versions.node, abi: process.versions.modules, libc: libcOf() };
  try {
    const u = loadNativeUws();
    return { ...base, uws: `${u.pkg}@${u.version}`, uwsBinary: u.from.slice(u.from.lastIndexOf('/') + 1) };
  } catch {
    return { ...base, uws: 'none', uwsBinary: 'none' };
  }
}
