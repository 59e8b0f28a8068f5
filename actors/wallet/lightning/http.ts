// A small JSON-over-HTTP(S) client for the node backends: node's own http/https, so a node's
// self-signed TLS certificate can be trusted by file (wallet.lightning.tlsCertPath).
import http from 'node:http';
import https from 'node:https';
import { readFileSync } from 'node:fs';
import { LightningError } from './types.ts';

export interface HttpClient {
  json<T>(method: 'GET' | 'POST', path: string, body?: unknown): Promise<T>;
  /** Streaming GET: calls onLine for each newline-delimited line; resolves when the stream ends. */
  lines(path: string, onLine: (line: string) => void, signal: AbortSignal): Promise<void>;
}

export function httpClient(
  baseUrl: string,
  headers: Record<string, string>,
  opts: { tlsCertPath?: string; timeoutMs: number },
): HttpClient {
  if (!baseUrl) throw new LightningError('wallet.lightning.url is not set');
  const base = new URL(baseUrl.replace(/\/+$/, '') + '/');
  const ca = opts.tlsCertPath ? readFileSync(opts.tlsCertPath) : undefined;
  const mod = base.protocol === 'https:' ? https : http;

  function request(method: string, path: string, body: string | undefined, timeoutMs: number | undefined, signal?: AbortSignal) {
    const url = new URL(path.replace(/^\//, ''), base);
    return new Promise<http.IncomingMessage>((resolve, reject) => {
      const req = mod.request(
        url,
        {
          method,
          headers: {
            accept: 'application/json',
            ...headers,
            ...(body !== undefined ? { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) } : {}),
          },
          ...(ca ? { ca } : {}),
          signal,
        },
        resolve,
      );
      if (timeoutMs)
        req.setTimeout(timeoutMs, () => req.destroy(new LightningError(`${method} ${url.pathname}: no answer in ${timeoutMs} ms`)));
      req.on('error', (e) => reject(e instanceof LightningError ? e : new LightningError(`${method} ${url.pathname}: ${e.message}`)));
      req.end(body);
    });
  }

  return {
    async json<T>(method: 'GET' | 'POST', path: string, body?: unknown): Promise<T> {
      const res = await request(method, path, body === undefined ? undefined : JSON.stringify(body), opts.timeoutMs);
      const chunks: Buffer[] = [];
      for await (const c of res) chunks.push(c as Buffer);
      const text = Buffer.concat(chunks).toString('utf8');
      const status = res.statusCode ?? 0;
      if (status < 200 || status >= 300) throw new LightningError(`${method} ${path}: HTTP ${status} ${text.slice(0, 200)}`, status);
      try {
        return JSON.parse(text) as T;
      } catch {
        throw new LightningError(`${method} ${path}: answer is not JSON`, status);
      }
    },
    async lines(path, onLine, signal) {
      const res = await request('GET', path, undefined, undefined, signal);
      if ((res.statusCode ?? 0) !== 200) {
        res.resume();
        throw new LightningError(`GET ${path}: HTTP ${res.statusCode}`, res.statusCode);
      }
      let buf = '';
      for await (const c of res) {
        buf += (c as Buffer).toString('utf8');
        let i: number;
        while ((i = buf.indexOf('\n')) >= 0) {
          const line = buf.slice(0, i).trim();
          buf = buf.slice(i + 1);
          if (line) onLine(line);
        }
      }
      if (buf.trim()) onLine(buf.trim());
    },
  };
}
