// The strong form of "a browser reaches nothing but the guard proxy" (issue 27): each browser
// process starts in a network namespace of its own in which only `lo` is up. Inside, the only
// thing listening is 127.0.0.1:<port>, and that socket is accepted by this process, which hands
// every connection to the guard proxy. There is no route, no other interface, no DNS server: a
// page's WebRTC, QUIC or anything else that ignores the proxy settings has nowhere to go.
//
// How: a short-lived helper (`unshare --net node -e HELPER`, with a user namespace too when this
// process is not root) brings `lo` up, opens the listener and passes it to us over Node's IPC
// channel (a socket keeps the namespace it was made in). The browser is started through
// `nsenter --target <helper> --net` (a wrapper script used as puppeteer's executable; the DevTools
// pipe and the process's arguments pass through unchanged). Firefox's WebDriver BiDi listens on a
// TCP port inside the namespace: we listen on a free port outside, tell Firefox to use the same
// number inside, and on each connection the helper dials in and passes us the socket. Once the
// browser is up the helper exits; the browser process keeps the namespace alive.
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { NetnsJail } from './launchers/types.ts';

export type { NetnsJail };

export type NetnsMode = 'auto' | 'required' | 'off';

// Runs inside the new namespace. Plain JavaScript, no project imports: it starts in ~100 ms.
const HELPER = `
const net = require('node:net');
const { spawnSync } = require('node:child_process');
const fail = (m) => { process.send({ error: m }, () => process.exit(1)); };
// iproute2 is in /usr/sbin, which a non-root PATH often leaves out
let up;
for (const [cmd, args] of [['ip', ['link', 'set', 'lo', 'up']], ['/usr/sbin/ip', ['link', 'set', 'lo', 'up']], ['/sbin/ip', ['link', 'set', 'lo', 'up']], ['/sbin/ifconfig', ['lo', 'up']]]) {
  up = spawnSync(cmd, args, { encoding: 'utf8' });
  if (!up.error && up.status === 0) break;
}
if (up.error || up.status !== 0) fail('cannot bring lo up in the namespace: ' + (up.error ? up.error.message : up.stderr));
else {
  const srv = net.createServer();
  srv.on('error', (e) => fail(e.message));
  srv.listen(0, '127.0.0.1', () => process.send({ listening: srv.address().port }, srv, () => srv.close()));
}
process.on('message', (m) => {
  if (!m || typeof m.dial !== 'number') return;
  const s = net.connect(m.dial, '127.0.0.1');
  s.once('connect', () => process.send({ dialed: m.id }, s));
  s.once('error', (e) => process.send({ dialed: m.id, error: e.message }));
});
process.on('disconnect', () => process.exit(0));
`;

/** Whether namespaces are made as root (netns only) or through a user namespace. */
const asRoot = () => process.getuid?.() === 0;

function wrapperScript(): string {
  const path = join(tmpdir(), `payloads-netns-${process.getuid?.() ?? 0}.sh`);
  const script =
    '#!/bin/sh\n# started by the browser-pool: the browser joins the network namespace its helper made\n' +
    'exec nsenter --target "$PAYLOADS_NETNS_PID" --net $PAYLOADS_NETNS_USER -- "$PAYLOADS_NETNS_EXE" "$@"\n';
  if (!existsSync(path) || readFileSync(path, 'utf8') !== script) {
    // written aside and renamed: another process may be starting a browser through it right now
    const tmp = `${path}.${process.pid}`;
    writeFileSync(tmp, script, { mode: 0o755 });
    renameSync(tmp, path);
  }
  return path;
}

/**
 * Make a namespace for one browser. `accept` gets every connection the browser makes to its proxy
 * address (hand it to the guard proxy). Rejects when this process cannot make namespaces.
 */
export async function openJail(accept: (s: net.Socket) => void, timeoutMs = 10000): Promise<NetnsJail> {
  const root = asRoot();
  const env = { ...process.env };
  delete env.NODE_OPTIONS; // the helper is plain JavaScript: no test loaders, no --inspect
  const helper: ChildProcess = spawn(
    'unshare',
    [...(root ? [] : ['--user', '--map-root-user']), '--net', '--', process.execPath, '-e', HELPER],
    {
      stdio: ['ignore', 'ignore', 'pipe', 'ipc'],
      env,
    },
  );
  let stderr = '';
  helper.stderr?.on('data', (d: Buffer) => {
    if (stderr.length < 2000) stderr += d.toString();
  });
  const dials = new Map<number, (s: net.Socket | Error) => void>();
  let seq = 0;
  const listener = await new Promise<net.Server>((resolve, reject) => {
    const timer = setTimeout(() => {
      helper.kill('SIGKILL');
      reject(new Error(`no namespace within ${timeoutMs} ms`));
    }, timeoutMs);
    helper.on('error', (e) => {
      clearTimeout(timer);
      reject(e);
    });
    helper.on('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`cannot make a network namespace (unshare exited ${code}): ${stderr.trim().slice(0, 300) || 'no message'}`));
      for (const d of dials.values()) d(new Error('namespace helper exited'));
      dials.clear();
    });
    helper.on('message', (m: { listening?: number; error?: string; dialed?: number }, handle?: net.Server | net.Socket) => {
      if (m.error && m.dialed === undefined) {
        clearTimeout(timer);
        reject(new Error(m.error));
        return;
      }
      if (m.listening && handle instanceof net.Server) {
        clearTimeout(timer);
        resolve(handle);
        return;
      }
      if (m.dialed !== undefined) {
        const d = dials.get(m.dialed);
        dials.delete(m.dialed);
        d?.(handle instanceof net.Socket ? handle : new Error(m.error ?? 'dial failed'));
      }
    });
  });
  listener.on('connection', accept);
  listener.on('error', () => {});
  const port = (listener.address() as AddressInfo | null)?.port;
  const forwards: net.Server[] = [];
  const endHelper = () => {
    if (helper.connected) helper.disconnect();
  };
  return {
    proxy: `127.0.0.1:${port}`,
    wrap: (executablePath) => ({
      executablePath: wrapperScript(),
      env: {
        ...process.env,
        PAYLOADS_NETNS_PID: String(helper.pid),
        PAYLOADS_NETNS_EXE: executablePath,
        PAYLOADS_NETNS_USER: root ? '' : '--user --preserve-credentials',
      },
    }),
    async forwardInto() {
      const outside = net.createServer((c) => {
        c.on('error', () => {});
        const id = seq++;
        dials.set(id, (s) => {
          if (s instanceof Error) {
            c.destroy();
            return;
          }
          s.on('error', () => c.destroy());
          c.on('close', () => s.destroy());
          s.on('close', () => c.destroy());
          c.pipe(s);
          s.pipe(c);
        });
        if (!helper.connected) {
          dials.get(id)?.(new Error('helper gone'));
          return;
        }
        helper.send({ dial: (outside.address() as AddressInfo).port, id });
      });
      forwards.push(outside);
      await new Promise<void>((r) => outside.listen(0, '127.0.0.1', r));
      return (outside.address() as AddressInfo).port;
    },
    launched() {
      endHelper();
      for (const f of forwards) f.close();
    },
    close() {
      endHelper();
      for (const f of forwards) f.close();
      listener.close();
    },
  };
}
