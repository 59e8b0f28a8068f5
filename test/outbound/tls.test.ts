// https through the guard: the connection goes to the pinned address while the certificate is
// still verified against the host name (SNI), so pinning never weakens TLS.
import t from 'tap';
import https from 'node:https';
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { AddressInfo } from 'node:net';
import { guardedFetch } from '../../shared/outbound/index.ts';
import { tempDir } from '../helpers/nats.ts';

t.test('https with a pinned address', async (t) => {
  const dir = tempDir('payloads-tls-');
  execFileSync(
    'openssl',
    [
      'req',
      '-x509',
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:prime256v1',
      '-nodes',
      '-days',
      '1',
      '-subj',
      '/CN=secure.example.com',
      '-addext',
      'subjectAltName=DNS:secure.example.com,IP:127.0.0.1',
      '-keyout',
      join(dir, 'key.pem'),
      '-out',
      join(dir, 'cert.pem'),
    ],
    { stdio: 'ignore' },
  );
  const cert = readFileSync(join(dir, 'cert.pem'));
  const server = https.createServer({ key: readFileSync(join(dir, 'key.pem')), cert }, (req, res) => res.end(`tls ok ${req.headers.host}`));
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  t.teardown(() => new Promise((r) => server.close(r)));
  const port = (server.address() as AddressInfo).port;
  const allow = ['127.0.0.1/32'];
  const toLoopback = async () => [{ address: '127.0.0.1', family: 4 }];

  await t.rejects(
    guardedFetch(`https://127.0.0.1:${port}/`, { allowCidrs: allow }),
    { code: 'unreachable', message: /TLS|CERT|self.signed/i },
    'an untrusted certificate is refused',
  );
  const ip = await guardedFetch(`https://127.0.0.1:${port}/`, { allowCidrs: allow, ca: cert });
  t.equal(ip.body.toString(), `tls ok 127.0.0.1:${port}`);
  const named = await guardedFetch(`https://secure.example.com:${port}/`, { allowCidrs: allow, ca: cert, resolver: toLoopback });
  t.equal(named.body.toString(), `tls ok secure.example.com:${port}`, 'name verified, pinned address used');
  await t.rejects(
    guardedFetch(`https://other.example.com:${port}/`, { allowCidrs: allow, ca: cert, resolver: toLoopback }),
    { code: 'unreachable' },
    'a certificate for another name is refused',
  );
});
