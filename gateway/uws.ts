// Load a native uWebSockets.js build and refuse to run on anything else. The trufflesuite package
// silently falls back to a `ws`-based emulation when its binary does not load; we bypass its
// loader and require the binaries ourselves.
import { createRequire } from 'node:module';
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';

const require = createRequire(import.meta.url);

export type Uws = typeof import('uWebSockets.js');

export interface UwsCandidate {
  /** npm package name (or alias) */
  pkg: string;
  /** binary path inside the package for this platform / ABI */
  binary: (abi: string) => string;
}

const triple = (abi: string) => `uws_${process.platform}_${process.arch}_${abi}.node`;

/** Tried in order: a newer build where glibc allows it, then the Node 20 build that runs here. */
export const UWS_CANDIDATES: UwsCandidate[] = [
  { pkg: '@btc-vision/uwebsockets.js', binary: (abi) => triple(abi) },
  { pkg: 'uWebSockets.js', binary: (abi) => join('binaries', triple(abi)) },
];

export class NativeUwsError extends Error {
  constructor(readonly attempts: string[]) {
    super(`no native uWebSockets.js build loads on this machine (node ABI ${process.versions.modules}, ${process.platform}-${process.arch}); refusing to start on the JS fallback. Tried:\n  ${attempts.join('\n  ')}`);
    this.name = 'NativeUwsError';
  }
}

let cached: { uws: Uws; from: string } | undefined;

export function loadNativeUws(candidates = UWS_CANDIDATES): { uws: Uws; from: string } {
  if (cached && candidates === UWS_CANDIDATES) return cached;
  const attempts: string[] = [];
  for (const c of candidates) {
    let root: string;
    try {
      root = dirname(require.resolve(`${c.pkg}/package.json`));
    } catch {
      attempts.push(`${c.pkg}: not installed`);
      continue;
    }
    const file = join(root, c.binary(process.versions.modules));
    if (!existsSync(file)) {
      attempts.push(`${c.pkg}: no binary ${file}`);
      continue;
    }
    if (!file.endsWith('.node')) {
      attempts.push(`${c.pkg}: ${file} is not a native addon`);
      continue;
    }
    try {
      const uws = require(file) as Uws;
      if (typeof uws.App !== 'function' || typeof uws.us_listen_socket_close !== 'function') throw new Error('not a uWS binary');
      const loaded = { uws, from: file };
      if (candidates === UWS_CANDIDATES) cached = loaded;
      return loaded;
    } catch (e) {
      attempts.push(`${c.pkg}: ${(e as Error).message.split('\n')[0]}`);
    }
  }
  throw new NativeUwsError(attempts);
}
