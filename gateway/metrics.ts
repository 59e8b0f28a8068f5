// Prometheus metrics: requests by route and status, latency, job transitions seen on evt.job.>, and
// the runtime (Node, uWS build) as an info gauge.
import { Registry, Counter, Gauge, Histogram, collectDefaultMetrics } from 'prom-client';
import { runtimeInfo } from './uws.ts';
import { VERSION } from './version.ts';

export function createMetrics(runtime = runtimeInfo()) {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry, prefix: 'payloads_gateway_' });
  // what this gateway runs on, as labels of a constant 1 (the "info" idiom): Node, its ABI, the C library and the uWS build
  new Gauge({
    name: 'payloads_runtime_info',
    help: 'Node and uWebSockets.js versions this gateway runs on (always 1)',
    labelNames: ['node', 'abi', 'libc', 'uws', 'uws_binary'] as const,
    registers: [registry],
  }).set({ node: runtime.node, abi: runtime.abi, libc: runtime.libc, uws: runtime.uws, uws_binary: runtime.uwsBinary }, 1);
  // the release (package.json's version, CHANGELOG.md), as the label of a constant 1
  new Gauge({
    name: 'payloads_build_info',
    help: 'The Payloads release this gateway runs (package.json version; always 1)',
    labelNames: ['version'] as const,
    registers: [registry],
  }).set({ version: VERSION }, 1);
  const requests = new Counter({
    name: 'payloads_http_requests_total',
    help: 'HTTP requests by route, method and status',
    labelNames: ['route', 'method', 'status'] as const,
    registers: [registry],
  });
  const latency = new Histogram({
    name: 'payloads_http_request_duration_seconds',
    help: 'HTTP request latency by route, method and status',
    labelNames: ['route', 'method', 'status'] as const,
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
    registers: [registry],
  });
  const jobs = new Counter({
    name: 'payloads_jobs_total',
    help: 'Job state changes by service and status (from evt.job.>)',
    labelNames: ['service', 'status'] as const,
    registers: [registry],
  });
  /** One route's observer for a fixed method and status, its label lookups done once (the hot path). */
  const observer = (route: string, method: string, status: number) => {
    const labels = { route, method, status: String(status) };
    const count = requests.labels(labels);
    const time = latency.labels(labels);
    return (seconds: number) => {
      count.inc();
      time.observe(seconds);
    };
  };
  // every request's observation through a kept observer: no label object and lookup per request
  const observers = new Map<string, (seconds: number) => void>();
  return {
    registry,
    observe(route: string, method: string, status: number, seconds: number) {
      const k = `${route} ${method} ${status}`;
      let o = observers.get(k);
      if (!o) {
        if (observers.size >= 1000) observers.clear(); // only a shortcut: prom-client keeps the series
        observers.set(k, (o = observer(route, method, status)));
      }
      o(seconds);
    },
    observer,
    job(service: string, status: string) {
      jobs.inc({ service, status });
    },
  };
}
export type Metrics = ReturnType<typeof createMetrics>;
