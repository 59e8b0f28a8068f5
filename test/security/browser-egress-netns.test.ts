// Issue 27 item 1, the namespace layer without a browser (fast): a process started through a
// jail's wrapper reaches the guard proxy's listener and nothing else; Firefox's BiDi port is
// reached from outside through forwardInto; outbound.browserNetns `required` refuses to start
// where no namespace can be made, `auto` falls back to flags and prefs.
import t from 'tap';
import { spawn } from 'node:child_process';
import dgram from 'node:dgram';
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import { readlinkSync } from 'node:fs';
import { openJail } from '../../actors/browser-pool/netns.ts';
import { startBrowserProxy, NetnsUnavailable } from '../../actors/browser-pool/proxy.ts';
import { testConfig, testLog } from '../helpers/nats.ts';

const canNetns = process.getuid?.() === 0;

// what the process inside tries: UDP and TCP to an outside listener, TCP to the proxy address, and
// a listener on `listen` that answers "inside"
const INSIDE = `
const net = require('node:net'), dgram = require('node:dgram');
const [udpPort, tcpPort, proxyPort, listen] = process.argv.slice(1).map(Number);
const out = [];
const u = dgram.createSocket('udp4');
u.send('leak', udpPort, '127.0.0.2', (e) => out.push('udp:' + (e ? e.code : 'sent')));
const c = net.connect(tcpPort, '127.0.0.2'); c.on('connect', () => out.push('tcp:connected')); c.on('error', (e) => out.push('tcp:' + e.code));
const p = net.connect(proxyPort, '127.0.0.1', () => p.write('hello proxy')); p.on('error', (e) => out.push('proxy:' + e.code));
const srv = net.createServer((s) => s.end('inside')).listen(listen, '127.0.0.1', () => process.stdout.write('listening\\n'));
setTimeout(() => { process.stdout.write(JSON.stringify({ out, ns: require('node:fs').readlinkSync('/proc/self/ns/net') }) + '\\n'); process.exit(0); }, 1500);
`;

t.test(
  'a process in a jail reaches the proxy listener and nothing else',
  { skip: !canNetns && 'needs root to make a network namespace' },
  async (t) => {
    const leaks: string[] = [];
    const udp = dgram.createSocket('udp4');
    udp.on('message', (_m, r) => leaks.push(`udp from ${r.address}`));
    await new Promise<void>((r) => udp.bind(0, '127.0.0.2', r));
    const tcp = net.createServer((s) => {
      leaks.push('tcp');
      s.destroy();
    });
    await new Promise<void>((r) => tcp.listen(0, '127.0.0.2', r));
    t.teardown(() => {
      udp.close();
      tcp.close();
    });

    const got: string[] = [];
    const jail = await openJail((s) =>
      s.once('data', (d) => {
        got.push(String(d));
        s.destroy();
      }),
    );
    t.teardown(() => jail.close());
    const proxyPort = Number(jail.proxy.split(':')[1]);
    const bidi = await jail.forwardInto();
    const w = jail.wrap(process.execPath);
    const child = spawn(
      w.executablePath,
      [
        '-e',
        INSIDE,
        String((udp.address() as AddressInfo).port),
        String((tcp.address() as AddressInfo).port),
        String(proxyPort),
        String(bidi),
      ],
      { env: w.env, stdio: ['ignore', 'pipe', 'inherit'] },
    );
    let stdout = '';
    child.stdout.on('data', (d: Buffer) => {
      stdout += d;
    });
    await new Promise<void>((r) => {
      const check = () => (stdout.includes('listening') ? r() : setTimeout(check, 50));
      check();
    });
    // outside → the same port number inside (how puppeteer reaches Firefox's WebDriver BiDi)
    const answer = await new Promise<string>((r, j) => {
      let a = '';
      net
        .connect(bidi, '127.0.0.1')
        .on('data', (d) => {
          a += d;
        })
        .on('end', () => r(a))
        .on('error', j);
    });
    t.equal(answer, 'inside', 'the forwarded port reaches the listener inside');
    jail.launched();
    await new Promise((r) => child.once('exit', r));
    const report = JSON.parse(stdout.trim().split('\n').pop()!) as { out: string[]; ns: string };
    t.not(report.ns, readlinkSync('/proc/self/ns/net'), 'the process runs in another network namespace');
    t.same(got, ['hello proxy'], 'the proxy address inside reaches our accept()');
    t.ok(report.out.includes('tcp:ECONNREFUSED'), `TCP to 127.0.0.2 found nothing inside: ${report.out}`);
    await new Promise((r) => setTimeout(r, 300));
    t.same(leaks, [], 'nothing reached the listeners outside');
  },
);

t.test('outbound.browserNetns: required refuses to start without namespaces, auto falls back, off never tries', async (t) => {
  const path = process.env.PATH;
  t.teardown(() => {
    process.env.PATH = path;
  });
  process.env.PATH = '/nonexistent'; // no unshare: no namespace can be made
  const required = await startBrowserProxy(
    testConfig({ outbound: { allowCidrs: ['127.0.0.1/32'], browserNetns: 'required' } }),
    testLog(),
  ).catch((e: unknown) => e);
  t.ok(required instanceof NetnsUnavailable, String(required));
  const auto = await startBrowserProxy(testConfig({ outbound: { allowCidrs: ['127.0.0.1/32'], browserNetns: 'auto' } }), testLog());
  t.equal(auto.isolate, undefined, 'auto without namespaces: flags and prefs only');
  await auto.stop();
  process.env.PATH = path;
  const off = await startBrowserProxy(testConfig({ outbound: { allowCidrs: ['127.0.0.1/32'], browserNetns: 'off' } }), testLog());
  t.equal(off.isolate, undefined, 'off: no namespace');
  await off.stop();
  if (canNetns) {
    const on = await startBrowserProxy(testConfig({ outbound: { allowCidrs: ['127.0.0.1/32'], browserNetns: 'auto' } }), testLog());
    t.type(on.isolate, 'function', 'auto with namespaces: each browser gets one');
    await on.stop();
  }
});
