// How long a job-supervisor takes to start on a store with history, and its memory (issue 26):
//   node --import tsx scripts/diagnostics/history-start.ts --data-dir /tmp/h100k [--code /path/to/checkout] [--runs 2]
// Starts a nats-server on <data-dir>/nats (a store filled by scripts/history.ts), then, per run,
// `node --import tsx <code>/main.ts job-supervisor` with DATA_DIR=<data-dir> (its projection file is
// kept between runs: the first run of this code builds it, the next ones resume it). Prints per run:
// seconds to "job-supervisor started", to a complete projection (a rebuild's end), the process RSS
// then and 5 s later, and the projection file's size.
import { parseArgs } from 'node:util';
import { spawn } from 'node:child_process';
import { readFileSync, statSync, existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { startNatsServer } from '../../shared/nats/server.ts';
import { ROOT } from '../../shared/config/index.ts';

const { values: a } = parseArgs({
  options: { 'data-dir': { type: 'string' }, code: { type: 'string', default: ROOT }, runs: { type: 'string', default: '2' } },
});
if (!a['data-dir']) {
  console.error('usage: history-start.ts --data-dir <dir> [--code <checkout>] [--runs N]');
  process.exit(2);
}
const dataDir = resolve(a['data-dir']);
const code = resolve(a.code!);
const server = await startNatsServer({ storeDir: join(dataDir, 'nats'), port: -1, serverName: 'payloads-embedded' });
const rssMb = (pid: number) => {
  try {
    return Math.round(Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0) / 1024);
  } catch {
    return NaN;
  }
};
const out: Record<string, unknown>[] = [];
for (let run = 1; run <= Number(a.runs); run++) {
  const t0 = Date.now();
  const child = spawn(process.execPath, [join(code, 'main.ts'), 'job-supervisor'], {
    cwd: code,
    env: { ...process.env, NATS_URL: server.url, DATA_DIR: dataDir, LOG_LEVEL: 'info' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const r: Record<string, unknown> = { run };
  let buf = '';
  const seen = new Promise<void>((res) => {
    let mode = ''; // '' on code without a persisted projection
    let started = false;
    const line = (l: string) => {
      if (/"level":(50|60)/.test(l)) console.error(l.slice(0, 400));
      if (/job projection opened/.test(l)) {
        const j = JSON.parse(l);
        mode = j.mode;
        r.projection = j.mode + (j.reason ? ` (${j.reason})` : '');
        r.appliedAtStart = j.applied;
      }
      if (/job projection: rebuilt/.test(l)) {
        r.rebuiltS = (Date.now() - t0) / 1000;
        res();
      }
      if (!started && /"job-supervisor started"/.test(l)) {
        started = true;
        r.startedS = (Date.now() - t0) / 1000;
        r.rssAtStartMb = rssMb(child.pid!);
        if (mode !== 'rebuilt') res();
      }
    };
    child.stdout.on('data', (d: Buffer) => {
      buf += d;
      let i;
      while ((i = buf.indexOf('\n')) >= 0) {
        line(buf.slice(0, i));
        buf = buf.slice(i + 1);
      }
    });
    child.stderr.on('data', (d: Buffer) => process.stderr.write(d));
    child.once('exit', (c) => {
      r.exited = c;
      res();
    });
  });
  await Promise.race([seen, new Promise((res) => setTimeout(res, 600_000))]);
  await new Promise((res) => setTimeout(res, 5000));
  r.rssAfter5sMb = rssMb(child.pid!);
  const f = join(dataDir, 'job-supervisor', 'jobs.sqlite');
  if (existsSync(f))
    r.projectionFileMb = Math.round(((statSync(f).size + (existsSync(`${f}-wal`) ? statSync(`${f}-wal`).size : 0)) / 2 ** 20) * 10) / 10;
  if (r.exited === undefined) {
    child.kill('SIGINT');
    await new Promise((res) => child.once('exit', res));
  }
  out.push(r);
  console.log(JSON.stringify(r));
}
await server.stop();
process.exit(0); // a lingering handle of the connection library must not keep the measurement waiting
