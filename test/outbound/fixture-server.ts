// A real HTTP server on 127.0.0.1 whose routes a test defines; closed at teardown.
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export type Route = (req: http.IncomingMessage, res: http.ServerResponse) => void;

export async function fixtureServer(t: { teardown(fn: () => unknown): void }, routes: Record<string, Route>, host = '127.0.0.1') {
  const hits: string[] = [];
  const server = http.createServer((req, res) => {
    hits.push(req.url ?? '');
    const path = new URL(req.url ?? '/', 'http://x').pathname;
    const r = routes[path];
    if (r) r(req, res);
    else res.writeHead(404, { 'content-type': 'text/plain' }).end('not found');
  });
  const sockets = new Set<import('node:net').Socket>();
  server.on('connection', (s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((r) => server.listen(0, host, () => r()));
  const port = (server.address() as AddressInfo).port;
  t.teardown(
    () =>
      new Promise<void>((r) => {
        for (const s of sockets) s.destroy();
        server.close(() => r());
      }),
  );
  const h = host.includes(':') ? `[${host}]` : host;
  return { port, base: `http://${h}:${port}`, url: (p: string) => `http://${h}:${port}${p}`, hits };
}

export const html =
  (body: string, headers: Record<string, string> = {}): Route =>
  (_req, res) => {
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8', ...headers }).end(body);
  };
export const redirect =
  (to: string, status = 302): Route =>
  (_req, res) => {
    res.writeHead(status, { location: to }).end();
  };
