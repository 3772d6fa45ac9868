/**
 * overlay/bgp/bird: the node's BIRD 2 daemon, run by the agent.
 *
 * Layout under the node's run directory (one agent, one BIRD per runDir):
 *   bgp/bird.conf   the configuration (config.ts), written whole (a
 *                   temporary file renamed) before BIRD reads it
 *   bgp/bird.ctl    BIRD's control socket (birdc -s)
 *   bgp/bird.pid    BIRD's own pid file
 *   bgp/bird.json   {pid, startTime}: the BIRD this agent started, adopted
 *                   after an agent restart when that pid still runs with
 *                   that start time (as the pause holders: never a recycled
 *                   pid)
 *   bgp/bird.log    BIRD's log
 *
 * - BIRD is started in the agent's network namespace (the node's) and
 *   daemonizes itself (its own session, stdio on /dev/null), so it outlives
 *   the agent: an agent restart leaves BIRD, its sessions and its kernel
 *   routes as they are, and the new agent adopts it.
 * - ensure(text): writes the file when it changed and has BIRD read it
 *   (`birdc configure`: BIRD adds and removes the sessions that changed and
 *   keeps the others up); starts BIRD when none runs. A BIRD that ran here
 *   and died (bird.json names a dead process) is started with -R, graceful
 *   restart recovery: its kernel routes (left by the kill) are kept until
 *   the sessions are back, and the peers, told of the restart, keep this
 *   node's routes meanwhile.
 * - stopBird(): SIGTERM, which BIRD takes as a clean shutdown: its sessions
 *   close with a notification (the peers drop its routes at once) and its
 *   kernel routes go; SIGKILL after a grace period.
 */
import { existsSync, mkdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { ErrorCode, NodenetError } from '../../../../lib/errors/errors.js';
import { F } from '../../../../lib/log/fields.js';
import type { Logger } from '../../../../lib/log/log.js';
import type { Cidr } from '../../../../lib/net/ip.js';
import { writeFileDurable } from '../../../../lib/state/durable.js';
import { readJsonFile } from '../../../../lib/state/read.js';
import type { Runner } from '../../exec/runner.js';
import { isAlive, procStat } from '../../netns/proc.js';
import { parseProtocols, peerSessions, type PeerSession } from './protocols.js';

export interface BirdPaths {
  readonly dir: string;
  readonly config: string;
  readonly socket: string;
  readonly pidFile: string;
  readonly record: string;
  readonly log: string;
}

export function birdPaths(runDir: string): BirdPaths {
  const dir = join(runDir, 'bgp');
  return { dir, config: join(dir, 'bird.conf'), socket: join(dir, 'bird.ctl'), pidFile: join(dir, 'bird.pid'), record: join(dir, 'bird.json'), log: join(dir, 'bird.log') };
}

interface BirdRecord {
  readonly pid: number;
  readonly startTime: string;
}

function readRecord(file: string): BirdRecord | null {
  try {
    return readJsonFile(file, (r) => ({ pid: r.int('pid', { min: 1 }), startTime: r.string('startTime') }));
  } catch {
    return null;
  }
}

export interface BirdDeps {
  readonly runDir: string;
  readonly runner: Runner;
  readonly log: Logger;
  /** Default `bird` and `birdc` on PATH. */
  readonly bird?: string;
  readonly birdc?: string;
  /** How long BIRD has to answer on its socket after a start (ms). Default 10 s. */
  readonly startTimeoutMs?: number;
}

/** What ensure() did: started a BIRD (fresh, or after one died), adopted the running one, had it re-read its file, or nothing. */
export type BirdAction = 'started' | 'restarted' | 'adopted' | 'reconfigured' | 'kept';

export class Bird {
  readonly paths: BirdPaths;
  private current: BirdRecord | null = null;
  private readonly bird: string;
  private readonly birdc: string;

  constructor(private readonly deps: BirdDeps) {
    this.paths = birdPaths(deps.runDir);
    this.bird = deps.bird ?? 'bird';
    this.birdc = deps.birdc ?? 'birdc';
  }

  /** The pid of the BIRD this agent runs or adopted, while it runs. */
  get pid(): number | null {
    const c = this.current;
    return c && isAlive(c.pid, c.startTime) ? c.pid : null;
  }

  /** Makes BIRD run with `text` as its configuration (see the header). @throws when BIRD cannot start or refuses the file */
  async ensure(text: string): Promise<BirdAction> {
    const p = this.paths;
    mkdirSync(p.dir, { recursive: true, mode: 0o700 });
    let changed = false;
    try {
      changed = readFileSync(p.config, 'utf8') !== text;
    } catch {
      changed = true;
    }
    if (changed) writeFileDurable(p.config, text);
    if (this.current && !isAlive(this.current.pid, this.current.startTime)) {
      this.deps.log.warn({ pid: this.current.pid }, 'BIRD is gone; starting it again with graceful restart recovery');
      this.current = null;
      return this.start(true).then(() => 'restarted' as const);
    }
    if (!this.current) {
      const rec = readRecord(p.record);
      if (rec && isAlive(rec.pid, rec.startTime)) {
        this.current = rec;
        this.deps.log.info({ pid: rec.pid }, 'BIRD adopted (started by an earlier agent)');
        if (changed) await this.configure();
        return 'adopted';
      }
      await this.start(rec !== null);
      return rec ? 'restarted' : 'started';
    }
    if (!changed) return 'kept';
    await this.configure();
    return 'reconfigured';
  }

  /** `birdc configure`: BIRD re-reads its file. @throws when it refuses it (it keeps the old one) */
  async configure(): Promise<void> {
    const r = await this.deps.runner.run([this.birdc, '-s', this.paths.socket, 'configure'], { allowFailure: true, timeoutMs: 10_000 });
    const out = `${r.stdout}${r.stderr}`;
    if (r.exitCode !== 0 || !/Reconfigur(ed|ation in progress)/.test(out)) {
      throw new NodenetError(ErrorCode.Exec, `birdc configure failed (BIRD keeps its previous configuration): ${out.trim() || `exit ${r.exitCode}`}`);
    }
    this.deps.log.info({ [F.path]: this.paths.config }, 'BIRD reconfigured');
  }

  /** The BGP sessions, from `birdc show protocols`. @throws when BIRD does not answer */
  async sessions(): Promise<PeerSession[]> {
    const r = await this.deps.runner.run([this.birdc, '-s', this.paths.socket, 'show', 'protocols'], { allowFailure: true, timeoutMs: 5_000 });
    if (r.exitCode !== 0 || /Unable to connect/.test(r.stdout + r.stderr)) throw new NodenetError(ErrorCode.Exec, `birdc show protocols: ${(r.stdout + r.stderr).trim() || `exit ${r.exitCode}`}`);
    return peerSessions(parseProtocols(r.stdout));
  }

  private async start(recover: boolean): Promise<void> {
    const p = this.paths;
    rmSync(p.pidFile, { force: true });
    const argv = [this.bird, '-c', p.config, '-s', p.socket, '-P', p.pidFile, ...(recover ? ['-R'] : [])];
    // BIRD parses the file, forks the daemon (its own session) and exits 0; a refused file exits 1 with the reason.
    const r = await this.deps.runner.run(argv, { allowFailure: true, timeoutMs: 10_000 });
    if (r.exitCode === 127) throw new NodenetError(ErrorCode.NotAvailable, 'bird is not installed (Debian: apt-get install bird2): the bgp backend runs BIRD 2');
    if (r.exitCode !== 0) throw new NodenetError(ErrorCode.Exec, `bird did not start: ${(r.stderr || r.stdout).trim()}`);
    const limit = this.deps.startTimeoutMs ?? 10_000;
    const deadline = Date.now() + limit;
    for (;;) {
      const pid = readPid(p.pidFile);
      const st = pid ? procStat(pid) : null;
      if (pid && st && existsSync(p.socket)) {
        const rec = { pid, startTime: st.startTime };
        writeFileDurable(p.record, `${JSON.stringify(rec)}\n`);
        this.current = rec;
        this.deps.log.info({ pid: pid, recover, [F.path]: p.config }, 'BIRD started');
        return;
      }
      if (Date.now() > deadline) throw new NodenetError(ErrorCode.Exec, `bird started but wrote no pid file and socket within ${limit} ms (see ${p.log})`);
      await sleep(20);
    }
  }
}

function readPid(file: string): number | null {
  try {
    const n = Number(readFileSync(file, 'utf8').trim());
    return Number.isInteger(n) && n > 1 ? n : null;
  } catch {
    return null;
  }
}

/**
 * Stops the BIRD recorded under runDir, if it runs (SIGTERM: a clean shutdown, see the header; SIGKILL after
 * graceMs), and removes its files. Returns its pid if one was running. Idempotent.
 *
 * `nodeRunner` runs in the node's namespace (the agent's own runner): with it and the cluster CIDR, the routes BIRD
 * leaves in the kernel inside the cluster CIDR are removed too (`ip route flush root <clusterCIDR> proto bird`: the
 * blocks this BIRD imports, config.ts; a user's own BIRD routes elsewhere are never touched). A clean shutdown takes
 * them itself, except a BIRD still in graceful restart recovery (started with -R, its sessions not all back: it has
 * not taken the routes over yet), and a killed one leaves them. Without them (a caller outside the namespace), nothing
 * but the process is touched.
 */
export async function stopBird(runDir: string, opts: { graceMs?: number; nodeRunner?: Runner; clusterCIDR?: Cidr } = {}): Promise<number | null> {
  const p = birdPaths(runDir);
  const rec = readRecord(p.record);
  let stopped: number | null = null;
  if (rec && isAlive(rec.pid, rec.startTime)) {
    stopped = rec.pid;
    try { process.kill(rec.pid, 'SIGTERM'); } catch { /* gone */ }
    const deadline = Date.now() + (opts.graceMs ?? 5_000);
    while (isAlive(rec.pid, rec.startTime) && Date.now() < deadline) await sleep(20);
    if (isAlive(rec.pid, rec.startTime)) {
      try { process.kill(rec.pid, 'SIGKILL'); } catch { /* gone */ }
    }
  }
  if (opts.nodeRunner && opts.clusterCIDR && (stopped !== null || rec !== null)) await opts.nodeRunner.run(['ip', '-4', 'route', 'flush', 'root', opts.clusterCIDR, 'proto', 'bird'], { allowFailure: true });
  rmSync(p.dir, { recursive: true, force: true });
  return stopped;
}
