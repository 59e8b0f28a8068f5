// Process trees read from /proc: which processes a command started (however deep, process groups
// and sessions of their own included), and which of them are still alive.
import { readdirSync, readFileSync } from 'node:fs';

/** Parent pid of every process, from /proc/<pid>/stat (the field after the command name). */
function parents(): Map<number, number[]> {
  const kids = new Map<number, number[]>();
  for (const p of readdirSync('/proc')) {
    if (!/^\d+$/.test(p)) continue;
    try {
      const stat = readFileSync(`/proc/${p}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      (kids.get(ppid) ?? kids.set(ppid, []).get(ppid)!).push(Number(p));
    } catch {
      /* exited while listing */
    }
  }
  return kids;
}

export interface Proc {
  pid: number;
  comm: string;
}

/** Every descendant of `root`, with its command name. */
export function descendants(root: number): Proc[] {
  const kids = parents();
  const out: Proc[] = [];
  const stack = [root];
  while (stack.length) {
    for (const k of kids.get(stack.pop()!) ?? []) {
      const comm = commOf(k);
      if (comm !== undefined) out.push({ pid: k, comm });
      stack.push(k);
    }
  }
  return out;
}

/** The command name, or undefined once the process is gone (a zombie counts as gone). */
export function commOf(pid: number): string | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    if (stat.slice(stat.lastIndexOf(')') + 2).startsWith('Z')) return undefined;
    return readFileSync(`/proc/${pid}/comm`, 'utf8').trim();
  } catch {
    return undefined;
  }
}

/** Those of `procs` still running (same pid, same command name: a reused pid is not counted). */
export const stillAlive = (procs: Proc[]) => procs.filter((p) => commOf(p.pid) === p.comm);
