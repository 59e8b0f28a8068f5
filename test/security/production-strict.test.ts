// Issue 44 item 8: production must not run browsers outside their namespace silently, and no
// crash-test switch works there. `outbound.browserNetns: auto` fell back to flags and prefs only
// wherever no namespace could be made, production included; in production mode that fallback now
// refuses to start unless the operator says `off`. WALLET_FAULT and every PAYLOADS_FAILPOINTS name
// were obeyed whatever the mode (only NODE_ENV=production turned failpoints off): a variable left in
// a service's environment made a production process kill itself on a money path.
import t from 'tap';
import { spawn } from 'node:child_process';
import { startBrowserProxy, NetnsUnavailable } from '../../actors/browser-pool/proxy.ts';
import { testConfig, testLog } from '../helpers/nats.ts';
import { ROOT } from '../../shared/config/index.ts';

const production = (outbound: Record<string, unknown>) => {
  const c = testConfig({ outbound: { allowCidrs: ['127.0.0.1/32'], ...outbound } });
  return { ...c, server: { ...c.server, mode: 'production' as const } };
};

t.test('production: browserNetns auto without namespaces refuses to start; off is the explicit way', async (t) => {
  const path = process.env.PATH;
  t.teardown(() => {
    process.env.PATH = path;
  });
  process.env.PATH = '/nonexistent'; // no unshare: no namespace can be made
  const auto = await startBrowserProxy(production({ browserNetns: 'auto' }), testLog()).catch((e: unknown) => e);
  t.ok(auto instanceof NetnsUnavailable, 'refused');
  t.match(String(auto), /production mode: .*set outbound\.browserNetns to "off"/, 'and says how to accept it');
  const off = await startBrowserProxy(production({ browserNetns: 'off' }), testLog());
  t.equal(off.isolate, undefined, 'off: flags and prefs only, as the operator said');
  await off.stop();
  const dev = await startBrowserProxy(testConfig({ outbound: { allowCidrs: ['127.0.0.1/32'], browserNetns: 'auto' } }), testLog());
  t.equal(dev.isolate, undefined, 'development: auto still falls back (said loudly in the log)');
  await dev.stop();
});

// A process that loads its config as a launched process does (loadConfigOrExit), then reaches the
// wallet's fault point and a gateway failpoint: alive means both were ignored.
const SCRIPT = `
const { loadConfigOrExit } = await import(${JSON.stringify(`${ROOT}/shared/runtime.ts`)});
const { faultPoint } = await import(${JSON.stringify(`${ROOT}/actors/wallet/fault.ts`)});
const { failpoint } = await import(${JSON.stringify(`${ROOT}/shared/failpoints.ts`)});
loadConfigOrExit();
faultPoint('after-ledger-write');
failpoint('gateway.after-charge');
faultPoint('after-credit');
process.stdout.write('alive');
`;

function run(env: Record<string, string>): Promise<{ out: string; signal: NodeJS.Signals | null }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ['--input-type=module', '-e', SCRIPT], {
      cwd: ROOT,
      env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', CONFIG_FILE: '', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout.on('data', (d) => {
      out += d;
    });
    child.on('exit', (_code, signal) => resolve({ out, signal }));
  });
}

const PROD = { MODE: 'production', LIGHTNING_BACKEND: 'lnd', LIGHTNING_URL: 'https://127.0.0.1:1', RATE_PROVIDER: 'exchanges' };

t.test('production mode ignores WALLET_FAULT and every failpoint', async (t) => {
  const arms: Record<string, string>[] = [
    { WALLET_FAULT: 'after-ledger-write' },
    { WALLET_FAULT: 'after-credit' },
    { PAYLOADS_FAILPOINTS: 'gateway.after-charge' },
  ];
  for (const arm of arms) {
    const dev = await run(arm);
    t.equal(dev.signal, 'SIGKILL', `development: ${JSON.stringify(arm)} kills the process (the switch works)`);
    const prod = await run({ ...arm, ...PROD });
    t.same(prod, { out: 'alive', signal: null }, `production: ${JSON.stringify(arm)} is ignored`);
  }
});
