/**
 * controlplane/testing/etcd: real etcd members (Debian's etcd-server) for
 * tests, on loopback ports of their own, each with its data directory under
 * one temporary directory. Members can be killed (SIGKILL), stopped and
 * continued (SIGSTOP/SIGCONT: a paused member), and started again on their
 * data; a member can also be reached through a loopback TCP proxy whose
 * connections the test cuts (a gRPC stream broken with etcd still up).
 * close() kills them all and removes the directory.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { connect, createServer, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from '../../lib/testing/ports.js';
import { EtcdClient, parseEtcdEndpoints } from '../store/etcd/client.js';

interface Member {
  readonly name: string;
  readonly clientPort: number;
  readonly peerPort: number;
  readonly dataDir: string;
  proc: ChildProcess | null;
  log: string;
}

/** A TCP proxy in front of one member: cut() resets every connection through it (new ones are accepted). */
export interface MemberProxy {
  /** `http://127.0.0.1:P`, the proxy's address. */
  readonly endpoint: string;
  /** Connections open through it now. */
  readonly open: number;
  /** Resets every connection through it; returns how many. */
  cut(): number;
  close(): Promise<void>;
}

export class EtcdCluster {
  private readonly members: Member[] = [];
  private readonly proxies: MemberProxy[] = [];
  private readonly dir: string;
  private closed = false;

  private constructor(dir: string) {
    this.dir = dir;
  }

  /** Starts n members (a new cluster) and waits until it answers a quorum read. */
  static async start(n = 1, opts: { prefix?: string } = {}): Promise<EtcdCluster> {
    const c = new EtcdCluster(mkdtempSync(join(tmpdir(), opts.prefix ?? 'nn-etcd-')));
    try {
      for (let i = 0; i < n; i++) {
        const name = `m${i}`;
        const dataDir = join(c.dir, name);
        mkdirSync(dataDir, { recursive: true });
        c.members.push({ name, clientPort: await freePort(), peerPort: await freePort(), dataDir, proc: null, log: '' });
      }
      for (let i = 0; i < n; i++) c.spawn(i, 'new');
      await c.waitReady();
    } catch (e) {
      await c.close();
      throw e;
    }
    return c;
  }

  get size(): number {
    return this.members.length;
  }

  /** `http://127.0.0.1:P,...`, every member. */
  get endpoints(): string {
    return this.members.map((m) => `http://127.0.0.1:${m.clientPort}`).join(',');
  }

  endpoint(i: number): string {
    return `http://127.0.0.1:${this.members[i]!.clientPort}`;
  }

  /** A client of every member (the caller closes it). */
  client(only?: number): EtcdClient {
    return new EtcdClient({ endpoints: parseEtcdEndpoints(only === undefined ? this.endpoints : this.endpoint(only)) });
  }

  /** A TCP proxy to member i (closed with the cluster). */
  async proxy(i: number): Promise<MemberProxy> {
    const target = this.members[i]!.clientPort;
    const pairs = new Set<[Socket, Socket]>();
    const server: Server = createServer((down) => {
      const up = connect(target, '127.0.0.1');
      const pair: [Socket, Socket] = [down, up];
      pairs.add(pair);
      const end = () => {
        pairs.delete(pair);
        down.destroy();
        up.destroy();
      };
      down.on('error', end).on('close', end);
      up.on('error', end).on('close', end);
      down.pipe(up);
      up.pipe(down);
    });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(0, '127.0.0.1', () => resolve());
    });
    const a = server.address();
    const port = typeof a === 'object' && a ? a.port : 0;
    const p: MemberProxy = {
      endpoint: `http://127.0.0.1:${port}`,
      get open() {
        return pairs.size;
      },
      cut() {
        const n = pairs.size;
        for (const [down, up] of [...pairs]) {
          down.resetAndDestroy();
          up.destroy();
        }
        pairs.clear();
        return n;
      },
      close: async () => {
        p.cut();
        await new Promise<void>((resolve) => server.close(() => resolve()));
      },
    };
    this.proxies.push(p);
    return p;
  }

  /** A client of these members, tried in this order (the caller closes it). */
  clientOf(members: readonly number[], timeoutMs?: number): EtcdClient {
    return new EtcdClient({ endpoints: parseEtcdEndpoints(members.map((i) => this.endpoint(i)).join(',')), ...(timeoutMs ? { timeoutMs } : {}) });
  }

  private spawn(i: number, state: 'new' | 'existing'): void {
    const m = this.members[i]!;
    const cluster = this.members.map((x) => `${x.name}=http://127.0.0.1:${x.peerPort}`).join(',');
    const args = [
      '--name', m.name, '--data-dir', m.dataDir,
      '--listen-client-urls', `http://127.0.0.1:${m.clientPort}`, '--advertise-client-urls', `http://127.0.0.1:${m.clientPort}`,
      '--listen-peer-urls', `http://127.0.0.1:${m.peerPort}`, '--initial-advertise-peer-urls', `http://127.0.0.1:${m.peerPort}`,
      '--initial-cluster', cluster, '--initial-cluster-state', state, '--initial-cluster-token', `nn-${this.dir}`,
      // Elections in about a second on a busy 2-core machine (etcd's defaults: 100 ms / 1 s).
      '--heartbeat-interval', '100', '--election-timeout', '1000',
      '--log-level', 'warn', '--logger', 'zap',
    ];
    const p = spawn('etcd', args, { stdio: ['ignore', 'ignore', 'pipe'] });
    m.log = '';
    p.stderr!.on('data', (b: Buffer) => {
      m.log = (m.log + b.toString()).slice(-20_000);
    });
    p.on('error', (e) => {
      m.log += `\nspawn failed: ${e.message}`;
    });
    m.proc = p;
  }

  /** Waits until a linearizable read succeeds through every running member (at most 30 s). */
  async waitReady(timeoutMs = 30_000): Promise<void> {
    const c = this.client();
    try {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        try {
          await c.range({ key: Buffer.from('nn-ready') }, 2000);
          return;
        } catch (e) {
          if (Date.now() > deadline) throw new Error(`etcd did not become ready: ${e instanceof Error ? e.message : String(e)}\n${this.members.map((m) => `${m.name}: ${m.log.slice(-2000)}`).join('\n')}`);
          await new Promise((r) => setTimeout(r, 200));
        }
      }
    } finally {
      c.close();
    }
  }

  /** The index of the member that is the raft leader now, or -1. */
  async leader(): Promise<number> {
    for (let i = 0; i < this.members.length; i++) {
      if (!this.members[i]!.proc) continue;
      const c = this.client(i);
      try {
        const st = await c.status(1000);
        if (st.leader !== 0n && st.leader === st.header?.memberId) return i;
      } catch {
        // down or paused
      } finally {
        c.close();
      }
    }
    return -1;
  }

  /**
   * Waits until a running member other than `not` leads (at most timeoutMs), and returns its index.
   * @throws when none does in time
   */
  async waitLeader(not = -1, timeoutMs = 15_000): Promise<number> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const l = await this.leader();
      if (l >= 0 && l !== not) return l;
      if (Date.now() > deadline) throw new Error(`no etcd leader (other than m${not}) within ${timeoutMs} ms`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }

  /** The running members that do not lead now (the leader looked up once). */
  async followers(): Promise<number[]> {
    const l = await this.leader();
    return this.members.flatMap((m, i) => (m.proc && i !== l ? [i] : []));
  }

  /** SIGKILL a member; it stays down until start(i). */
  async kill(i: number): Promise<void> {
    const p = this.members[i]!.proc;
    if (!p) return;
    this.members[i]!.proc = null;
    if (p.exitCode !== null || p.signalCode !== null) return;
    await new Promise<void>((resolve) => {
      p.once('exit', () => resolve());
      p.kill('SIGCONT');
      p.kill('SIGKILL');
    });
  }

  /** Starts a killed member again on its data directory. */
  start(i: number): void {
    if (this.members[i]!.proc) return;
    this.spawn(i, 'existing');
  }

  /** SIGKILL several members at once (quorum lost when they are a majority). */
  async killAll(members: readonly number[]): Promise<void> {
    await Promise.all(members.map((i) => this.kill(i)));
  }

  /** Starts every killed member again (its data kept). */
  startAll(): void {
    for (let i = 0; i < this.members.length; i++) this.start(i);
  }

  /** SIGSTOP: the member is paused (its connections stay open, nothing answers). */
  pause(i: number): void {
    this.members[i]!.proc?.kill('SIGSTOP');
  }

  resume(i: number): void {
    this.members[i]!.proc?.kill('SIGCONT');
  }

  /** Whether member i's process is running. */
  running(i: number): boolean {
    return this.members[i]!.proc !== null;
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    for (const p of this.proxies) await p.close();
    for (let i = 0; i < this.members.length; i++) await this.kill(i);
    rmSync(this.dir, { recursive: true, force: true });
  }
}
