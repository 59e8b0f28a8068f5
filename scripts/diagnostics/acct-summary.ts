// Where a whole-suite run's CPU goes, from Linux process accounting (Debian package `acct`):
//
//   apt-get install -y acct && touch /tmp/pacct && accton /tmp/pacct
//   .ci/run > /tmp/suite.tap; accton off
//   dump-acct /tmp/pacct > /tmp/pacct.txt && node scripts/diagnostics/acct-summary.ts /tmp/pacct.txt [timeline.jsonl]
//
// Given the run's timeline (scripts/diagnostics/test-timeline-record.mjs records each test file's pid) it also
// lists the test files by all the CPU they cost: their own process and everything below it
// (browsers, nats-servers, actor processes), the browsers apart.
// Every process that ended is counted once (user + system CPU, its parent's pid), so the total is
// the whole machine's during the run. It prints the CPU by command, then the test-file processes
// (the tap runner's children) and what runs below them, grouped by kind. Issue 30's notes, session 19.
import { readFileSync } from 'node:fs';

type Proc = { comm: string; cpu: number; pid: number; ppid: number; start: number };

const file = process.argv[2];
const timeline = process.argv[3];
if (!file) {
  console.error('usage: node scripts/diagnostics/acct-summary.ts <dump-acct output> [timeline.jsonl]');
  process.exit(2);
}
// dump-acct: comm|version|utime|stime|etime|uid|gid|mem|io|pid|ppid|flags|exit|tty|start; times in 1/100 s
const procs: Proc[] = readFileSync(file, 'utf8')
  .split('\n')
  .filter(Boolean)
  .map((line) => {
    const f = line.split('|').map((x) => x.trim());
    return {
      comm: f[0]!,
      cpu: (Number(f[2]) + Number(f[3])) / 100,
      pid: Number(f[9]),
      ppid: Number(f[10]),
      start: Date.parse(f[14] ?? ''),
    };
  });
const sum = (ps: Proc[]) => ps.reduce((s, p) => s + p.cpu, 0);
const row = (cpu: number, n: number, what: string) =>
  console.log(`${cpu.toFixed(0).padStart(7)} s ${String(n).padStart(6)} procs  ${what}`);

const kind = (comm: string) => {
  if (comm.startsWith('chromium')) return 'chromium';
  if (/^(firefox|Web Content|WebExtensions|RDD Process|forkserver|Socket Process|Utility Process|Privileged Cont|Isolated Web)/.test(comm))
    return 'firefox';
  return comm.replace(/\*$/, '');
};
/** `ps` grouped by `key`, in first-seen order. */
const groupBy = <K>(ps: Proc[], key: (p: Proc) => K) => {
  const m = new Map<K, Proc[]>();
  for (const p of ps) {
    const k = key(p);
    const list = m.get(k);
    if (list) list.push(p);
    else m.set(k, [p]);
  }
  return m;
};
const byKind = (ps: Proc[]) => [...groupBy(ps, (p) => kind(p.comm))].sort((a, b) => sum(b[1]) - sum(a[1]));

console.log(`all: ${sum(procs).toFixed(0)} s of CPU, ${procs.length} processes`);
for (const [k, ps] of byKind(procs).slice(0, 10)) row(sum(ps), ps.length, k);

// the tap runner: the process whose node children (one per test file) used the most CPU
const children = groupBy(procs, (p) => p.ppid);
const nodeCpu = (ps: Proc[]) => sum(ps.filter((p) => p.comm === 'node'));
const runner = [...children].sort((a, b) => nodeCpu(b[1]) - nodeCpu(a[1]))[0];
if (!runner) process.exit(0);
const files = runner[1].filter((p) => p.comm === 'node');
const below: Proc[] = [];
const walk = (pid: number) => {
  for (const c of children.get(pid) ?? []) {
    below.push(c);
    walk(c.pid);
  }
};
for (const f of files) walk(f.pid);
const own = files.map((f) => f.cpu).sort((a, b) => a - b);
console.log(
  `\ntest-file processes (children of pid ${runner[0]}): ${files.length}, ${sum(files).toFixed(0)} s of their own CPU (median ${own[own.length >> 1]?.toFixed(1)} s, least ${own[0]?.toFixed(1)} s)`,
);
console.log('started by them (processes whose parent ended first are counted above, not here):');
for (const [k, ps] of byKind(below).slice(0, 8)) row(sum(ps), ps.length, k);

if (timeline) {
  // pids are reused over a long run: a child is taken as the file's when it ended within the file's life
  // (dump-acct gives each start to the second, in local time)
  const lines = readFileSync(timeline, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as { file: string; pid: number; origin: number; end: number });
  const rows = lines
    .map((l) => {
      const during = (p: Proc) => p.start >= l.origin - 2000 && p.start <= l.end + 1000;
      const under: Proc[] = [];
      const down = (pid: number) => {
        for (const c of children.get(pid) ?? [])
          if (during(c)) {
            under.push(c);
            down(c.pid);
          }
      };
      down(l.pid);
      const browsers = sum(under.filter((p) => ['chromium', 'firefox'].includes(kind(p.comm))));
      const own = procs.find((p) => p.pid === l.pid && p.comm === 'node' && during(p))?.cpu ?? 0;
      return { file: l.file, own, browsers, rest: sum(under) - browsers, all: own + sum(under) };
    })
    .sort((a, b) => b.all - a.all);
  const total = rows.reduce((s, r) => s + r.all, 0);
  console.log(`\ntest files by all their CPU (${rows.length} files, ${total.toFixed(0)} s): all = own + browsers + other processes below`);
  for (const r of rows.slice(0, 30))
    console.log(
      `${r.all.toFixed(1).padStart(7)} s = ${r.own.toFixed(1).padStart(5)} + ${r.browsers.toFixed(1).padStart(5)} + ${r.rest.toFixed(1).padStart(5)}  ${r.file}`,
    );
}
