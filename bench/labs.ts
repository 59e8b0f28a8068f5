// labs benchmark: wall time of the quick and conformance modules against a local real relay
// (@nostr-relay/core over ws on 127.0.0.1), and the round trips they use compared with the least
// their checks need (CheckDef.minRoundTrips).
//   value (wall time)   median over runs of one module
//   baseline            min round trips x the median REQ→EOSE round trip on the same relay: the
//                       time the module would take with no waits at all
//   value (round trips) client messages that waited for an answer + handshakes + HTTP requests
//   baseline            sum of minRoundTrips of the module's checks (+2: first connection, NIP-11)
import { loadConfig } from '../shared/config/index.ts';
import { startTestRelay } from '../test/labs/fixtures/relay.ts';
import { runModule, minRoundTrips, selectChecks } from '../actors/relay-prober/run.ts';
import { Probe } from '../actors/relay-prober/probe.ts';
import { figure, median, quick, type BenchFigure } from './figure.ts';

export async function run(): Promise<BenchFigure[]> {
  const runs = quick() ? 2 : 5;
  const labs = { quietMs: 300, idleMs: 1000, replyTimeoutMs: 5000, latencySamples: 5 };
  const config = loadConfig({
    env: {},
    noDefaultFile: true,
    overrides: { dataDir: '/tmp/payloads-bench-labs', outbound: { allowCidrs: ['127.0.0.0/8'] }, labs },
  });
  const relay = await startTestRelay();
  try {
    // one bare round trip, for the wall-time baseline
    const p = new Probe(relay.url, config);
    const c = await p.conn();
    const rtt: number[] = [];
    for (let i = 0; i < 20; i++) rtt.push((await p.req([{ kinds: [1], limit: 1 }], c)).ms);
    p.stop();
    const oneRtt = median(rtt);
    const out: BenchFigure[] = [];
    for (const module of ['quick', 'conformance'] as const) {
      const wall: number[] = [];
      const trips: number[] = [];
      for (let i = 0; i < runs; i++) {
        const t0 = performance.now();
        const { report } = await runModule({ url: relay.url, module, config });
        wall.push(Math.round(performance.now() - t0));
        trips.push(report.usage.roundTrips);
      }
      const least = minRoundTrips(selectChecks(module), p.timings);
      out.push(
        figure({
          name: `labs ${module} wall time`,
          unit: 'ms',
          samples: wall,
          baselineSamples: [Math.round(least * oneRtt * 10) / 10],
          note: `baseline: ${least} round trips x ${oneRtt.toFixed(2)} ms (REQ→EOSE); waits: quiet ${labs.quietMs} ms, idle ${labs.idleMs} ms`,
        }),
      );
      out.push(
        figure({
          name: `labs ${module} round trips`,
          unit: 'round trips',
          samples: trips,
          baselineSamples: [least],
          note: 'baseline: the least the selected checks need',
        }),
      );
    }
    return out;
  } finally {
    await relay.close();
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  for (const f of await run())
    console.log(`${f.name}: ${f.value} ${f.unit} (baseline ${f.baseline}, ratio ${f.ratio.toFixed(2)}) ${f.note ?? ''}`);
}
