// The pipeline bench's stage timeline: stages are read off one job's wire events (requests matched to
// their replies by reply subject, publishes told from deliveries by the `$JS.ACK.` reply), and
// summarised per stage over several jobs.
import t from 'tap';
import { stagesOf, summarise, segmentsOf, type JobTrace } from '../../bench/lib/timeline.ts';

const job = (shift = 0): JobTrace => ({
  answeredAt: 40 + shift,
  fetchedAt: 8 + shift,
  events: [
    { t: 1, subject: '$JS.API.STREAM.INFO.TASKS', reply: '_INBOX.a' },
    { t: 1.2, subject: '_INBOX.a' },
    { t: 2, subject: 'wallet.charge', reply: '_INBOX.b' },
    { t: 3, subject: '$JS.EVENT.ADVISORY.API' }, // not a message of the job
    { t: 5, subject: '_INBOX.b' },
    { t: 5.5, subject: 'task.websitepro', reply: '_INBOX.c' },
    { t: 6, subject: '_INBOX.c' },
    { t: 6.1, subject: 'task.websitepro', reply: '$JS.ACK.TASKS.converter.1.2.2.1.0' },
    { t: 6.5, subject: '$KV.jobs.job_1', reply: '_INBOX.d' },
    { t: 9, subject: '_INBOX.d' },
    { t: 30 + shift, subject: '$JS.API.STREAM.MSG.GET.OBJ_results', reply: '_INBOX.e' },
    { t: 30.2 + shift, subject: '_INBOX.e' },
    { t: 31 + shift, subject: '$O.results.C.x', reply: '_INBOX.f' },
    { t: 32 + shift, subject: '_INBOX.f' },
    { t: 33 + shift, subject: 'result.job_1', reply: '_INBOX.g' },
    { t: 34 + shift, subject: '_INBOX.g' },
    { t: 34.1 + shift, subject: 'result.job_1', reply: '$JS.ACK.RESULTS.sup.1.3.3.1.0' },
    { t: 36 + shift, subject: '$KV.jobs.job_1', reply: '_INBOX.h' },
    { t: 37 + shift, subject: '_INBOX.h' },
    { t: 37.1 + shift, subject: '$KV.jobs.job_1', reply: '$JS.ACK.KV_jobs.w.1.4.4.1.0' },
  ],
});

t.test('the stages of one job', async (t) => {
  const st = stagesOf(job());
  t.equal(st['charge sent'], 2);
  t.equal(st['charge answered'], 5, 'the reply to the charge, not an earlier inbox message');
  t.equal(st['task acked'], 6);
  t.equal(st['worker got task'], 6.1, 'the delivery, told from the publish by its ack subject');
  t.equal(st['job doc acked'], 9);
  t.equal(st['file put started (conversion done)'], 30);
  t.equal(st['file put acked'], 32);
  t.equal(st['supervisor got outcome'], 34.1);
  t.equal(st['doc updated'], 36, 'the write after the outcome, not the creation');
  t.equal(st['gateway watch got doc'], 37.1);
  t.equal(st['supervisor read doc'], undefined, 'no read on the wire: no stage');
  t.same(segmentsOf(job()), { before: 8, work: 22, after: 10 });
});

t.test('per stage over jobs: medians of the time and of the step since the stage before', async (t) => {
  const s = summarise([job(0), job(10), job(20)]);
  const by = Object.fromEntries(s.map((x) => [x.stage, x]));
  t.equal(by['charge answered']!.at, 5);
  t.equal(by['file put started (conversion done)']!.at, 40, 'median of 30, 40, 50');
  t.equal(by['file put started (conversion done)']!.step, 22, 'since the page fetch of each job');
  t.equal(by['long poll answered']!.at, 50);
  t.ok(s.findIndex((x) => x.stage === 'charge sent') < s.findIndex((x) => x.stage === 'doc updated'), 'in the order of the median job');
});
