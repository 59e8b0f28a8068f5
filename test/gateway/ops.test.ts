import t from 'tap';
import { jetstream } from '@nats-io/jetstream';
import { startTestApp } from '../helpers/app.ts';
import { subjects } from '../../shared/names.ts';
import { ERROR_CODES } from '../../shared/errors.ts';

t.test('health, readiness, metrics and the errors page', async (t) => {
  const app = await startTestApp(t);

  t.test('healthz and readyz', async (t) => {
    t.equal((await app.request('GET', '/healthz')).status, 200);
    const r = await app.request('GET', '/readyz');
    t.equal(r.status, 200);
    t.equal(r.json.ready, true);
  });

  t.test('metrics count requests by route and status, and job transitions from evt.job', async (t) => {
    await app.request('GET', '/v1/pricing');
    await app.request('GET', '/v1/services/nope');
    await jetstream(app.nc).publish(
      subjects.evtJob('shots', 'job_x'),
      JSON.stringify({ v: 1, jobId: 'job_x', service: 'shots', status: 'completed', event: 'completed' }),
    );
    await new Promise((r) => setTimeout(r, 200));
    const m = await app.request('GET', '/metrics');
    t.equal(m.status, 200);
    t.match(m.headers.get('content-type'), /text\/plain/);
    t.match(m.text, /payloads_http_requests_total\{route="\/v1\/pricing",method="GET",status="200"\} 1/);
    t.match(m.text, /payloads_http_requests_total\{route="\/v1\/services\/:service",method="GET",status="404"\} 1/);
    t.match(m.text, /payloads_http_request_duration_seconds_bucket\{le="0.005",route="\/v1\/pricing"/);
    t.match(m.text, /payloads_jobs_total\{service="shots",status="completed"\} 1/);
  });

  t.test('the errors page has one anchor per code, and error bodies link to it', async (t) => {
    const r = await app.request('GET', '/docs/errors');
    t.equal(r.status, 200);
    t.match(r.headers.get('content-type'), /text\/html/);
    for (const code of ERROR_CODES) t.match(r.text, `<tr id="${code}">`, code);
    const e = await app.request('GET', '/v1/services/nope');
    t.equal(e.json.error.docs, `${app.gateway.url}/docs/errors#unknown_service`);
  });

  t.test('the request id is returned, and a sane incoming one is kept', async (t) => {
    const r = await app.request('GET', '/v1', { headers: { 'x-request-id': 'trace-123' } });
    t.equal(r.headers.get('x-request-id'), 'trace-123');
    const bad = await app.request('GET', '/v1', { headers: { 'x-request-id': 'no spaces allowed here' } });
    t.not(bad.headers.get('x-request-id'), 'no spaces allowed here');
  });
});
