// Job creation asks whether a job-supervisor runs (gateway/jobs/create.ts checkSupervisor): an
// answer stands for a second, so steady traffic costs no ping per creation; with none answering,
// the creation is refused before any charge.
import t from 'tap';
import { setTimeout as sleep } from 'node:timers/promises';
import { startTestNats } from '../helpers/nats.ts';
import { checkSupervisor } from '../../gateway/jobs/create.ts';
import { MICRO } from '../../shared/names.ts';

t.test('one ping for creations within a second; asked again after it', async (t) => {
  const tn = await startTestNats(t);
  const supervisor = await tn.connect('fake-supervisor-ping');
  let pings = 0;
  // the micro service's ping subject, answered as a running instance would
  const sub = supervisor.subscribe(`$SRV.PING.${MICRO.jobSupervisor}`, {
    callback: (_e, m) => {
      pings++;
      m.respond('{}');
    },
  });
  t.teardown(() => sub.unsubscribe());
  await supervisor.flush();
  const gateway = await tn.connect('gateway-ping');
  for (let i = 0; i < 5; i++) await checkSupervisor({ nc: gateway });
  t.equal(pings, 1, 'five creations, one ping (fails when every creation pings: 5)');
  await sleep(1100);
  await checkSupervisor({ nc: gateway });
  t.equal(pings, 2, 'an answer older than a second is not trusted');
});

t.test('nobody answers: service_unavailable, and no answer is remembered', async (t) => {
  const tn = await startTestNats(t);
  const gateway = await tn.connect('gateway-noping');
  await t.rejects(checkSupervisor({ nc: gateway }, 300), { code: 'service_unavailable' });
  await t.rejects(checkSupervisor({ nc: gateway }, 300), { code: 'service_unavailable' });
});
