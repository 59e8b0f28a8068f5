// The bench's two layouts of the system under test (bench/lib/cluster.ts): one process per actor,
// and every unit in one process as `npm start` runs them. Both serve the API and say which units run.
import t from 'tap';
import { startCluster } from '../../bench/lib/cluster.ts';
import { createKey } from '../../shared/keys.ts';
import { wallet } from '../../shared/protocol/wallet.ts';

for (const layout of ['per-actor', 'one-process'] as const) {
  t.test(`${layout}: the named actors and the gateway run and answer`, async (t) => {
    const c = await startCluster({ actors: ['wallet'], layout });
    t.teardown(() => c.stop());
    t.same([...c.units].sort(), ['gateway', 'wallet']);
    t.equal(c.layout, layout);
    t.same([...c.procs.keys()].sort(), layout === 'one-process' ? ['one-process'] : ['gateway', 'wallet'], 'its processes');
    const k = await createKey(c.nc, 'admin');
    await wallet.grant(c.nc, k.walletId, 500, 'layout test');
    t.equal((await wallet.balance(c.nc, k.walletId)).balance, 500, 'the wallet answers');
    const res = await fetch(`${c.gatewayUrl}/v1/balance`, { headers: { authorization: `Bearer ${k.key}` } });
    t.equal(res.status, 200);
    t.equal(((await res.json()) as { balance: number }).balance, 500, 'the gateway answers with it');
  });
}
