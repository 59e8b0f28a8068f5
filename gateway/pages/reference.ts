// The API reference (`/docs`): /openapi.json rendered in the browser by Scalar's standalone bundle,
// which ships in the @scalar/api-reference npm package and is served from this gateway
// (`/docs/scalar.js`), so the page works with no internet. Its Content-Security-Policy allows
// scripts, styles, fonts, images and connections from this gateway only. Styles also allow
// 'unsafe-inline': the renderer writes its theme as <style> elements without a nonce (six of them,
// seen as CSP violations in Chromium); an inline style loads nothing (its fonts and images are
// still held to this gateway by font-src and img-src).
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';
import type { Route } from '../route.ts';
import { ERRORS_PATH } from '../../shared/errors.ts';

export const REFERENCE_PATH = '/docs';
const HERE = join(dirname(fileURLToPath(import.meta.url)), 'reference');
const require = createRequire(import.meta.url);

/** The renderer's bundle, read and compressed once, when the page is first asked for. */
let bundle: { raw: Buffer; gzip: Buffer } | undefined;
function scalarBundle() {
  if (!bundle) {
    const raw = readFileSync(join(dirname(require.resolve('@scalar/api-reference')), 'browser', 'standalone.js'));
    bundle = { raw, gzip: gzipSync(raw) };
  }
  return bundle;
}

export const REFERENCE_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self' 'unsafe-inline'",
  "font-src 'self'",
  "img-src 'self' data: blob:",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

const HEADERS = { 'x-content-type-options': 'nosniff', 'referrer-policy': 'no-referrer' };

export function referencePage(): string {
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<link rel="icon" href="data:,">
<title>API reference · Payloads</title>
<link rel="stylesheet" href="${REFERENCE_PATH}/reference.css">
</head><body>
<nav class="top" aria-label="Payloads"><strong><a href="/">Payloads</a> API reference</strong>
<a href="/account">Account: key and balance</a> <a href="${ERRORS_PATH}">Errors</a> <a href="/openapi.json">openapi.json</a></nav>
<div id="reference"></div>
<script src="${REFERENCE_PATH}/scalar.js"></script>
<script src="${REFERENCE_PATH}/reference.js"></script>
</body></html>`;
}

const file = (path: string, name: string, contentType: string): Route => {
  const body = readFileSync(join(HERE, name));
  return {
    method: 'GET',
    path,
    auth: false,
    hidden: true,
    tags: ['docs'],
    summary: `API reference: ${name}`,
    errors: [],
    responses: { 200: { description: name, contentType } },
    handler: async () => ({ body, headers: { 'content-type': contentType, 'cache-control': 'public, max-age=300', ...HEADERS } }),
  };
};

export const referenceRoutes: Route[] = [
  {
    method: 'GET',
    path: REFERENCE_PATH,
    auth: false,
    hidden: true,
    tags: ['docs'],
    summary: 'API reference (HTML, rendered from /openapi.json)',
    errors: [],
    responses: { 200: { description: 'HTML page', contentType: 'text/html' } },
    fixedAnswer: true,
    handler: async () => ({
      body: referencePage(),
      headers: {
        'content-type': 'text/html; charset=utf-8',
        'content-security-policy': REFERENCE_CSP,
        'cache-control': 'public, max-age=300',
        ...HEADERS,
      },
    }),
  },
  {
    method: 'GET',
    path: `${REFERENCE_PATH}/scalar.js`,
    auth: false,
    hidden: true,
    tags: ['docs'],
    summary: 'API reference: the renderer (Scalar standalone bundle)',
    errors: [],
    responses: { 200: { description: 'JavaScript', contentType: 'text/javascript' } },
    handler: async (req) => {
      const b = scalarBundle();
      const gzip = /\bgzip\b/.test(req.headers['accept-encoding'] ?? '');
      return {
        body: gzip ? b.gzip : b.raw,
        headers: {
          'content-type': 'text/javascript; charset=utf-8',
          'cache-control': 'public, max-age=3600',
          vary: 'accept-encoding',
          ...(gzip ? { 'content-encoding': 'gzip' } : {}),
          ...HEADERS,
        },
      };
    },
  },
  file(`${REFERENCE_PATH}/reference.js`, 'reference.js', 'text/javascript; charset=utf-8'),
  file(`${REFERENCE_PATH}/reference.css`, 'reference.css', 'text/css; charset=utf-8'),
];
