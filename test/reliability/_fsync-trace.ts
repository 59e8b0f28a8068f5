// Reads an `strace -f -tt -s 4096 -yy` log of a nats-server and answers, for each acknowledged
// write, whether the stream's block file was fsynced after the write and before the
// acknowledgement left for the client. Used by fsync-order.test.ts.
import { spawn } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';

export const TRACED_CALLS = 'write,writev,pwrite64,fsync,fdatasync,sendto,sendmsg';

/**
 * Attach strace to a running process (every thread) and resolve once every thread is traced.
 * Attached rather than started under strace: the server is stopped by its own handle as always, and
 * strace ends with it (a strace that is signalled detaches and would leave the server running).
 */
export async function attachStrace(pid: number, logFile: string): Promise<{ exited: Promise<unknown> }> {
  const child = spawn('strace', ['-f', '-tt', '-s', '4096', '-yy', '-e', `trace=${TRACED_CALLS}`, '-o', logFile, '-p', String(pid)], {
    stdio: 'ignore',
  });
  const exited = new Promise((r) => child.once('exit', r));
  const tracedBy = (tid: string) => /TracerPid:\s*(\d+)/.exec(readFileSync(`/proc/${pid}/task/${tid}/status`, 'utf8'))?.[1];
  for (let i = 0; i < 400; i++) {
    if (child.exitCode !== null) throw new Error(`strace exited with ${child.exitCode}`);
    const tids = readdirSync(`/proc/${pid}/task`);
    if (tids.every((tid) => tracedBy(tid) === String(child.pid))) return { exited };
    await sleep(25);
  }
  child.kill();
  throw new Error('strace did not attach to every thread in 10 s');
}

interface Call {
  /** Line of the call's start and of its end (the same unless strace split it as unfinished/resumed). */
  start: number;
  end: number;
  pid: string;
  name: string;
  /** The first argument's fd path, e.g. /…/streams/LEDGER/msgs/1.blk or TCP:[…]. */
  path: string;
  text: string;
}

const CALL = /^(\d+)\s+\S+\s+(\w+)\(\d+<([^>]*)>(.*)$/;
const RESUMED = /^(\d+)\s+\S+\s+<\.\.\. (\w+) resumed>/;

export function parseTrace(log: string): Call[] {
  const calls: Call[] = [];
  const open = new Map<string, Call>();
  log.split('\n').forEach((line, i) => {
    const r = RESUMED.exec(line);
    if (r) {
      const c = open.get(`${r[1]} ${r[2]}`);
      if (c) {
        c.end = i;
        c.text += line;
        open.delete(`${r[1]} ${r[2]}`);
      }
      return;
    }
    const m = CALL.exec(line);
    if (!m) return;
    const c: Call = { start: i, end: i, pid: m[1]!, name: m[2]!, path: m[3]!, text: m[4]! };
    if (line.endsWith('<unfinished ...>')) open.set(`${c.pid} ${c.name}`, c);
    calls.push(c);
  });
  return calls;
}

export interface AckCheck {
  seq: number;
  marker: string;
  /** The block-file write holding the marker, the acknowledgement, the fsync between them. */
  written: boolean;
  acked: boolean;
  syncedBeforeAck: boolean;
}

/**
 * For each (seq, marker) of stream `stream`: the first block-file write containing the marker,
 * the first acknowledgement `{"stream":"<stream>", "seq":<seq>}` written to a TCP socket, and
 * whether an fsync/fdatasync of that stream's block file ended after the write ended and before
 * the acknowledgement started.
 */
export function checkAcks(log: string, stream: string, writes: { seq: number; marker: string }[]): AckCheck[] {
  const calls = parseTrace(log);
  const blk = new RegExp(`/streams/${stream.replace(/[$]/g, '\\$&')}/msgs/[^/]+\\.blk$`);
  const dataWrites = calls.filter((c) => /^(p?write(64)?|writev)$/.test(c.name) && blk.test(c.path));
  const syncs = calls.filter((c) => (c.name === 'fsync' || c.name === 'fdatasync') && blk.test(c.path));
  const acks = calls.filter((c) => /^(write|writev|sendto|sendmsg)$/.test(c.name) && c.path.startsWith('TCP:'));
  return writes.map(({ seq, marker }) => {
    const w = dataWrites.find((c) => c.text.includes(marker));
    const ackRe = new RegExp(`\\\\"stream\\\\":\\\\"${stream}\\\\",\\s*\\\\"seq\\\\":${seq}\\b`);
    const a = acks.find((c) => ackRe.test(c.text));
    const synced = !!w && !!a && syncs.some((s) => s.end > w.end && s.end < a.start);
    return { seq, marker, written: !!w, acked: !!a, syncedBeforeAck: synced };
  });
}
