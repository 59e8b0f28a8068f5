// The part of autocannon's API the benchmarks use (the package ships no types).
declare module 'autocannon' {
  namespace autocannon {
    interface Options {
      url: string;
      method?: string;
      headers?: Record<string, string>;
      body?: string;
      connections?: number;
      duration?: number;
      pipelining?: number;
      setupClient?: (client: { setHeaders(h: Record<string, string>): void }) => void;
    }
    interface Histogram {
      average: number;
      p50: number;
      p99: number;
      max: number;
      min: number;
    }
    interface Result {
      duration: number;
      latency: Histogram;
      requests: Histogram & { total: number };
      non2xx: number;
      errors: number;
      timeouts: number;
      '2xx': number;
      statusCodeStats?: Record<string, { count: number | string }>;
    }
  }
  interface Instance extends PromiseLike<autocannon.Result> {
    on(event: 'response', fn: (client: unknown, status: number, bytes: number, ms: number) => void): this;
  }
  function autocannon(opts: autocannon.Options): Instance;
  export default autocannon;
}
