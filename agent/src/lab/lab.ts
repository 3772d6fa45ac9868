/**
 * lab: a whole cluster on one machine, out of network namespaces. The demo,
 * the tests and the benchmarks build their nodes with it.
 *
 * A Lab owns an underlay namespace (nn-<tag>-ul, bridge ul0) and a run
 * directory <labRoot>/<tag> (labRoot: /run/nodenet/lab, or
 * $NODENET_LAB_ROOT). The run directory holds owner.json (the pid and start
 * time of the process that made the lab), so that the start-up cleanup of a
 * later run (lab/leftovers.ts) removes a lab only when its owner is dead,
 * never a concurrent run's or a user's `demo --keep`. Each VNode is a namespace
 * (nn-<tag>-<name>) with eth0 on the underlay and its own agent process,
 * state dir and CNI socket. Pods are namespaces the tests or the agent make.
 *
 * The underlay namespace holds 192.168.77.1 on ul0 and is every node's
 * default gateway (it does not forward), so traffic no rule claims leaves a
 * node the way it would on a real one instead of failing the route lookup.
 *
 * Everything is named with the nn- prefix; destroy() removes everything a
 * Lab made (its nodes' Pod cgroups too: lab/node-cgroups.ts), and it never
 * touches the root namespace's links, routes, firewall or sysctls. Building
 * a lab is set-up work, off every hot path: it spawns `ip` freely.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, rmSync, existsSync, writeFileSync, openSync, closeSync, readFileSync, readdirSync, cpSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { createServer, connect, type Server, type Socket } from 'node:net';
import type { Runner, RunResult } from '../exec/runner.js';
import { distDir, packageRoot, pausePath, shimPath } from '../config/paths.js';
import type { OverlayBackendName } from '../config/config.js';
import { nodenetNetConf } from '../cnitypes/nodenet-netconf.js';
import { listSandboxes, stopSandbox, unrecordedHolders } from '../netns/pause-holder.js';
import { writeOwner } from './owner.js';
import { readNodeAgent, removeLabNodeCgroups } from './node-cgroups.js';
import { CLUSTER_DNS_IP, CLUSTER_DOMAIN, KUBERNETES_SERVICE_IP, labRoot, nodeUnderlayIP, onUnderlay, UNDERLAY_GATEWAY, UNDERLAY_PREFIX } from './plan.js';
import { HaParts, apiServerDataDir } from './ha.js';
import type { HaShape } from './ha-plan.js';
import { replaceProcess } from './owner.js';

export const REPO = packageRoot();
export const AGENT_JS = `${distDir()}nodenet.js`;
export const SHIM = shimPath();
export const PAUSE = pausePath();
/** What a lab node reports it has (the agent's --capacity): a share of the machine, fixed. */
export const LAB_NODE_CAPACITY = 'cpu=2,memory=4Gi,ephemeral-storage=20Gi,pods=110';

/** Runs set-up commands for a lab: `run` throws on failure, `ok` returns the failure. */
export class Shell {
  constructor(readonly runner: Runner) {}
  run(argv: readonly string[], input?: string): Promise<RunResult> {
    return this.runner.run(argv, input === undefined ? {} : { input });
  }
  ok(argv: readonly string[], input?: string): Promise<RunResult> {
    return this.runner.run(argv, input === undefined ? { allowFailure: true } : { allowFailure: true, input });
  }
}

/** Short unique tag for names: at most 15-char interface names leave little room. */
export function uniqueTag(prefix: string): string {
  return `${prefix}${(process.pid % 10000).toString(36)}${Math.floor(Math.random() * 1296).toString(36)}`;
}

export interface NodeOptions {
  /** Absent on a lab with a control plane: node IPAM gives it (spec.podCIDR). */
  podCIDR?: string;
  /** Underlay address, e.g. 192.168.77.11/24. Default: derived from the node's index. */
  underlayIP?: string;
  clusterCIDR?: string;
  /**
   * The agent's overlay backend (vxlan, host-gw, none; the config's `backend`). Lab nodes share one L2 underlay (the
   * bridge), so host-gw works. Read at each startAgent: set it and restart the agent to switch a running node.
   */
  backend?: OverlayBackendName;
  /** Extra agent config fields. */
  config?: Record<string, unknown>;
  /** Extra environment of the agent process (e.g. a PATH whose `iptables` is another backend). */
  agentEnv?: Record<string, string>;
  /** Extra node arguments for the agent process (e.g. --cpu-prof). */
  agentNodeArgs?: string[];
}

export class Lab {
  readonly ul: string;
  readonly runRoot: string;
  readonly nodes: VNode[] = [];
  private extraNetns: string[] = [];
  /** The lab's control plane, once started: nodes added after it watch it. */
  controlPlane: LabControlPlane | null = null;

  /** @internal */
  readonly sh: Shell;

  private constructor(readonly tag: string, root: string, readonly runner: Runner) {
    this.ul = `nn-${tag}-ul`;
    this.runRoot = `${root}/${tag}`;
    this.sh = new Shell(runner);
  }

  /** Makes the underlay and the run directory, owned by this process. `root` defaults to labRoot(). */
  static async create(tag: string, opts: { runner: Runner; root?: string }): Promise<Lab> {
    const lab = new Lab(tag, opts.root ?? labRoot(), opts.runner);
    const sh = (argv: readonly string[], input?: string) => lab.sh.run(argv, input);
    mkdirSync(lab.runRoot, { recursive: true, mode: 0o700 });
    // The owner record comes first: from here on a crash leaves something the next run's cleanup can attribute.
    writeOwner(lab.runRoot, { tag, namespacePrefix: `nn-${tag}-` });
    await sh(['ip', 'netns', 'add', lab.ul]);
    await sh(['ip', '-n', lab.ul, '-batch', '-'], `link set lo up\nlink add ul0 type bridge\naddr add ${UNDERLAY_GATEWAY}/${UNDERLAY_PREFIX} dev ul0\nlink set ul0 up\n`);
    return lab;
  }

  /**
   * The lab of that tag another process made and owns (`nodenet lab up`'s, which outlives its command): nothing is
   * made or checked here. Its nodes and control plane are not known to the Lab returned: the caller says what it
   * needs of them (`nodenet lab add-node`). Never destroy() it: `nodenet lab down` removes such a lab.
   */
  static attach(tag: string, opts: { runner: Runner; root?: string }): Lab {
    return new Lab(tag, opts.root ?? labRoot(), opts.runner);
  }

  /** A plain namespace (a pod for shim-level tests, or a client on the underlay), removed by destroy(). */
  async addNetns(name: string): Promise<{ name: string; path: string }> {
    const full = `nn-${this.tag}-${name}`;
    await this.sh.run(['ip', 'netns', 'add', full]);
    await this.sh.run(['ip', '-n', full, 'link', 'set', 'lo', 'up']);
    this.extraNetns.push(full);
    return { name: full, path: `/var/run/netns/${full}` };
  }

  /**
   * A namespace plugged into the underlay with the given address (a client outside the cluster, an etcd member,
   * an API server); `port` names its underlay port (default u<tag><name>, cut to 15 characters).
   */
  async addUnderlayHost(name: string, addr: string, opts: { port?: string } = {}): Promise<{ name: string; path: string }> {
    const ns = await this.addNetns(name);
    const ifx = opts.port ?? `u${this.tag}${name}`.slice(0, 15);
    await this.sh.run(['ip', 'link', 'add', ifx, 'netns', this.ul, 'type', 'veth', 'peer', 'name', 'eth0', 'netns', ns.name]);
    await this.sh.run(['ip', '-n', this.ul, '-batch', '-'], `link set ${ifx} master ul0\nlink set ${ifx} up\n`);
    await this.sh.run(['ip', '-n', ns.name, '-batch', '-'], `addr add ${addr} dev eth0\nlink set eth0 up\n`);
    return ns;
  }

  async addNode(name: string, opts: NodeOptions): Promise<VNode> {
    const index = this.nodes.length + 1;
    const node = new VNode(this, name, index, opts);
    await node.create();
    this.nodes.push(node);
    return node;
  }

  /**
   * Starts `nodenet control-plane` in the underlay namespace, serving on the
   * underlay gateway (192.168.77.1:6443), where every node reaches it over
   * its eth0, which it advertises (the `kubernetes` Service's endpoint, which
   * Pods reach through the ClusterIP); its certificate also names the
   * ClusterIP; its data directory is under the lab's run directory. `nodes`
   * get their tokens and kubeconfigs. kubectl reaches it from the underlay
   * namespace (LabControlPlane.kubectl).
   */
  async startControlPlane(opts: { nodes: readonly string[]; args?: readonly string[]; detached?: boolean; ha?: HaShape }): Promise<LabControlPlane> {
    if (this.controlPlane) throw new Error('the lab already has a control plane');
    const cp = new LabControlPlane(this, opts.nodes, opts.args ?? [], opts.ha ?? null);
    await cp.start({ detached: opts.detached === true });
    this.controlPlane = cp;
    return cp;
  }

  /**
   * Removes every namespace, process, cgroup and file this Lab made. Safe to call twice. Returns what could not be
   * removed (a line each; the rest of the teardown goes on regardless): [] when nothing is left.
   */
  async destroy(): Promise<string[]> {
    const problems: string[] = [];
    for (const n of this.nodes) problems.push(...await n.destroy());
    this.controlPlane?.closeLocalAccess();
    await this.controlPlane?.stop('SIGKILL');
    for (const ns of [...this.extraNetns, this.ul]) await killNetns(this.sh, ns);
    this.extraNetns = [];
    const mounts = (await this.sh.ok(['findmnt', '-rn', '-o', 'TARGET'])).stdout.split('\n').filter((m) => m.startsWith(this.runRoot));
    for (const m of mounts.reverse()) await this.sh.ok(['umount', '-l', m]);
    // NODENET_LAB_KEEP_LOGS=DIR: the agents' logs outlive the lab there (test-vm keeps them in the run's share).
    const keep = process.env['NODENET_LAB_KEEP_LOGS'];
    if (keep) {
      for (const n of this.nodes) {
        for (const f of ['agent.log', 'agent.stderr']) {
          try { cpSync(`${n.dir}/${f}`, `${keep}/${this.tag}/${n.name}.${f}`); } catch { /* none written */ }
        }
      }
    }
    rmSync(this.runRoot, { recursive: true, force: true });
    return problems;
  }
}

/**
 * A lab's control plane: one `nodenet control-plane` process in the underlay namespace, or (ha) etcd members and
 * API servers in namespaces of their own behind HAProxy in the underlay namespace (lab/ha.ts). Either way it is
 * reached at https://192.168.77.1:6443, and its admin and node kubeconfigs name that address.
 */
export class LabControlPlane {
  readonly dataDir: string;
  readonly kubeconfig: string;
  readonly url = `https://${UNDERLAY_GATEWAY}:6443`;
  private proc: ChildProcess | null = null;
  private parts: HaParts | null = null;
  private relay: ChildProcess | null = null;
  private local: { server: Server; url: string; kubeconfig: string; sockets: Set<Socket> } | null = null;
  private readonly stderrFile: string;

  constructor(readonly lab: Lab, readonly nodes: readonly string[], readonly args: readonly string[], readonly ha: HaShape | null = null) {
    this.dataDir = ha ? apiServerDataDir(lab.runRoot, 1) : `${lab.runRoot}/control-plane`;
    this.kubeconfig = `${this.dataDir}/admin.kubeconfig`;
    this.stderrFile = `${lab.runRoot}/control-plane.stderr`;
  }

  nodeKubeconfig(node: string): string {
    return `${this.dataDir}/nodes/${node}.kubeconfig`;
  }

  get running(): boolean {
    return this.ha ? this.parts !== null : this.proc !== null;
  }

  /** Its pid while it runs (nsenter execs node: the control plane's own); in HA, the balancer's, the part that stays. */
  get pid(): number | null {
    return this.ha ? this.parts?.pid ?? null : this.proc?.pid ?? null;
  }

  /** What the HA operations (lab/ha.ts haAct) need of this lab. @throws when it is not an HA control plane */
  haLab(): import('./ha.js').HaLab {
    if (!this.ha) throw new Error('not an HA control plane');
    return { runner: this.lab.runner, tag: this.lab.tag, runRoot: this.lab.runRoot, shape: this.ha, nodes: this.nodes, agentJs: AGENT_JS, detached: false, apiServerExtraArgs: this.args };
  }

  /**
   * Starts it (again: the same data directory) and waits until it answers /readyz.
   * `detached`: in a session of its own and not waited for by this process, so it outlives it (`nodenet lab up`).
   */
  async start(opts: { detached?: boolean } = {}): Promise<void> {
    if (this.proc || this.parts) throw new Error('control plane already running');
    if (this.ha) return this.startHa(opts.detached === true);
    mkdirSync(this.dataDir, { recursive: true, mode: 0o700 });
    const out = openSync(this.stderrFile, 'a');
    const p = spawn('nsenter', [`--net=/var/run/netns/${this.lab.ul}`, '--', process.execPath, AGENT_JS, 'control-plane',
      '--data-dir', this.dataDir, '--listen', `${UNDERLAY_GATEWAY}:6443`, '--host', `${UNDERLAY_GATEWAY},${KUBERNETES_SERVICE_IP}`,
      ...(this.nodes.length ? ['--node', this.nodes.join(',')] : []), '--log-level', 'info', '--log-file', `${this.lab.runRoot}/control-plane.log`, ...this.args], { stdio: ['ignore', out, out], detached: opts.detached === true });
    closeSync(out);
    if (opts.detached) p.unref();
    this.proc = p;
    p.on('exit', () => { if (this.proc === p) this.proc = null; });
    replaceProcess(this.lab.runRoot, 'control-plane', p.pid!);
    const deadline = Date.now() + 30_000;
    while (Date.now() < deadline) {
      if (this.proc !== p) throw new Error(`control plane exited at start: ${this.stderr()}`);
      if (existsSync(this.kubeconfig)) {
        const r = await this.kubectl(['get', '--raw', '/readyz'], true);
        if (r.exitCode === 0) return;
      }
      await sleep(100);
    }
    throw new Error(`control plane not ready after 30 s: ${this.stderr()}`);
  }

  private async startHa(detached: boolean): Promise<void> {
    const parts = new HaParts({ ...this.haLab(), detached }, (name, addr, port) => this.lab.addUnderlayHost(name, addr, { port }));
    this.parts = parts;
    await parts.start();
    const deadline = Date.now() + 30_000;
    for (;;) {
      const r = await this.kubectl(['get', '--raw', '/readyz'], true);
      if (r.exitCode === 0) return;
      if (Date.now() > deadline) throw new Error(`the HA control plane does not answer through HAProxy after 30 s: ${r.stderr.trim()}`);
      await sleep(100);
    }
  }

  /** Stops it: SIGKILL is a crash. */
  async stop(signal: NodeJS.Signals = 'SIGTERM'): Promise<void> {
    if (this.parts) {
      await this.parts.stop(signal);
      this.parts = null;
      return;
    }
    const p = this.proc;
    if (!p) return;
    const exited = new Promise<void>((r) => p.once('exit', () => r()));
    p.kill(signal);
    await Promise.race([exited, sleep(10_000)]);
    this.proc = null;
  }

  stderr(): string {
    try { return readFileSync(this.stderrFile, 'utf8').slice(-2000); } catch { return ''; }
  }

  /**
   * The API server from this (the root) namespace, on loopback: a relay in
   * the underlay namespace listens on a unix socket in the lab's run
   * directory and dials the API server; this process listens on 127.0.0.1
   * (a free port) and passes each connection to that socket. The serving
   * certificate names 127.0.0.1, so kubectl and client-node verify it as
   * usual. Returns a kubeconfig for it (the admin's, with the local URL).
   * Nothing is added to the root namespace but a loopback listener.
   */
  async localAccess(): Promise<{ url: string; kubeconfig: string }> {
    if (this.local) return { url: this.local.url, kubeconfig: this.local.kubeconfig };
    const sock = this.apiSocket;
    this.relay = await this.startSocketRelay();
    const sockets = new Set<Socket>();
    const server = createServer((c) => {
      const u = connect(sock);
      sockets.add(c).add(u);
      const end = () => { c.destroy(); u.destroy(); sockets.delete(c); sockets.delete(u); };
      c.on('error', end); u.on('error', end); c.on('close', end); u.on('close', end);
      c.pipe(u).pipe(c);
    });
    await new Promise<void>((resolve, reject) => { server.once('error', reject); server.listen(0, '127.0.0.1', () => resolve()); });
    const port = (server.address() as { port: number }).port;
    const url = `https://127.0.0.1:${port}`;
    const kubeconfig = `${this.dataDir}/local.kubeconfig`;
    writeFileSync(kubeconfig, readFileSync(this.kubeconfig, 'utf8').replace(this.url, url), { mode: 0o600 });
    this.local = { server, url, kubeconfig, sockets };
    return { url, kubeconfig };
  }

  /** The unix socket the relay in the underlay namespace listens on (localAccess, `nodenet lab up`). */
  get apiSocket(): string {
    return `${this.lab.runRoot}/api.sock`;
  }

  /**
   * Starts the relay in the underlay namespace: a unix socket in the lab's run directory that dials the
   * API server; resolves once the socket exists. `detached`: it outlives this process.
   */
  async startSocketRelay(opts: { detached?: boolean } = {}): Promise<ChildProcess> {
    const sock = this.apiSocket;
    rmSync(sock, { force: true });
    const relay = spawn('nsenter', [`--net=/var/run/netns/${this.lab.ul}`, '--', process.execPath, '-e', relayScript({ unix: sock }, { host: UNDERLAY_GATEWAY, port: 6443 })], { stdio: 'ignore', detached: opts.detached === true });
    if (opts.detached) relay.unref();
    const deadline = Date.now() + 10_000;
    while (!existsSync(sock)) {
      if (Date.now() > deadline || relay.exitCode !== null) {
        relay.kill('SIGKILL');
        throw new Error('the control plane relay did not start');
      }
      await sleep(25);
    }
    return relay;
  }

  /** Closes the loopback listener and the relay. */
  closeLocalAccess(): void {
    if (this.local) {
      for (const s of this.local.sockets) s.destroy();
      this.local.server.close();
      this.local = null;
    }
    this.relay?.kill('SIGKILL');
    this.relay = null;
  }

  /** The real kubectl, run in the underlay namespace with the admin kubeconfig. */
  kubectl(args: readonly string[], allowFailure = false, input?: string): Promise<RunResult> {
    return this.lab.runner.run(['nsenter', `--net=/var/run/netns/${this.lab.ul}`, '--', 'kubectl', '--kubeconfig', this.kubeconfig, ...args], { allowFailure, ...(input === undefined ? {} : { input }) });
  }
}

/**
 * A relay's program for `node -e` (it needs nothing but node:net): accepts on `from` and pipes each
 * connection to `to`. `from` is a unix socket, or a TCP address (port 0 picks a free one; then `portFile`
 * receives the port once it listens, written whole: a temporary file renamed).
 */
export function relayScript(from: { unix: string } | { host: string; port: number; portFile?: string }, to: { unix: string } | { host: string; port: number }): string {
  const dial = 'unix' in to ? `net.connect(${JSON.stringify(to.unix)})` : `net.connect(${to.port}, ${JSON.stringify(to.host)})`;
  const listen = 'unix' in from ? `${JSON.stringify(from.unix)}` : `${from.port}, ${JSON.stringify(from.host)}`;
  const portFile = 'unix' in from ? undefined : from.portFile;
  const onListen = portFile ? `, function () { const f = ${JSON.stringify(portFile)}; require('node:fs').writeFileSync(f + '.tmp', String(this.address().port)); require('node:fs').renameSync(f + '.tmp', f); }` : '';
  return `const net = require('node:net'); process.title = 'nodenet-relay'; net.createServer((c) => { const u = ${dial}; const end = () => { c.destroy(); u.destroy(); }; c.on('error', end); u.on('error', end); c.on('close', end); u.on('close', end); c.pipe(u).pipe(c); }).listen(${listen}${onListen});`;
}

/** Kills every process inside the named namespace (they survive `ip netns del`), then deletes it. */
export async function killNetns(sh: Shell, ns: string): Promise<void> {
  const pids = (await sh.ok(['ip', 'netns', 'pids', ns])).stdout.split('\n').filter(Boolean);
  for (const p of pids) {
    try { process.kill(Number(p), 'SIGKILL'); } catch { /* already gone */ }
  }
  await sh.ok(['ip', 'netns', 'del', ns]);
}

export class VNode {
  readonly ns: string;
  readonly nsPath: string;
  readonly dir: string;
  readonly stateDir: string;
  readonly runDir: string;
  readonly socket: string;
  readonly logFile: string;
  readonly underlayIP: string;
  agent: ChildProcess | null = null;

  constructor(readonly lab: Lab, readonly name: string, readonly index: number, readonly opts: NodeOptions) {
    this.ns = `nn-${lab.tag}-${name}`;
    this.nsPath = `/var/run/netns/${this.ns}`;
    this.dir = `${lab.runRoot}/${name}`;
    this.stateDir = `${this.dir}/state`;
    this.runDir = `${this.dir}/run`;
    this.socket = `${this.runDir}/cni.sock`;
    this.logFile = `${this.dir}/agent.log`;
    this.underlayIP = opts.underlayIP ?? `${nodeUnderlayIP(index)}/${UNDERLAY_PREFIX}`;
  }

  async create(): Promise<void> {
    mkdirSync(this.stateDir, { recursive: true });
    mkdirSync(this.runDir, { recursive: true });
    await this.lab.sh.run(['ip', 'netns', 'add', this.ns]);
    const ifx = `u${this.lab.tag}${this.index}`.slice(0, 15);
    await this.lab.sh.run(['ip', 'link', 'add', ifx, 'netns', this.lab.ul, 'type', 'veth', 'peer', 'name', 'eth0', 'netns', this.ns]);
    await this.lab.sh.run(['ip', '-n', this.lab.ul, '-batch', '-'], `link set ${ifx} master ul0\nlink set ${ifx} up\n`);
    const gw = onUnderlay(this.underlayIP) ? `route add default via ${UNDERLAY_GATEWAY}\n` : '';
    await this.lab.sh.run(['ip', '-n', this.ns, '-batch', '-'], `link set lo up\naddr add ${this.underlayIP} dev eth0\nlink set eth0 up\n${gw}`);
  }

  /** The agent's config file content. */
  agentConfig(): Record<string, unknown> {
    return {
      nodeName: this.name,
      ...(this.opts.podCIDR ? { podCIDR: this.opts.podCIDR } : {}),
      ...(this.lab.controlPlane ? { kubeconfig: this.lab.controlPlane.nodeKubeconfig(this.name) } : {}),
      // The kubelet's --cluster-dns and --cluster-domain: ClusterFirst Pods resolve with the kube-dns Service the
      // control plane makes at the service CIDR's tenth address.
      ...(this.lab.controlPlane ? { clusterDNS: [CLUSTER_DNS_IP], clusterDomain: CLUSTER_DOMAIN } : {}),
      // The kubelet's --resolv-conf "": a lab's nodes reach nothing outside it, so its Pods, the DNS replicas
      // among them, have no upstream (a name outside the cluster gets SERVFAIL at once), never the machine's own.
      resolvConf: '',
      ...(this.opts.clusterCIDR ? { clusterCIDR: this.opts.clusterCIDR } : {}),
      stateDir: this.stateDir,
      runDir: this.runDir,
      cniSocket: this.socket,
      logFile: this.logFile,
      logLevel: 'debug',
      // Lab nodes share one machine: each reports a share of its own, the same on every machine, so that a demo
      // that fills a node behaves the same everywhere (a config's `capacity` replaces it).
      capacity: LAB_NODE_CAPACITY,
      ...this.opts.config,
      ...(this.opts.backend ? { backend: this.opts.backend } : {}),
    };
  }

  /** The agent's pid while it runs (nsenter execs node: the agent's own). */
  get agentPid(): number | null {
    return this.agent?.pid ?? null;
  }

  /**
   * Starts the agent inside the node namespace and waits until its CNI socket answers.
   * `detached`: in a session of its own and not waited for by this process, so it outlives it (`nodenet lab up`).
   */
  async startAgent(opts: { detached?: boolean } = {}): Promise<void> {
    if (this.agent) throw new Error(`agent of ${this.name} already running`);
    const cfg = `${this.dir}/agent.json`;
    rmSync(`${this.runDir}/agent.ready`, { force: true });
    writeFileSync(cfg, JSON.stringify(this.agentConfig(), null, 2));
    const out = openSync(`${this.dir}/agent.stderr`, 'a');
    // nsenter, not `ip netns exec`: the latter gives the agent a private mount namespace, and pod netns
    // bind mounts made later (by runtimes, by `nodenet pod`) would not propagate into it here.
    const p = spawn('nsenter', [`--net=${this.nsPath}`, '--', process.execPath, ...(this.opts.agentNodeArgs ?? []), AGENT_JS, 'agent', '--config', cfg], {
      stdio: ['ignore', out, out],
      env: { ...process.env, ...this.opts.agentEnv },
      detached: opts.detached === true,
    });
    closeSync(out);
    if (opts.detached) p.unref();
    this.agent = p;
    p.on('exit', () => { if (this.agent === p) this.agent = null; });
    // Ready in about 0.6 s on an idle machine (2 s on an API server: client-node's import); the margin is for
    // a loaded one, where two suites each start a control plane and agents side by side.
    // NODENET_TEST_TIME_SCALE stretches it inside an emulated VM (test-vm/).
    const limitMs = 30_000 * (Number(process.env['NODENET_TEST_TIME_SCALE']) || 1);
    const deadline = Date.now() + limitMs;
    while (Date.now() < deadline) {
      if (this.agent !== p) throw new Error(`agent of ${this.name} exited at start: ${this.agentStderr()}`);
      if (existsSync(`${this.runDir}/agent.ready`)) return;
      await sleep(25);
    }
    throw new Error(`agent of ${this.name} not ready after ${limitMs / 1000} s: ${this.agentStderr()}`);
  }

  agentStderr(): string {
    try { return readFileSync(`${this.dir}/agent.stderr`, 'utf8').slice(-2000); } catch { return ''; }
  }

  /** Stops the agent: SIGKILL simulates a crash, SIGTERM a clean stop. */
  async stopAgent(signal: NodeJS.Signals = 'SIGTERM'): Promise<void> {
    const p = this.agent;
    if (!p) return;
    const exited = new Promise<void>((r) => p.once('exit', () => r()));
    // nsenter execs node, so the pid is the agent's own.
    p.kill(signal);
    await Promise.race([exited, sleep(10_000)]);
    this.agent = null;
  }

  /** A CNI network config for this node's agent, as a runtime would hand it to the plugin. */
  cniConfig(overrides: Record<string, unknown> = {}): Record<string, unknown> {
    return { ...nodenetNetConf({ agentSocket: this.socket }), ...overrides };
  }

  /** Calls the real shim exactly as a runtime does: env + config on stdin. */
  async cni(command: string, args: { containerId?: string; netns?: string; ifName?: string; cniArgs?: string }, conf: unknown): Promise<CniCall> {
    const env: Record<string, string> = { CNI_COMMAND: command, CNI_PATH: `${REPO}dist`, PATH: process.env['PATH'] ?? '/usr/bin:/bin' };
    if (args.containerId !== undefined) env['CNI_CONTAINERID'] = args.containerId;
    if (args.netns !== undefined) env['CNI_NETNS'] = args.netns;
    if (args.ifName !== undefined) env['CNI_IFNAME'] = args.ifName;
    if (args.cniArgs !== undefined) env['CNI_ARGS'] = args.cniArgs;
    const r = await this.lab.runner.run([SHIM], { input: JSON.stringify(conf), env, allowFailure: true });
    let json: unknown = null;
    try { json = JSON.parse(r.stdout); } catch { /* not JSON */ }
    return { exitCode: r.exitCode, stdout: r.stdout, stderr: r.stderr, json };
  }

  /** Runs a command inside the node namespace. */
  async exec(argv: readonly string[], allowFailure = false): Promise<RunResult> {
    return this.lab.runner.run(['ip', 'netns', 'exec', this.ns, ...argv], { allowFailure });
  }

  /**
   * Kills the node's agent, its Pods' processes and its namespace, then removes its Pods' cgroups (the killed
   * kubelet never did; lab/node-cgroups.ts); the run directory stays for the Lab's destroy. Returns what could not
   * be removed (a line each), never throws for it.
   */
  async destroy(): Promise<string[]> {
    await this.stopAgent('SIGKILL');
    // Pods made through this node (pods/local-pods.ts keeps them under runDir): their apps, then their pause holders.
    try {
      for (const f of readdirSync(`${this.runDir}/pods`).filter((n) => n.endsWith('.json'))) {
        const rec = JSON.parse(readFileSync(`${this.runDir}/pods/${f}`, 'utf8')) as { apps?: { pid: number }[] };
        for (const a of rec.apps ?? []) { try { process.kill(-a.pid, 'SIGKILL'); } catch { /* gone */ } }
      }
    } catch { /* no pods */ }
    for (const sb of listSandboxes(this.runDir)) await stopSandbox(this.runDir, sb.name, { graceMs: 0 }).catch(() => undefined);
    // A holder started just before the agent was killed has no record yet: found by its log under runDir.
    for (const pid of unrecordedHolders(this.runDir)) { try { process.kill(pid, 'SIGKILL'); } catch { /* gone */ } }
    await killNetns(this.lab.sh, this.ns);
    // Named as the agent was started (agent.json); a node whose agent never started has made no cgroups.
    const agent = readNodeAgent(this.dir);
    if (!agent) return [];
    const cg = await removeLabNodeCgroups(agent);
    return cg.problem ? [cg.problem] : [];
  }
}

export interface CniCall {
  exitCode: number;
  stdout: string;
  stderr: string;
  json: unknown;
}
