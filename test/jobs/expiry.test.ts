// Expiry at the NATS level: after expiresAt the sweep deletes every object of the job (result
// files, thumbnails and anything else a worker kept under `<jobId>/`), and marks the job purged.
import t from 'tap';
import { Objm } from '@nats-io/obj';
import { startJobsSystem } from './lib.ts';
import { OBJECT_STORES } from '../../shared/names.ts';

t.test('expired jobs lose every stored object; other jobs keep theirs', async (t) => {
  const s = await startJobsSystem(t, { retention: { websitepro: 2, sweepSeconds: 0.3 } });
  await s.startWorker();
  const { walletId } = await s.newWallet(1000);
  const { job } = await s.submit(walletId, [
    { key: 'text', price: 20, params: { thumb: true } },
    { key: 'html', price: 30 },
  ]);
  const done = await s.finished(job.id);
  t.equal(done.status, 'completed');
  const os = await new Objm(s.nc).open(OBJECT_STORES.results);
  await os.putBlob({ name: `${job.id}/_scratch` }, new TextEncoder().encode('a worker kept this for the job'));
  // a job of the same wallet with the default retention is not touched
  const s2 = await s.submit(walletId, [{ key: 'text', price: 20 }], 'labs');
  await s.finished(s2.job.id);
  const before = await s.objects(OBJECT_STORES.results);
  t.same(
    before.filter((n) => n.startsWith(job.id)),
    [`${job.id}/_scratch`, `${job.id}/html`, `${job.id}/text`, `${job.id}/text.thumb.webp`],
  );

  let purged = await s.job(job.id);
  for (let i = 0; i < 50 && purged.purgedAt === undefined; i++) {
    await new Promise((r) => setTimeout(r, 200));
    purged = await s.job(job.id);
  }
  t.ok(purged.purgedAt! >= purged.expiresAt, 'marked purged after expiresAt');
  t.same(
    (await s.objects(OBJECT_STORES.results)).filter((n) => n.startsWith(job.id)),
    [],
    'nothing of the job left in the store',
  );
  t.equal(await os.getBlob(`${job.id}/text`), null);
  t.ok((await s.objects(OBJECT_STORES.reports)).includes(`${s2.job.id}/text`), 'the labs job (30 days, reports store) keeps its file');
  t.equal(purged.status, 'completed', 'the job document stays, for the list and the ledger');
  t.same(await s.violations(), []);
});
