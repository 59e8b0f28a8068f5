// A 3-node NATS cluster whose nodes talk over a network the test can cut, Jepsen style: each node
// runs in its own network namespace (`ip netns`), joined to a bridge in a hub namespace by a veth
// pair, with private addresses that exist only inside these namespaces (10.199.0.1-3). Cutting a
// node's veth partitions its routes from the other nodes. Clients stay on loopback: each node's
// client port is reached through a forwarder (a unix socket crosses namespaces), so every client
// keeps seeing every node, the minority side included, as in a real partition between data centres.
// Nothing is created in the machine's own namespace: no interface, no address, no route.
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { createServer, connect as netConnect, type Server, type Socket } from 'node:net';
import { mkdirSync, writeFileSync, chmodSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { randomBytes } from 'node:crypto';
import { startNatsServer, type NatsServerHandle } from '../../shared/nats/server.ts';
import { waitForJetStream } from '../../scripts/cluster-lib.ts';

const run = promisify(execFile);
const ip = (...args: string[]) => run('ip', args);

/** Why namespaces cannot be used here, or null when they can (root, iproute2, veth and bridge). */
export async function netnsUnavailable(): Promise<string | null> {
  if (process.getuid?.() !== 0) return 'network namespaces need root';
  const a = `plchk${randomBytes(3).toString('hex')}`;
  try {
    await ip('netns', 'add', a);
    await ip('-n', a, 'link', 'add', 'br0', 'type', 'bridge');
    await ip('-n', a, 'link', 'add', 'v0', 'type', 'veth', 'peer', 'name', 'v1');
    return null;
  } catch (e) {
    return `ip netns with veth and bridge not available: ${String((e as { stderr?: string }).stderr ?? (e as Error).message).trim()}`;
  } finally {
    await ip('netns', 'del', a).catch(() => {});
  }
}

/** Whether `tc netem` exists in this kernel (a module that may be missing). */
export async function netemUnavailable(ns: string, dev: string): Promise<string | null> {
  try {
    await run('ip', ['netns', 'exec', ns, 'tc', 'qdisc', 'add', 'dev', dev, 'root', 'netem', 'delay', '1ms']);
    await run('ip', ['netns', 'exec', ns, 'tc', 'qdisc', 'del', 'dev', dev, 'root']);
    return null;
  } catch (e) {
    return `tc netem not available: ${String((e as { stderr?: string }).stderr ?? (e as Error).message).trim()}`;
  }
}

export interface NetNode {
  name: string; // n1..n3 (server name payloads-n1...)
  ns: string;
  /** The hub side of its veth: down = partitioned from the other nodes. */
  hubDev: string;
  addr: string;
  /** The loopback URL clients use (the forwarder). */
  url: string;
  handle: NatsServerHandle | null;
}

export interface NetCluster {
  nodes: NetNode[];
  url: string;
  hub: string;
  /** Cut node i's link: its routes to both others are gone, clients still reach it. */
  cut(i: number): Promise<void>;
  heal(i: number): Promise<void>;
  /** Add `ms` of delay on node i's link (both directions); 0 removes it. */
  delay(i: number, ms: number): Promise<void>;
  stop(): Promise<void>;
}

/** A unix-socket bridge: a TCP port on 127.0.0.1 here, the node's client port inside its namespace. */
function forwarder(ns: string, sock: string, port: number): Promise<{ server: Server; inner: ChildProcess; sockets: Set<Socket> }> {
  const code = `const net=require('net');require('fs').rmSync(${JSON.stringify(sock)},{force:true});
net.createServer((c)=>{const u=net.connect(${port},'127.0.0.1');c.pipe(u);u.pipe(c);const end=()=>{c.destroy();u.destroy();};c.on('error',end);u.on('error',end);c.on('close',end);u.on('close',end);}).listen(${JSON.stringify(sock)},()=>process.send&&process.send('up'));
process.on('disconnect',()=>process.exit(0));`;
  const inner = spawn('ip', ['netns', 'exec', ns, process.execPath, '-e', code], { stdio: ['ignore', 'ignore', 'inherit', 'ipc'] });
  const sockets = new Set<Socket>();
  return new Promise((resolve, reject) => {
    inner.once('message', () => {
      const server = createServer((c) => {
        const u = netConnect(sock);
        sockets.add(c);
        c.pipe(u);
        u.pipe(c);
        const end = () => {
          c.destroy();
          u.destroy();
          sockets.delete(c);
        };
        c.on('error', end);
        u.on('error', end);
        c.on('close', end);
        u.on('close', end);
      });
      server.listen(0, '127.0.0.1', () => resolve({ server, inner, sockets }));
    });
    inner.once('exit', (code) => reject(new Error(`forwarder in ${ns} exited ${code}`)));
  });
}

export async function startNetnsCluster(dataDir: string): Promise<NetCluster> {
  const id = randomBytes(3).toString('hex');
  const hub = `pl${id}hub`;
  const made: string[] = [];
  const forwarders: Awaited<ReturnType<typeof forwarder>>[] = [];
  const nodes: NetNode[] = [];
  const cleanup = async () => {
    for (const n of nodes) await n.handle?.stop('SIGKILL').catch(() => {});
    for (const f of forwarders) {
      f.server.close();
      for (const s of f.sockets) s.destroy();
      f.inner.kill('SIGKILL');
    }
    for (const ns of made) await ip('netns', 'del', ns).catch(() => {});
  };
  try {
    await ip('netns', 'add', hub);
    made.push(hub);
    await ip('-n', hub, 'link', 'set', 'lo', 'up');
    await ip('-n', hub, 'link', 'add', 'br0', 'type', 'bridge');
    await ip('-n', hub, 'link', 'set', 'br0', 'up');
    for (let i = 1; i <= 3; i++) {
      const ns = `pl${id}n${i}`;
      await ip('netns', 'add', ns);
      made.push(ns);
      await ip('-n', ns, 'link', 'set', 'lo', 'up');
      // created in the hub with its peer straight in the node's namespace: never in the host's
      await ip('-n', hub, 'link', 'add', `v${i}`, 'type', 'veth', 'peer', 'name', 'eth0', 'netns', ns);
      await ip('-n', hub, 'link', 'set', `v${i}`, 'master', 'br0');
      await ip('-n', hub, 'link', 'set', `v${i}`, 'up');
      await ip('-n', ns, 'addr', 'add', `10.199.0.${i}/24`, 'dev', 'eth0');
      await ip('-n', ns, 'link', 'set', 'eth0', 'up');
      nodes.push({ name: `n${i}`, ns, hubDev: `v${i}`, addr: `10.199.0.${i}`, url: '', handle: null });
    }
    await Promise.all(
      nodes.map(async (n) => {
        const dir = join(dataDir, 'netns', n.name);
        mkdirSync(join(dir, 'bin'), { recursive: true });
        // named nats-server: startNatsServer finds the ports file by the binary's name
        const wrapper = join(dir, 'bin', 'nats-server');
        writeFileSync(wrapper, `#!/bin/sh\nexec ip netns exec ${n.ns} ${process.env.NATS_SERVER_BIN ?? 'nats-server'} "$@"\n`);
        chmodSync(wrapper, 0o755);
        const routes = nodes
          .filter((o) => o !== n)
          .map((o) => `"nats-route://${o.addr}:6222"`)
          .join(', ');
        n.handle = await startNatsServer({
          // ownProcessGroup: under setpriv --pdeathsig, so a test process killed hard takes its nodes along
          storeDir: join(dir, 'store'),
          port: 4222,
          serverName: `payloads-${n.name}`,
          bin: wrapper,
          ownProcessGroup: true,
          // kept beside its store: the partition scenario keeps it with a bad run's logs
          logFile: join(dir, 'nats-server.log'),
          // no_advertise: clients must not learn 127.0.0.1:4222 of another namespace (on the host it is someone else's port).
          // ping_interval/ping_max: a route to a cut-off node is dropped after ~4 s of silence, not
          // when its write deadline (10 s) runs out with full buffers (18-23 s, issue 45 session 30):
          // until then the other nodes route requests to the cut-off node's queue subscribers (the
          // wallet it just left), and half of them went unanswered
          extra: `cluster { name: "payloads", host: "${n.addr}", port: 6222, no_advertise: true, ping_interval: "1s", ping_max: 4, routes: [${routes}] }`,
        });
        const f = await forwarder(n.ns, join(dir, 'client.sock'), 4222);
        forwarders.push(f);
        n.url = `nats://127.0.0.1:${(f.server.address() as { port: number }).port}`;
      }),
    );
    const url = nodes.map((n) => n.url).join(',');
    await waitForJetStream(url, 60_000);
    return {
      nodes,
      url,
      hub,
      cut: async (i) => {
        await ip('-n', hub, 'link', 'set', nodes[i]!.hubDev, 'down');
      },
      heal: async (i) => {
        await ip('-n', hub, 'link', 'set', nodes[i]!.hubDev, 'up');
      },
      delay: async (i, ms) => {
        const n = nodes[i]!;
        for (const [ns, dev] of [
          [hub, n.hubDev],
          [n.ns, 'eth0'],
        ] as const) {
          await run('ip', ['netns', 'exec', ns, 'tc', 'qdisc', 'del', 'dev', dev, 'root']).catch(() => {});
          if (ms > 0) await run('ip', ['netns', 'exec', ns, 'tc', 'qdisc', 'add', 'dev', dev, 'root', 'netem', 'delay', `${ms}ms`]);
        }
      },
      stop: async () => {
        await cleanup();
        // the nodes' logs stay (the caller may keep them); their stores go
        for (const n of nodes) rmSync(join(dataDir, 'netns', n.name, 'store'), { recursive: true, force: true });
      },
    };
  } catch (e) {
    await cleanup();
    throw e;
  }
}
