// `payloads labs` as a child process against the running system with the real relay-prober and a
// local relay: the report as a table, exit code 0 when no check fails, 1 when one does or the
// module cannot run.
import t from 'tap';
import { startTestApp } from '../helpers/app.ts';
import { wallet } from '../../shared/protocol/wallet.ts';
import { startMiniRelay } from '../labs/fixtures/mini-relay.ts';
import { fastLabs, fastWebhooks } from '../labs/fixtures/probe.ts';
import { runCli } from './run-cli.ts';

t.test('payloads labs: a table of the checks; the exit code follows the failures', async (t) => {
  const relay = await startMiniRelay({});
  const silent = await startMiniRelay({ silent: true });
  t.teardown(() => relay.close());
  t.teardown(() => silent.close());
  const app = await startTestApp(t, {
    actors: ['wallet', 'job-supervisor', 'relay-prober'],
    config: { labs: { ...fastLabs, allowedPorts: [relay.port, silent.port] }, webhooks: fastWebhooks },
  });
  const k = await app.newKey();
  await wallet.grant(app.nc, k.walletId, 100_000, 'test');
  const env = { PAYLOADS_URL: app.url, PAYLOADS_KEY: k.key };

  const r = await runCli(['labs', relay.url, '--quick'], env);
  const summary = /(\d+) pass, (\d+) fail, (\d+) warn, (\d+) skip, (\d+) info/.exec(r.stdout);
  t.ok(summary, `a summary line (${r.stderr})`);
  t.match(r.stdout, /quick: ws:\/\/127\.0\.0\.1:\d+\/ score \d+/);
  for (const id of ['websocket', 'nip11-served', 'publish-ok', 'read-back'])
    t.match(r.stdout, new RegExp(`│ ${id}\\s+│ (pass|fail|warn|skip|info)`), `check ${id} in the table`);
  t.equal(r.code, Number(summary![2]) > 0 ? 1 : 0, `exit code follows the ${summary![2]} failed checks`);

  const json = await runCli(['--json', 'labs', relay.url, '--checks', 'filter-ids'], env);
  const report = JSON.parse(json.stdout.trim().split('\n').at(-1)!);
  t.equal(report.schema, 'labs.report/1');
  t.same(
    report.checks.map((c: { id: string }) => c.id),
    ['filter-ids'],
  );
  t.equal(json.code, report.summary.fail > 0 ? 1 : 0);

  const dead = await runCli(['labs', silent.url, '--quick'], env);
  t.equal(dead.code, 1, 'a module that cannot run: exit code 1');
  t.match(dead.stdout, /quick: failed \(\w+/);
});
