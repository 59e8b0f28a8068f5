// Request metrics go through kept observers per (route, method, status): each observation is counted
// once, in its own series, whichever way it was made.
import t from 'tap';
import { createMetrics } from '../../gateway/metrics.ts';

t.test('observations are counted per route, method and status', async (t) => {
  const m = createMetrics();
  m.observe('/v1/balance', 'GET', 200, 0.002);
  m.observe('/v1/balance', 'GET', 200, 0.004);
  m.observe('/v1/balance', 'GET', 429, 0.001);
  m.observer('/v1/balance', 'GET', 200)(0.003); // the fixed answers' observer adds to the same series
  const text = await m.registry.metrics();
  t.match(text, /payloads_http_requests_total\{route="\/v1\/balance",method="GET",status="200"\} 3\n/);
  t.match(text, /payloads_http_requests_total\{route="\/v1\/balance",method="GET",status="429"\} 1\n/);
  t.match(text, /payloads_http_request_duration_seconds_count\{route="\/v1\/balance",method="GET",status="200"\} 3\n/);
  t.match(text, /payloads_http_request_duration_seconds_sum\{route="\/v1\/balance",method="GET",status="200"\} 0\.009/);
});

t.test('past 1000 label sets the kept observers are dropped, never the counts', async (t) => {
  const m = createMetrics();
  for (let i = 0; i < 1001; i++) m.observe(`/r${i}`, 'GET', 200, 0.001);
  m.observe('/r0', 'GET', 200, 0.001);
  const text = await m.registry.metrics();
  t.match(text, /payloads_http_requests_total\{route="\/r0",method="GET",status="200"\} 2\n/);
  t.match(text, /payloads_http_requests_total\{route="\/r1000",method="GET",status="200"\} 1\n/);
});
