// The pipeline bench's traffic counter (bench/lib/traffic.ts) against a real nats-server: stream
// writes by sequence, core requests and publishes by subject, JetStream API calls by kind.
import t from 'tap';
import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import { startTestNats } from '../helpers/nats.ts';
import { countTraffic, jsApiKind, subjectMatches } from '../../bench/lib/traffic.ts';
import { STREAMS, subjects } from '../../shared/names.ts';

t.test('API call kinds leave out the names they apply to', async (t) => {
  t.equal(jsApiKind('$JS.API.CONSUMER.MSG.NEXT.TASKS.converter'), 'CONSUMER.MSG.NEXT');
  t.equal(jsApiKind('$JS.API.STREAM.MSG.GET.KV_jobs'), 'STREAM.MSG.GET');
  t.equal(jsApiKind('$JS.API.STREAM.INFO.TASKS'), 'STREAM.INFO');
  t.equal(jsApiKind('$JS.API.DIRECT.GET.KV_jobs.$KV.jobs.job_1'), 'DIRECT.GET');
  t.ok(subjectMatches('result.>', 'result.job_1'));
  t.notOk(subjectMatches('result.>', 'progress.job_1'));
});

t.test('counts a stream write, a core request, a core publish and API calls', async (t) => {
  const tn = await startTestNats(t);
  const nc = await tn.connect('traffic-test');
  const responder = nc.subscribe('bench.echo', {
    callback: (_e, m) => {
      m.respond('ok');
    },
  });
  t.teardown(() => responder.unsubscribe());
  const js = jetstream(nc);
  const jsm = await jetstreamManager(nc);
  const traffic = await countTraffic(
    tn.server.url,
    async () => {
      await js.publish(subjects.result('job_traffic'), '{}');
      await nc.request('bench.echo', 'x');
      nc.publish(subjects.progress('job_traffic'), '{}');
      await jsm.streams.info(STREAMS.tasks);
      await nc.flush();
    },
    100,
  );
  t.equal(traffic.writesByStream[STREAMS.results], 1, 'the RESULTS write, by sequence');
  t.equal(traffic.jetstreamWrites, 1);
  t.equal(traffic.coreRequests, 1);
  t.equal(traffic.bySubject['req bench.echo'], 1);
  t.equal(traffic.corePublishes, 1, 'the progress line: a core publish, not a write');
  // a stream publish is not an API call; the counter's own listings fall outside its window
  t.equal(traffic.jsApi, 1, 'one API call: the stream info');
  t.same(traffic.jsApiByKind, { 'STREAM.INFO': 1 });
});
