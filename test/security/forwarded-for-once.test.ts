// Issue 44 item 6: X-Forwarded-For was read two ways. The fixed-answer path (GET /v1, /v1/pricing,
// /v1/services) took uWS's getHeader, the first of a repeated header; every other path a map that
// kept the last. A client behind a trusted proxy that appends its own header could send one of its
// own first and be counted as a new address on every fixed answer. Now one reader joins every
// X-Forwarded-For header in order (RFC 9110: a repeated header is one list) for both paths.
import t from 'tap';
import net from 'node:net';
import { startTestApp } from '../helpers/app.ts';

/** Raw HTTP/1.1: fetch would join repeated headers itself, which is what we must not rely on. */
function rawGet(port: number, path: string, headerLines: string[]): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = net.connect(port, '127.0.0.1', () =>
      s.write(`GET ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\n${headerLines.map((l) => `${l}\r\n`).join('')}Connection: close\r\n\r\n`),
    );
    let data = '';
    s.on('data', (d) => {
      data += d;
    });
    s.on('end', () => resolve(Number(/^HTTP\/1\.1 (\d{3})/.exec(data)?.[1] ?? 0)));
    s.on('error', reject);
  });
}

t.test('two X-Forwarded-For headers: every path counts the address the proxy wrote', async (t) => {
  const app = await startTestApp(t, { config: { server: { trustedProxies: ['loopback'], publicRequestsPerMinute: 3 } } });
  const port = app.gateway.port;
  // the client's own header first, the proxy's (appended as a second header) last
  const asClient = (i: number) => [`X-Forwarded-For: 203.0.113.${i + 1}`, 'X-Forwarded-For: 198.51.100.77'];
  const fixed: number[] = [];
  for (let i = 0; i < 5; i++) fixed.push(await rawGet(port, '/v1/pricing', asClient(i)));
  t.same(fixed, [200, 200, 200, 429, 429], 'the fixed-answer path: a new first header each time does not help');

  const app2 = await startTestApp(t, { config: { server: { trustedProxies: ['loopback'], publicRequestsPerMinute: 3 } } });
  const port2 = app2.gateway.port;
  // one client, both paths: a fixed answer and an ordinary route (/account/config) share its tokens
  const mixed: number[] = [];
  mixed.push(await rawGet(port2, '/v1/pricing', asClient(10)));
  mixed.push(await rawGet(port2, '/account/config', asClient(11)));
  mixed.push(await rawGet(port2, '/v1', asClient(12)));
  mixed.push(await rawGet(port2, '/account/config', asClient(13)));
  mixed.push(await rawGet(port2, '/v1/pricing', asClient(14)));
  t.same(mixed, [200, 200, 200, 429, 429], 'fixed and ordinary paths see the same client');
  t.equal(await rawGet(port2, '/v1/pricing', ['X-Forwarded-For: 198.51.100.78']), 200, 'another client behind the proxy: its own tokens');
});
