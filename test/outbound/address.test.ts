// The guard's decision table, without network: URL spellings go through the WHATWG parser exactly
// as a customer URL does, then through classifyHost + blockReason.
import t from 'tap';
import { isPublicAddress, classifyHost, blockReason, resolvePinned, OutboundError } from '../../shared/outbound/index.ts';

/** Decide a URL with no network: IP literals and refused names only (names that need DNS → 'dns'). */
function decide(raw: string, allowCidrs: string[] = []): 'public' | 'refused' | 'dns' {
  let u: URL;
  try {
    u = new URL(raw);
  } catch {
    return 'refused';
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') return 'refused';
  const c = classifyHost(u.hostname);
  if (c.kind === 'blocked') return 'refused';
  if (c.kind === 'name') return 'dns';
  return blockReason(c.address, allowCidrs) ? 'refused' : 'public';
}

const REFUSED = [
  // loopback in every spelling the URL parser accepts
  'http://127.0.0.1/',
  'http://127.1/',
  'http://127.0.1/',
  'http://2130706433/',
  'http://0x7f000001/',
  'http://0x7f.0.0.1/',
  'http://0177.0.0.1/',
  'http://017700000001/',
  'http://%31%32%37.0.0.1/',
  'http://①②⑦.0.0.1/',
  'http://127.255.255.254:8080/',
  'http://localhost/',
  'http://LOCALHOST./',
  'http://foo.localhost/',
  'http://[::1]/',
  'http://[0:0:0:0:0:0:0:1]/',
  // unspecified / this network
  'http://0/',
  'http://0.0.0.0/',
  'http://[::]/',
  'http://0.1.2.3/',
  // private and shared
  'http://10.0.0.1/',
  'http://10.255.255.255/',
  'http://172.16.0.1/',
  'http://172.31.255.255/',
  'http://192.168.1.1/',
  'http://100.64.0.1/',
  'http://100.127.255.255/',
  // link-local and cloud metadata
  'http://169.254.169.254/latest/meta-data/',
  'http://0xa9fea9fe/',
  'http://2852039166/',
  'http://metadata.google.internal/',
  'http://metadata/',
  'http://instance-data/',
  'http://[fe80::1]/',
  // IETF, documentation, benchmarking, AS112, 6to4 relay, multicast, reserved, broadcast
  'http://192.0.0.8/',
  'http://192.0.2.10/',
  'http://198.51.100.7/',
  'http://203.0.113.9/',
  'http://198.18.0.1/',
  'http://198.19.255.1/',
  'http://192.88.99.1/',
  'http://192.31.196.1/',
  'http://192.52.193.1/',
  'http://192.175.48.1/',
  'http://224.0.0.1/',
  'http://239.255.255.250/',
  'http://240.0.0.1/',
  'http://255.255.255.255/',
  // IPv6 forms that embed IPv4 or are tunnels
  'http://[::ffff:127.0.0.1]/',
  'http://[::ffff:7f00:1]/',
  'http://[::ffff:10.0.0.1]/',
  'http://[0:0:0:0:0:ffff:169.254.169.254]/',
  'http://[::127.0.0.1]/',
  'http://[::8.8.8.8]/',
  'http://[64:ff9b::127.0.0.1]/',
  'http://[64:ff9b::a9fe:a9fe]/',
  'http://[64:ff9b:1::1]/',
  'http://[2002:7f00:1::1]/',
  'http://[2002:0808:0808::1]/',
  'http://[2001:0:4136:e378:8000:63bf:3fff:fdd2]/',
  // other IPv6 special ranges
  'http://[fc00::1]/',
  'http://[fd12:3456::1]/',
  'http://[fec0::1]/',
  'http://[ff02::1]/',
  'http://[2001:db8::1]/',
  'http://[3fff::1]/',
  'http://[100::1]/',
  'http://[5f00::1]/',
  // names that are never public
  'http://router.local/',
  'http://db.internal/',
  'http://intranet/',
  'http://x.home.arpa/',
  'http://1.0.0.127.in-addr.arpa/',
  'http://kubernetes.default.svc/',
  // not http(s) at all
  'file:///etc/passwd',
  'ftp://8.8.8.8/',
  'gopher://8.8.8.8:70/',
  'javascript:alert(1)',
  'data:text/html,hi',
  'http://[fe80::1%25eth0]/',
  'http:///',
];

const PUBLIC = [
  'http://8.8.8.8/',
  'https://1.1.1.1/',
  'http://93.184.216.34:8080/x',
  'http://134744072/',
  'http://0x08080808/',
  'http://[2606:4700:4700::1111]/',
  'http://[2a00:1450:4001:82a::200e]/',
  'http://[::ffff:8.8.8.8]/',
  'http://[64:ff9b::808:808]/',
  'http://172.32.0.1/',
  'http://100.128.0.1/',
  'http://192.0.3.1/',
  'http://11.0.0.1/',
  'http://223.255.255.1/',
];

t.test('at least 40 spellings are refused', async (t) => {
  t.ok(REFUSED.length >= 40, `${REFUSED.length} refused spellings in the table`);
  for (const u of REFUSED) t.equal(decide(u), 'refused', u);
});

t.test('public forms pass without network', async (t) => {
  for (const u of PUBLIC) t.equal(decide(u), 'public', u);
});

t.test('names that need DNS are left to the resolver', async (t) => {
  for (const u of ['http://example.com/', 'https://www.EXAMPLE.org./a', 'http://127.0.0.1.nip.io/', 'http://xn--bcher-kva.example.net/'])
    t.equal(decide(u), 'dns', u);
});

t.test('allowCidrs opens only what it names', async (t) => {
  t.ok(isPublicAddress('127.0.0.1', ['127.0.0.0/8']));
  t.ok(isPublicAddress('::ffff:127.0.0.5', ['127.0.0.0/8']), 'mapped form of an allowed address');
  t.notOk(isPublicAddress('127.0.0.2', ['127.0.0.1/32']));
  t.notOk(isPublicAddress('10.0.0.1', ['127.0.0.0/8', '::1/128']));
  t.ok(isPublicAddress('::1', ['::1/128']));
  t.notOk(isPublicAddress('::1', ['127.0.0.0/8']));
  t.equal(decide('http://localhost/', ['127.0.0.0/8']), 'public', 'localhost is judged as 127.0.0.1');
  t.notOk(isPublicAddress('127.0.0.1'), 'default (empty) allow list refuses loopback');
});

t.test('resolved names: every address must be public', async (t) => {
  const resolver = (answers: string[]) => async () => answers.map((address) => ({ address, family: address.includes(':') ? 6 : 4 }));
  const pinned = await resolvePinned('ok.example.com', { allowCidrs: [], resolver: resolver(['8.8.4.4']) });
  t.same(pinned, { host: 'ok.example.com', address: '8.8.4.4', family: 4 });
  const mapped = await resolvePinned('m.example.com', { allowCidrs: [], resolver: resolver(['::ffff:8.8.4.4']) });
  t.equal(mapped.address, '8.8.4.4', 'mapped answers are connected as IPv4');
  for (const answers of [['10.1.2.3'], ['8.8.8.8', '127.0.0.1'], ['::1'], ['::ffff:192.168.0.1'], ['169.254.169.254']]) {
    await t.rejects(
      resolvePinned('evil.example.com', { allowCidrs: [], resolver: resolver(answers) }),
      { code: 'blocked_address' },
      answers.join(','),
    );
  }
  await t.rejects(
    resolvePinned('nx.example.com', {
      allowCidrs: [],
      resolver: async () => {
        throw Object.assign(new Error('nx'), { code: 'ENOTFOUND' });
      },
    }),
    { code: 'unreachable' },
  );
  await t.rejects(
    resolvePinned('slow.example.com', { allowCidrs: [], timeoutMs: 100, resolver: () => new Promise(() => {}) }),
    OutboundError,
  );
});
