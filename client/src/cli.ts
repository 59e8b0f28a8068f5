// The `payloads` command: balance, top-ups with a terminal QR code, screenshots with a progress bar
// per result from the event stream, page conversion, relay tests. Key from PAYLOADS_KEY or the
// config file, base URL from PAYLOADS_URL. Exit codes: 0 done, 1 the job or a check failed,
// 2 the API refused (bad key, bad input, no funds...), 3 network or an interrupted download.
import { Command } from 'commander';
import ora from 'ora';
import cliProgress from 'cli-progress';
import Table from 'cli-table3';
import qrcode from 'qrcode-terminal';
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { homedir } from 'node:os';
import { join, dirname } from 'node:path';
import { addConvertOptions, convertBody } from './convert-options.ts';
import { addCrawlCommands } from './crawl-cli.ts';
import { addShotControlFlags, shotControlsFromFlags, type ShotFlags } from './shots-flags.ts';
import { createPayloadsClient, PayloadsError, DEFAULT_BASE_URL, type Job, type PayloadsClient, type Result } from './index.ts';

export const EXIT = { ok: 0, failed: 1, refused: 2, network: 3 } as const;

export interface CliConfig {
  key?: string;
  url?: string;
}

/** ~/.config/payloads/config.json (or PAYLOADS_CONFIG): `{"key": "...", "url": "..."}`; the environment wins. */
export function loadConfig(env = process.env): { key?: string; url: string; from: string } {
  const file = env.PAYLOADS_CONFIG ?? join(env.XDG_CONFIG_HOME ?? join(homedir(), '.config'), 'payloads', 'config.json');
  let fromFile: CliConfig = {};
  if (existsSync(file)) {
    try {
      fromFile = JSON.parse(readFileSync(file, 'utf8')) as CliConfig;
    } catch (e) {
      throw new PayloadsError('bad_request', `config file ${file} is not JSON: ${(e as Error).message}`);
    }
  }
  return {
    key: env.PAYLOADS_KEY || fromFile.key,
    url: env.PAYLOADS_URL || fromFile.url || DEFAULT_BASE_URL,
    from: env.PAYLOADS_KEY ? 'PAYLOADS_KEY' : file,
  };
}

const eur = (payloads: number) => `€${(payloads / 10000).toFixed(4).replace(/0{1,2}$/, '')}`;
const list = (v: string) =>
  v
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);

function client(io: Io): PayloadsClient {
  const c = loadConfig(io.env);
  if (!c.key)
    throw new PayloadsError(
      'unauthorized',
      'no API key: set PAYLOADS_KEY or put {"key": "..."} in ~/.config/payloads/config.json (make one on the account page)',
    );
  return createPayloadsClient({ key: c.key, baseUrl: c.url });
}

interface Io {
  out: NodeJS.WritableStream & { isTTY?: boolean };
  err: NodeJS.WritableStream & { isTTY?: boolean };
  env: NodeJS.ProcessEnv;
  signal: AbortSignal;
}

/** Write every done result into `dir` (file name = result key) as it finishes. */
async function saveResults(c: PayloadsClient, job: Job, dir: string, io: Io, done: Set<string>): Promise<string[]> {
  mkdirSync(dir, { recursive: true });
  const written: string[] = [];
  for (const r of job.results) {
    if (r.status !== 'done' || !r.url || done.has(r.key)) continue;
    done.add(r.key);
    const path = join(dir, r.filename ?? r.key);
    await c.download(r, path, { signal: io.signal });
    written.push(path);
  }
  return written;
}

function resultTable(job: Job, files: Map<string, string>): string {
  const t = new Table({ head: ['result', 'status', 'price', 'file / error'] });
  for (const r of job.results)
    t.push([r.key, r.status + (r.refunded ? ' (refunded)' : ''), String(r.price), files.get(r.key) ?? r.error ?? '']);
  return t.toString();
}

/** `chromium,firefox@128,firefox@115` → the API's browser items (`id` or `{id, versions}`). */
export function browserItems(list: string[]): (string | { id: string; versions: string[] })[] {
  const byId = new Map<string, string[] | null>();
  for (const item of list) {
    const [id, version] = item.split('@') as [string, string | undefined];
    const cur = byId.get(id);
    if (!version) {
      if (cur === undefined) byId.set(id, null);
      continue;
    }
    byId.set(id, [...(cur ?? []), version]);
  }
  return [...byId].map(([id, versions]) => (versions ? { id, versions } : id));
}

interface DiffSummary {
  a: string;
  b: string;
  differentPercent: number;
  perceptualPercent: number;
  regions: { x: number; y: number; w: number; h: number }[];
  uncompared: { rowsA: number; rowsB: number };
}

/** The compare summaries: one row per pair. */
function diffTable(diffs: (Result & { compare: DiffSummary })[]): string {
  const t = new Table({ head: ['a', 'b', 'differ %', 'perceptual %', 'largest regions (x,y wxh)', 'not compared'] });
  for (const { compare: c } of diffs) {
    t.push([
      c.a,
      c.b,
      String(c.differentPercent),
      String(c.perceptualPercent),
      c.regions
        .slice(0, 3)
        .map((r) => `${r.x},${r.y} ${r.w}x${r.h}`)
        .join('; ') || '-',
      c.uncompared.rowsA || c.uncompared.rowsB ? `${c.uncompared.rowsA}/${c.uncompared.rowsB} rows` : '-',
    ]);
  }
  return t.toString();
}

/** Follow the job's events with one progress bar per result; download each result when it is done. */
async function followWithBars(c: PayloadsClient, job: Job, dir: string, io: Io): Promise<{ job: Job; files: Map<string, string> }> {
  const bars = new cliProgress.MultiBar(
    {
      format: ' {bar} {key} {state}',
      stream: io.err as NodeJS.WriteStream,
      hideCursor: true,
      clearOnComplete: false,
      noTTYOutput: false,
    },
    cliProgress.Presets.shades_classic,
  );
  const bar = new Map(job.results.map((r) => [r.key, bars.create(2, 0, { key: r.key, state: 'queued' })]));
  const files = new Map<string, string>();
  const saving: Promise<void>[] = [];
  let final = job;
  try {
    for await (const e of c.events(job.id, { signal: io.signal })) {
      if (e.event === 'progress') bar.get(e.data.key)?.update(1, { state: e.data.progress });
      else if (e.event === 'result') {
        const r = e.data as Result;
        bar.get(r.key)?.update(r.status === 'done' ? 1 : 2, { state: r.status === 'done' ? 'downloading' : `failed: ${r.error ?? ''}` });
        if (r.status === 'done' && r.url) {
          const path = join(dir, r.filename ?? r.key);
          saving.push(
            c.download(r, path, { signal: io.signal }).then(() => {
              files.set(r.key, path);
              bar.get(r.key)?.update(2, { state: `saved ${path}` });
            }),
          );
        }
      } else if (e.event === 'job') final = e.data as Job;
    }
    await Promise.all(saving);
  } finally {
    bars.stop();
  }
  return { job: final, files };
}

export function program(io: Io): Command {
  const p = new Command('payloads')
    .description(
      'Payloads API from the terminal: screenshots, page conversion, site crawls and maps, Nostr relay tests, wallet.\nKey: PAYLOADS_KEY or ~/.config/payloads/config.json; API: PAYLOADS_URL (default http://localhost:8080).',
    )
    .configureOutput({ writeOut: (s) => io.out.write(s), writeErr: (s) => io.err.write(s) })
    .exitOverride()
    .option('--json', 'print the API answers as JSON instead of tables');
  const json = () => p.opts().json as boolean | undefined;

  p.command('balance')
    .description('show the wallet balance')
    .action(async () => {
      const b = await client(io).balance();
      io.out.write(json() ? JSON.stringify(b) + '\n' : `${b.balance} Payloads (${eur(b.balance)})\n`);
    });

  p.command('topup')
    .argument('<eur>', 'amount in EUR (0.25 to 100)', Number)
    .description('top up with a Lightning invoice: prints it and its QR code, waits for payment')
    .option('--timeout <seconds>', 'stop waiting after this long', Number)
    .action(async (amount: number, o: { timeout?: number }) => {
      const c = client(io);
      const { topup } = await c.topup(amount);
      io.out.write(
        `Pay ${topup.sats} sats (${amount} EUR → ${topup.payloads} Payloads) with this Lightning invoice:\n\n${topup.bolt11}\n\n`,
      );
      if (topup.bolt11)
        await new Promise<void>((r) =>
          qrcode.generate(topup.bolt11!.toUpperCase(), { small: true }, (q) => {
            io.out.write(q + '\n');
            r();
          }),
        );
      io.out.write(`top-up ${topup.id}\n`);
      const spin = ora({ text: 'waiting for the payment', stream: io.err as NodeJS.WriteStream }).start();
      const until = o.timeout ? Date.now() + o.timeout * 1000 : topup.expiresAt;
      for (;;) {
        const { topup: t, balance } = await c.topupStatus(topup.id);
        if (t.status === 'paid') {
          spin.succeed(`paid: +${t.payloads} Payloads; balance ${balance} Payloads`);
          io.out.write(`paid ${t.payloads} ${balance}\n`);
          return;
        }
        if (t.status !== 'pending' || Date.now() > until) {
          spin.fail(`top-up ${t.status === 'pending' ? 'not paid in time' : t.status}`);
          process.exitCode = EXIT.failed;
          return;
        }
        await new Promise((r) => setTimeout(r, 1000));
      }
    });

  addShotControlFlags(p.command('shots'))
    .argument('<url>')
    .description('screenshots in real browsers; files into --out')
    .option('-b, --browsers <ids>', 'browser ids, comma-separated; id@version for a given version (see GET /v1/services/shots)', list, [
      'chromium',
    ])
    .option('-v, --viewports <list>', 'WIDTHxHEIGHT or presets (fhd, qhd, hd, laptop, tablet, phone)', list)
    .option('--dark', 'dark scheme (with --light too: both)')
    .option('--light', 'light scheme (the default)')
    .option('--full-page', 'the whole page, not just the viewport')
    .option('--retina', 'device pixel ratio 2')
    .option('--compare', 'also diff every pair of browsers (same viewport and scheme), priced per pair')
    .option('--webhook <url>', 'https URL to POST the finished job to')
    .option('-o, --out <dir>', 'folder for the images', 'shots')
    .action(
      async (
        url: string,
        o: ShotFlags & {
          browsers: string[];
          viewports?: string[];
          dark?: boolean;
          light?: boolean;
          fullPage?: boolean;
          retina?: boolean;
          compare?: boolean;
          webhook?: string;
          out: string;
        },
      ) => {
        const c = client(io);
        const schemes = [...(o.light || !o.dark ? ['light' as const] : []), ...(o.dark ? ['dark' as const] : [])];
        const controls = shotControlsFromFlags(o);
        const { job, balance } = await c.createJob('shots', {
          url,
          browsers: browserItems(o.browsers),
          ...(o.viewports ? { viewports: o.viewports } : {}),
          schemes,
          ...(o.fullPage || o.retina || o.compare || Object.keys(controls).length
            ? {
                options: {
                  ...(o.fullPage ? { fullPage: true } : {}),
                  ...(o.retina ? { retina: true } : {}),
                  ...(o.compare ? { compare: true } : {}),
                  ...controls,
                },
              }
            : {}),
          ...(o.webhook ? { webhook: o.webhook } : {}),
        });
        io.err.write(`job ${job.id}: ${job.results.length} screenshots, ${job.cost} Payloads (balance ${balance})\n`);
        mkdirSync(o.out, { recursive: true });
        const done = await followWithBars(c, job, o.out, io);
        if (json()) io.out.write(JSON.stringify(done.job) + '\n');
        else {
          io.out.write(resultTable(done.job, done.files) + '\n');
          const diffs = done.job.results.filter((r) => (r as { compare?: unknown }).compare);
          if (diffs.length) io.out.write(diffTable(diffs as (Result & { compare: DiffSummary })[]) + '\n');
        }
        if (done.job.status !== 'completed') process.exitCode = EXIT.failed;
      },
    );

  const convert = p
    .command('convert')
    .argument('<url>')
    .description('a web page as Markdown, text, metadata JSON, sanitised HTML, PDF, its links, images or raw HTML')
    .option('-o, --out <path>', 'file (one output) or folder (several); without it text outputs go to stdout');
  addConvertOptions(convert);
  convert.action(async (url: string, o: Record<string, unknown>) => {
    const c = client(io);
    let body: Record<string, unknown>;
    try {
      body = convertBody(url, o);
    } catch (e) {
      throw new PayloadsError('bad_request', (e as Error).message);
    }
    const want = body.outputs as string[];
    const spin = ora({ text: `converting ${url}`, stream: io.err as NodeJS.WriteStream }).start();
    let job: Job;
    try {
      job = await c.createJob('websitepro', body as never).wait({
        signal: io.signal,
        onUpdate: (j) => {
          spin.text = `${j.status} ${j.results
            .map((r) => r.progress)
            .filter(Boolean)
            .join(', ')}`;
        },
      });
    } finally {
      spin.stop();
    }
    const files = new Map<string, string>();
    const outPath = o.out as string | undefined;
    for (const r of job.results) {
      if (r.status !== 'done' || !r.url) continue;
      if (outPath && want.length === 1) {
        mkdirSync(dirname(outPath), { recursive: true });
        await c.download(r, outPath, { signal: io.signal });
        files.set(r.key, outPath);
      } else if (outPath) {
        files.set(r.key, (await saveResults(c, { ...job, results: [r] }, outPath, io, new Set()))[0]!);
      } else if (r.key === 'pdf') {
        io.err.write('the pdf output needs --out\n');
      } else {
        const res = await fetch(r.url, { headers: { authorization: `Bearer ${loadConfig(io.env).key}` }, signal: io.signal });
        if (!res.ok) {
          // an error answer (expired, lost, ...) is not the page: say it with the API's code
          const e = ((await res.json().catch(() => null)) as { error?: { code?: string; message?: string } } | null)?.error;
          throw new PayloadsError(
            (e?.code ?? 'internal') as PayloadsError['code'],
            `${r.key}: ${e?.message ?? `HTTP ${res.status}`}`,
            res.status,
          );
        }
        io.out.write(await res.text());
      }
    }
    if (outPath || json()) io.err.write(resultTable(job, files) + '\n');
    if (job.status !== 'completed' || job.results.some((r) => r.status === 'failed')) process.exitCode = EXIT.failed;
  });

  addCrawlCommands(p, {
    io,
    client: () => client(io),
    json,
    key: () => loadConfig(io.env).key,
    fail: () => {
      process.exitCode = EXIT.failed;
    },
  });

  p.command('labs')
    .argument('<relay>', 'wss://relay… (or a bare host)')
    .description('test a Nostr relay; prints the checks; exit code 1 when a check fails')
    .option('--quick', 'the quick module (the default)')
    .option('--conformance', 'the conformance module')
    .option('--checks <ids>', 'a custom selection of check ids', list)
    .option('-o, --out <dir>', 'also save the labs.report/1 JSON files here')
    .action(async (relay: string, o: { quick?: boolean; conformance?: boolean; checks?: string[]; out?: string }) => {
      const c = client(io);
      const modules = [
        ...(o.quick || (!o.conformance && !o.checks) ? ['quick' as const] : []),
        ...(o.conformance ? ['conformance' as const] : []),
      ];
      const spin = ora({ text: `testing ${relay}`, stream: io.err as NodeJS.WriteStream }).start();
      let job: Job;
      try {
        job = await c.createJob('labs', { relay, ...(modules.length ? { modules } : {}), ...(o.checks ? { checks: o.checks } : {}) }).wait({
          signal: io.signal,
          onUpdate: (j) => {
            spin.text = j.results.map((r) => `${r.key}: ${r.progress ?? r.status}`).join('  ');
          },
        });
      } finally {
        spin.stop();
      }
      let failed = job.status !== 'completed';
      for (const r of job.results) {
        if (r.status !== 'done' || !r.url) {
          if (!r.oneTime) io.out.write(`${r.key}: ${r.status}${r.error ? ` (${r.error}: ${r.message ?? ''})` : ''}\n`);
          if (r.status === 'failed' && !r.oneTime) failed = true;
          continue;
        }
        // biome-ignore lint/suspicious/noExplicitAny: a labs report is printed field by field from its JSON; its schema is the server's
        let report: any;
        if (o.out) {
          const [path] = await saveResults(c, { ...job, results: [r] }, o.out, io, new Set());
          report = JSON.parse(await readFile(path!, 'utf8'));
        } else {
          const res = await fetch(r.url, { headers: { authorization: `Bearer ${loadConfig(io.env).key}` }, signal: io.signal });
          report = await res.json();
        }
        if (json()) {
          io.out.write(JSON.stringify(report) + '\n');
        } else {
          const t = new Table({ head: ['check', 'status', 'message'], colWidths: [26, 8, 80], wordWrap: true });
          for (const ch of report.checks) t.push([ch.id, ch.status, ch.message]);
          io.out.write(`${r.key}: ${report.relay.url} score ${report.score}\n${t.toString()}\n`);
          const s = report.summary;
          io.out.write(`${s.pass} pass, ${s.fail} fail, ${s.warn} warn, ${s.skip} skip, ${s.info} info\n`);
        }
        if (report.summary.fail > 0) failed = true;
      }
      if (failed) process.exitCode = EXIT.failed;
    });

  return p;
}

/** Run the CLI; resolves with the exit code (also used by the tests in-process where handy). */
export async function main(argv: string[], io: Partial<Io> = {}): Promise<number> {
  const ac = new AbortController();
  const onInt = () => ac.abort(new PayloadsError('interrupted', 'interrupted'));
  process.once('SIGINT', onInt);
  const full: Io = { out: process.stdout, err: process.stderr, env: process.env, signal: ac.signal, ...io };
  try {
    await program(full).parseAsync(argv);
    return Number(process.exitCode ?? 0);
  } catch (e) {
    const ce = e as { code?: string; exitCode?: number };
    if (typeof ce.code === 'string' && ce.code.startsWith('commander.')) {
      return ce.code === 'commander.helpDisplayed' || ce.code === 'commander.version' ? 0 : EXIT.refused;
    }
    if (e instanceof PayloadsError) {
      full.err.write(`payloads: ${e.code}: ${e.message}\n`);
      return e.code === 'network' || e.code === 'interrupted' ? EXIT.network : EXIT.refused;
    }
    full.err.write(`payloads: ${(e as Error).message}\n`);
    return EXIT.network;
  } finally {
    process.off('SIGINT', onInt);
  }
}
