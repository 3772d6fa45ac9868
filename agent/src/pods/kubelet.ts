/**
 * pods/kubelet: the embedded kubelet. It runs the Pods the API server binds
 * to this node, as pkg/kubelet's pod workers do, on a PodRuntime
 * (pod-runtime.ts; runtime.ts: a pause holder per Pod, processes joined to
 * it; runtime.fake.ts in kubelet.test.ts). Its Events go through the shared
 * recorder (reconcile/event-recorder.ts) it is given.
 *
 * One worker per Pod (by uid), serialised: every event (the Pod changed on
 * the watch, a container exited, a back-off or a retry is due, a probe
 * flipped) only records what happened and kicks the worker, whose sync()
 * looks at everything and acts:
 * 1. a Pod with a deletionTimestamp (or gone from the API) is terminated:
 *    SIGTERM to every container's process group, the grace period
 *    (deletionGracePeriodSeconds), SIGKILL (a run that outlives it by 5 s
 *    is left to the sandbox's stop), CNI DEL (the IP is freed), the pause
 *    holder stopped, the record removed, then the final delete with
 *    gracePeriodSeconds 0 (uid precondition);
 * 2. a spec nodenet cannot honour (pod-spec.ts) fails the Pod: a Warning
 *    Event naming the fields, phase Failed, reason UnsupportedPodSpec;
 *    otherwise the ConfigMaps and Secrets it refers to are watched
 *    (objects.ts);
 * 2b. the volumes, before the sandbox as the kubelet's volume manager sets
 *    them up: emptyDir directories, the files of configMap, secret,
 *    downwardAPI and projected volumes (volumes.ts) written by the
 *    AtomicWriter, the ServiceAccount tokens of projected volumes from the
 *    token manager (token-manager.ts). One that cannot be set up (a missing
 *    ConfigMap, a token refused) is a Warning FailedMount (`MountVolume.SetUp
 *    failed for volume "x" : ...`) and the Pod waits in ContainerCreating,
 *    tried again after 2 s or when a watched object changes. Once running,
 *    the volumes are set up again (in place: a container sees the change)
 *    when a watched object changes, the Pod's labels or annotations change,
 *    a token is due for its refresh, or every 60 s;
 * 3. the sandbox: pause, then CNI ADD through the agent's own CNI handler
 *    (the code the shim reaches), ipMasq off (the overlay masquerades),
 *    IPAM from the node's pod CIDR, then the record. A failed attempt is
 *    undone (CNI DEL, the pause stopped; an undo that fails is done again
 *    before the next attempt), reported (FailedCreatePodSandBox) and tried
 *    again after 5 s, not sooner whatever kicks the worker. A sandbox whose
 *    pause died (and with it every process of the Pod) is released and made
 *    again (SandboxChanged; a new IP), unless no container will run again;
 * 4. each container: its environment first (env.ts: Service variables,
 *    envFrom, valueFrom; a missing object or key leaves it waiting with
 *    CreateContainerConfigError and a Failed Event, tried again after 10 s
 *    or when a watched object changes; env never changes for a run), its
 *    mounts (its volumeMounts, the Pod's /etc/hosts written with its IP and
 *    hostAliases, its resolv.conf by dnsPolicy and dnsConfig from the
 *    node's, --cluster-dns and --cluster-domain (resolv-conf.ts; its
 *    MissingClusterDNS and DNSConfigForming Warnings once per Pod);
 *    mount-plan.ts), then started when
 *    it never ran; after an exit, started
 *    again as the restart policy says, after the crash-loop back-off
 *    (backoff.ts; waiting reason CrashLoopBackOff meanwhile); a start that
 *    fails is an exit (StartError, 128) under the same rules, and the worker
 *    wakes itself for the restart; an image other than nodenet/host waits
 *    with ErrImageNeverPull;
 * 4b. limits: each run starts in its container's cgroup with the values
 *    upstream writes (cgroup-config.ts: shares from requests, the CFS quota
 *    from limits.cpu, limits.memory; the Pod's cgroup above them); a run the
 *    kernel OOM-killed there is terminated with reason OOMKilled (137), as
 *    the CRI reports it. Where the node cannot enforce a limit (no usable
 *    cgroup controller, no permission: the runtime's limitsNotEnforced) the
 *    agent logs NN_ERR_LIMITS_NOT_ENFORCED once at start, and each Pod that
 *    sets such a limit gets a Warning Event LimitsNotEnforced naming the
 *    containers and the reason; it runs anyway;
 * 5. a Pod whose containers are all done for good (Succeeded, Failed)
 *    gives its IP back and stops its sandbox;
 * 6. the status (pod-status.ts), patched only when it differs from the
 *    API server's.
 * A sync that fails (the record, CNI, the runtime, the API) is logged and
 * tried again after 2 s; each step is idempotent, so the retry picks up
 * where it stopped. kubelet.test.ts fails every step in turn.
 * Probes (probe.ts, probe-exec.ts) run on timers per container run.
 *
 * Restart: start() adopts the records under <runDir>/kubelet/ whose pause
 * holder still runs (pid and start time), with their containers' runs
 * (a supervisor gone meanwhile is an exit, read from its exit file); a
 * record whose holder is gone is cleaned (CNI DEL), and the cgroups of
 * Pods with no live record are swept (runtime.sweep). Once the watch has
 * synced, an adopted Pod the API no longer has is torn down, and Pods bound
 * meanwhile start. stop() stops the timers and leaves every Pod running.
 */
import type { CniHandler } from '../cniserver/handler.js';
import { F } from '../../../lib/log/fields.js';
import type { Logger } from '../../../lib/log/log.js';
import type { Clock } from '../../../lib/reconcile/clock.js';
import type { EventRecorder, EventSink, EventType } from '../../../lib/reconcile/event-recorder.js';
import { afterRestart, restartAt, shouldRestart, type BackoffEntry, type BackoffOptions } from './backoff.js';
import { describeProblems, imageProblem, planPod, type ContainerPlan, type FieldValues, type PodPlan, type Problem, type VolumePlan } from './pod-spec.js';
import { expand, resolveEnv, type EnvResult } from './env.js';
import type { ObjectKind, PodObjects } from './objects.js';
import { quantityNanos, type NodeAllocatable } from './quantity.js';
import { podAmounts, resourceUnits } from '../../../controlplane/quota/usage.js';

import { TokenManager, type IssuedToken, type TokenRequestSpec } from './token-manager.js';
import { parseResolvConf, podDns, renderResolvConf } from './resolv-conf.js';
import { CLUSTER_DOMAIN, etcHosts, podObjectRefs, podTokenSpecs, volumePayload, type TokenSpec, type VolumeContext } from './volumes.js';
import { podPhase, podStatus, statusDiffers, type ContainerView, type PodView, type Terminated } from './pod-status.js';
import { firstProbeAt, initialProbeState, nextProbeAt, observe, probeActive, type ProbeKind, type ProbeState } from './probe.js';
import { runProbe, type ProbeOutcome } from './probe-exec.js';
import type { ExitStatus, MountRequest, PodRecord, PodRuntime, RunRecord, SandboxRef, VolumePlugin } from './pod-runtime.js';
import { obj } from '../../../lib/json/loose.js';
import { ErrorCode } from '../../../lib/errors/errors.js';
import { containerConfig, limitsSet, podConfig } from './cgroup-config.js';

/** An emptyDir's sizeLimit in bytes (null: none, or not a quantity). */
const sizeBytes = (limit: unknown): bigint | null => {
  const n = limit === null ? null : quantityNanos(limit);
  return n === null ? null : n / 1_000_000_000n;
};

type O = Record<string, unknown>;
const str = (v: unknown): string => (typeof v === 'string' ? v : '');

/** What the kubelet writes about its Pods to the API server (kubelet-api.ts over HTTPS; kubelet-api.fake.ts in tests). */
export interface PodApi {
  /** A merge patch of the Pod's status subresource. */
  patchPodStatus(namespace: string, name: string, status: O): Promise<void>;
  /** The final delete: gracePeriodSeconds 0, the uid as precondition; gone already is success. */
  deletePod(namespace: string, name: string, uid: string): Promise<void>;
  /** A TokenRequest for a Pod's ServiceAccount, bound to the Pod. */
  requestToken(req: TokenRequestSpec): Promise<IssuedToken>;
}

/** kubelet-api.ts's calls: the Pods' writes, and the Events' (the sink of the kubelet's and the agent's event recorders). */
export interface KubeletApi extends PodApi, EventSink {}

/** Runs one probe (probe-exec.ts's runProbe; a fake in tests). Never throws. */
export type Prober = typeof runProbe;

export interface KubeletOptions {
  readonly nodeName: string;
  readonly hostIP: string;
  readonly runtime: PodRuntime;
  readonly cni: CniHandler;
  /** The CNI network config of the node's pods (bridge, ipMasq false, host-local IPAM on the pod CIDR). */
  readonly cniConfig: O;
  readonly api: PodApi;
  /** Events about the Pods: a recorder with source kubelet / this node (pods/start.ts: an ApiEventRecorder over kubelet-api.ts). */
  readonly events: EventRecorder;
  readonly clock: Clock;
  readonly log: Logger;
  /** How often running containers are looked at (ms; default 250). */
  readonly pollMs?: number;
  readonly backoff?: BackoffOptions;
  /** How probes run (default probe-exec.ts's runProbe). */
  readonly probe?: Prober;
  /** The ConfigMaps, Secrets and Services the Pods read (object-watch.ts; the fake API in tests). */
  readonly objects: PodObjects;
  /**
   * The node's allocatable resources (the Node's status.allocatable): the limits the downward API reads for a
   * container without its own, and what the kubelet admits Pods against (`pods` too, when given).
   */
  readonly node: NodeAllocatable & Readonly<Record<string, string>>;
  /** Randomness for the token refresh jitter (default Math.random). */
  readonly random?: () => number;
  /**
   * The cluster DNS servers a ClusterFirst Pod resolves with (the kubelet's --cluster-dns, the kube-dns Service's
   * ClusterIP). Empty or absent: such Pods get the node's resolv.conf and a MissingClusterDNS Warning, as the kubelet's.
   */
  readonly clusterDNS?: readonly string[];
  /** The cluster's DNS domain (the kubelet's --cluster-domain; default cluster.local): ClusterFirst Pods' search paths. */
  readonly clusterDomain?: string;
}

interface Ctr {
  readonly plan: ContainerPlan;
  current: RunRecord | null;
  last: Terminated | null;
  previous: Terminated | null;
  restartCount: number;
  backoff: BackoffEntry | null;
  waiting: { reason: string; message?: string } | null;
  started: boolean;
  probes: Record<ProbeKind, ProbeState>;
  timers: unknown[];
  /** Stop probing this run: it is being killed. */
  killing: boolean;
  /** The environment of the current run (exec probes run with it); null: not known (adopted). */
  env: Record<string, string> | null;
  /** After a CreateContainerConfigError: no new attempt before this time (ms) unless an object changed. */
  configRetryAt: number;
}

interface PodState {
  readonly uid: string;
  namespace: string;
  name: string;
  pod: O | null;
  /** Gone from the API (a watch DELETE, or absent from the synced list). */
  deleted: boolean;
  plan: PodPlan | null;
  problems: readonly Problem[] | null;
  sandbox: SandboxRef | null;
  sandboxStart: string;
  podIP: string | null;
  startedAt: number | null;
  ctrs: Map<string, Ctr>;
  /** Containers are done for good and the sandbox is gone. */
  finished: boolean;
  lastPosted: string | null;
  lastPostedRv: string;
  /** No new sandbox before this time (ms): the last attempt failed. */
  sandboxRetryAt: number;
  /** A sandbox attempt failed and its undo may have too: CNI DEL and the sandbox's stop are owed before the next. */
  sandboxDirty: boolean;
  busy: boolean;
  again: boolean;
  wake: unknown;
  /** When `wake` fires. */
  wakeMs: number;
  forgotten: boolean;
  /** The objects it refers to are registered with the object watches. */
  registered: boolean;
  /** Its volumes were set up once (containers may start). */
  volumesReady: boolean;
  /** Set them up again at the next sync: an object, a label or annotation changed. */
  volumesDirty: boolean;
  /** When they are set up again anyway (ms): the periodic resync or a token's refresh. */
  nextVolumeSync: number;
  /** The last FailedMount message per volume (one Event per new message). */
  mountErrors: Map<string, string>;
  /** A watched object changed: a container waiting on its config tries again at once. */
  retryConfig: boolean;
  /** The labels and annotations last seen (the downward API's). */
  metaSeen: string;
  /** Refused at admission (the kubelet's OutOfcpu, OutOfmemory, OutOfpods ...): Failed with this, never run. */
  rejected: { readonly reason: string; readonly message: string } | null;
  /** Admitted: its requests count against the node's allocatable. */
  admitted: boolean;
  /** Its LimitsNotEnforced Event was recorded (once per Pod and kubelet). */
  limitsWarned: boolean;
  /** The DNS Warnings (MissingClusterDNS, DNSConfigForming) recorded, by reason and message: each once per Pod, not per container start. */
  dnsWarned: Set<string>;
}

export interface LogTarget {
  readonly file: string;
  /** The run is still going: a follow waits for more. */
  readonly live: () => boolean;
}

const CNI_IFNAME = 'eth0';
/** A failed sync is retried after this long. */
const SYNC_RETRY_MS = 2000;
/** A sandbox that could not be made is tried again after this long. */
const SANDBOX_RETRY_MS = 5000;
/** How long a run may outlive its SIGKILL before the sandbox's stop is left to end it. */
const KILL_WAIT_MS = 5000;
/** How a run given up on is recorded: SIGKILLed. */
const KILLED: ExitStatus = { exitCode: 137, signal: 9 };
/** Volumes that could not be set up are tried again after this long. */
const VOLUME_RETRY_MS = 2000;
/** Running Pods' volumes are set up again at least this often (the kubelet's pod resync). */
const VOLUME_RESYNC_MS = 60_000;
/** A container whose environment could not be made (CreateContainerConfigError) is tried again after this long. */
const CONFIG_RETRY_MS = 10_000;

const PLUGIN: Readonly<Record<VolumePlan['source']['kind'], VolumePlugin>> = {
  emptyDir: 'kubernetes.io~empty-dir', configMap: 'kubernetes.io~configmap', secret: 'kubernetes.io~secret', downwardAPI: 'kubernetes.io~downward-api', projected: 'kubernetes.io~projected',
};

export class Kubelet {
  private readonly pods = new Map<string, PodState>();
  private stopped = false;
  private poller: unknown = null;
  readonly log: Logger;
  private readonly tokens: TokenManager;

  constructor(private readonly o: KubeletOptions) {
    this.log = o.log.child({ [F.subsys]: 'kubelet' });
    this.tokens = new TokenManager({
      fetch: (req) => o.api.requestToken(req),
      now: () => o.clock.now(),
      ...(o.random ? { random: o.random } : {}),
      onRefreshError: (key, e) => this.log.warn({ token: key, [F.err]: e instanceof Error ? e.message : String(e) }, 'could not refresh a ServiceAccount token; the current one is still valid'),
    });
    o.objects.onChange((kind, namespace, name) => this.onObjectChanged(kind, namespace, name));
  }

  /** A watched ConfigMap or Secret changed: the Pods that refer to it set their volumes up again, and waiting containers try again. */
  private onObjectChanged(kind: ObjectKind | 'service', namespace: string, name: string): void {
    if (kind === 'service') return;
    for (const p of this.pods.values()) {
      if (p.namespace !== namespace || !p.plan) continue;
      const refs = podObjectRefs(p.plan);
      if (!(kind === 'configMap' ? refs.configMaps : refs.secrets).has(name)) continue;
      p.volumesDirty = true;
      p.retryConfig = true;
      this.kick(p);
    }
  }

  /** Adopts what the records say still runs, and starts watching the containers. */
  async start(): Promise<void> {
    for (const r of this.o.runtime.records()) {
      const sb = this.o.runtime.adoptSandbox(r);
      if (!sb) {
        this.log.info({ [F.pod]: `${r.namespace}/${r.name}`, uid: r.uid }, 'pod sandbox gone while the agent was down; cleaning up');
        await this.cniDel(r.uid, '').catch((e: unknown) => this.log.warn({ [F.err]: e }, 'CNI DEL of a dead sandbox failed'));
        await this.o.runtime.stopSandbox(r.uid).catch(() => undefined);
        this.o.runtime.remove(r.uid);
        continue;
      }
      const p = this.newState(r.uid, r.namespace, r.name);
      p.sandbox = sb;
      p.sandboxStart = r.sandbox?.startTime ?? '';
      p.podIP = r.podIP;
      p.startedAt = r.startedAt;
      // Its volumes are on disk from before: set up again (the token refreshed) at the first sync, without holding the containers.
      p.volumesReady = true;
      p.adopted = r;
      this.pods.set(r.uid, p);
      this.log.info({ [F.pod]: `${r.namespace}/${r.name}`, uid: r.uid, containers: r.containers.map((c) => `${c.name}${c.current ? `:${c.current.pid}` : ''}`) }, 'adopted pod');
    }
    // What a crashed run left outside the records (its Pods' cgroups): only the adopted Pods keep theirs.
    await this.o.runtime.sweep(new Set(this.pods.keys()));
    const missing = this.o.runtime.limitsNotEnforced();
    const why = Object.entries(missing).map(([c, m]) => `${c}: ${m}`);
    if (why.length) this.log.warn({ [F.code]: ErrorCode.LimitsNotEnforced, [F.reason]: why.join('; ') }, `container limits are not enforced on this node (${Object.keys(missing).join(', ')}); Pods run without them, and each Pod with such a limit gets a LimitsNotEnforced Event`);
    this.arm();
  }

  /** Stops timers and probes. Every Pod keeps running. */
  stop(): void {
    this.stopped = true;
    if (this.poller !== null) this.o.clock.clearTimeout(this.poller);
    this.poller = null;
    for (const p of this.pods.values()) {
      if (p.wake !== null) this.o.clock.clearTimeout(p.wake);
      p.wake = null;
      for (const c of p.ctrs.values()) this.clearProbes(c);
    }
  }

  // --- the watch's handlers --------------------------------------------------------------------------------

  onPod(pod: O): void {
    const m = obj(pod['metadata']) ?? {};
    const uid = str(m['uid']);
    if (!uid) return;
    let p = this.pods.get(uid);
    if (!p) {
      p = this.newState(uid, str(m['namespace']), str(m['name']));
      this.pods.set(uid, p);
    }
    p.pod = pod;
    const meta = JSON.stringify([m['labels'] ?? null, m['annotations'] ?? null]);
    if (meta !== p.metaSeen) {
      p.metaSeen = meta;
      p.volumesDirty = true;
    }
    this.kick(p);
  }

  onPodDeleted(pod: O): void {
    const p = this.pods.get(str(obj(pod['metadata'])?.['uid']));
    if (!p) return;
    p.deleted = true;
    this.kick(p);
  }

  /** The watch delivered its first list: adopted Pods it did not list are gone. */
  onSynced(): void {
    for (const p of this.pods.values()) {
      if (!p.pod) p.deleted = true;
      this.kick(p);
    }
  }

  /** The file `kubectl logs` reads for a container (the latest run, or the one before it). */
  logTarget(namespace: string, name: string, container: string, previous: boolean): { target: LogTarget } | { error: 'pod' | 'container' | 'waiting' | 'previous'; message: string } {
    const p = [...this.pods.values()].find((x) => x.namespace === namespace && x.name === name && !x.forgotten);
    if (!p) return { error: 'pod', message: `pods "${name}" not found on node ${this.o.nodeName}` };
    const c = p.ctrs.get(container);
    if (!c) {
      const names = p.plan?.containers.map((x) => x.name) ?? [];
      return { error: 'container', message: `container ${container} is not valid for pod ${name}${names.length ? `, choose one of: [${names.join(' ')}]` : ''}` };
    }
    const ran = c.current !== null || c.last !== null;
    if (!ran) return { error: 'waiting', message: `container "${container}" in pod "${name}" is waiting to start: ${c.waiting?.reason ?? 'ContainerCreating'}` };
    const latest = c.current?.run ?? c.restartCount;
    const run = previous ? latest - 1 : latest;
    const file = run >= 0 ? this.o.runtime.logPath(p.uid, container, run) : '';
    if (previous && (run < 0 || !this.o.runtime.exists(file))) return { error: 'previous', message: `previous terminated container "${container}" in pod "${name}" not found` };
    const cur = c.current;
    return { target: { file, live: () => !previous && cur !== null && c.current === cur && !p.forgotten } };
  }

  /** For tests and status: the uids of the Pods this kubelet handles. */
  podUids(): string[] {
    return [...this.pods.values()].filter((p) => !p.forgotten).map((p) => p.uid);
  }

  // --- the worker ------------------------------------------------------------------------------------------

  private newState(uid: string, namespace: string, name: string): PodState & { adopted?: PodRecord } {
    return { uid, namespace, name, pod: null, deleted: false, plan: null, problems: null, sandbox: null, sandboxStart: '', podIP: null, startedAt: null, ctrs: new Map(), finished: false, lastPosted: null, lastPostedRv: '', sandboxRetryAt: 0, sandboxDirty: false, busy: false, again: false, wake: null, wakeMs: 0, forgotten: false, registered: false, volumesReady: false, volumesDirty: true, nextVolumeSync: 0, mountErrors: new Map(), retryConfig: false, metaSeen: '', rejected: null, admitted: false, limitsWarned: false, dnsWarned: new Set() };
  }

  private kick(p: PodState): void {
    if (this.stopped || p.forgotten) return;
    if (p.busy) {
      p.again = true;
      return;
    }
    p.busy = true;
    void (async () => {
      do {
        p.again = false;
        try {
          await this.sync(p);
        } catch (e) {
          // Retried in 2 s, not at once for a kick made during the failed sync (a container's exit it recorded).
          this.log.warn({ [F.pod]: `${p.namespace}/${p.name}`, [F.err]: e instanceof Error ? e.message : String(e) }, 'pod sync failed; retrying');
          this.wakeAt(p, this.o.clock.now() + SYNC_RETRY_MS);
          break;
        }
      } while (p.again && !this.stopped && !p.forgotten);
      p.busy = false;
    })();
  }

  /** Syncs `p` at `at`, or at the wake already set if that is earlier (every sync arms again what it still waits for). */
  private wakeAt(p: PodState, at: number): void {
    if (this.stopped) return;
    if (p.wake !== null) {
      if (p.wakeMs <= at) return;
      this.o.clock.clearTimeout(p.wake);
    }
    p.wakeMs = at;
    p.wake = this.o.clock.setTimeout(() => {
      p.wake = null;
      this.kick(p);
    }, Math.max(0, at - this.o.clock.now()));
  }

  private async sync(p: PodState & { adopted?: PodRecord }): Promise<void> {
    if (!p.pod && !p.deleted) return; // adopted, waiting for the watch
    const key = `${p.namespace}/${p.name}`;
    const meta = obj(p.pod?.['metadata']) ?? {};
    if (p.deleted || meta['deletionTimestamp']) {
      const dgp = meta['deletionGracePeriodSeconds'];
      const grace = p.deleted ? Math.min(2, p.plan?.terminationGracePeriodSeconds ?? 2) : typeof dgp === 'number' ? dgp : (p.plan?.terminationGracePeriodSeconds ?? 30);
      await this.terminate(p, grace);
      if (!p.deleted) await this.o.api.deletePod(p.namespace, p.name, p.uid);
      this.o.objects.unregister(p.uid);
      this.tokens.forget(p.uid);
      p.forgotten = true;
      this.pods.delete(p.uid);
      this.log.info({ [F.pod]: key }, 'pod terminated');
      return;
    }
    const pod = p.pod!;
    if (!p.plan && !p.problems) {
      const r = planPod(pod);
      if (r.ok) {
        p.plan = r.plan;
        for (const c of r.plan.containers) p.ctrs.set(c.name, this.newCtr(c));
        this.o.objects.register(p.uid, p.namespace, podObjectRefs(r.plan));
        p.registered = true;
        if (p.adopted) this.restoreContainers(p, p.adopted);
        delete p.adopted;
        this.warnLimits(p);
      } else {
        p.problems = r.problems;
        this.event(p, 'Warning', 'UnsupportedPodSpec', describeProblems(r.problems));
      }
    }
    const phaseNow = str(obj(pod['status'])?.['phase']);
    if (!p.problems && !p.admitted && !p.rejected) {
      // The kubelet's admission (lifecycle's resource predicate): an adopted Pod, or one already running, was
      // admitted before; a new one must fit what the Pods admitted before it request.
      if (p.sandbox || phaseNow === 'Running' || phaseNow === 'Succeeded' || phaseNow === 'Failed') p.admitted = true;
      else {
        p.rejected = this.admissionRefusal(p);
        if (p.rejected) {
          this.event(p, 'Warning', p.rejected.reason, p.rejected.message);
          this.log.warn({ [F.pod]: key, [F.reason]: p.rejected.reason }, p.rejected.message);
        } else p.admitted = true;
      }
    }
    if (p.problems || p.rejected) {
      await this.postStatus(p);
      return;
    }
    const plan = p.plan!;
    if (p.sandbox && !this.o.runtime.sandboxRunning(p.sandbox, p.sandboxStart)) {
      // The pause died under the Pod (as the pod's PID 1 it took every process along): the runs are over, and
      // what is left (the IP, the bind mount) goes before a new sandbox is made, as the kubelet's SandboxChanged.
      this.event(p, 'Normal', 'SandboxChanged', 'Pod sandbox changed, it will be killed and re-created.');
      this.log.warn({ [F.pod]: key, pause: p.sandbox.pid }, 'pod sandbox died; making a new one');
      for (const c of p.ctrs.values()) {
        if (!c.current) continue;
        const still = this.o.runtime.running(c.current);
        if (still) this.o.runtime.signal(c.current, 'SIGKILL');
        this.exited(p, c, c.current, still ? KILLED : undefined);
      }
      p.sandbox = null;
      p.sandboxStart = '';
      p.podIP = null;
      p.sandboxDirty = true;
    }
    // The volumes: before the sandbox, and again when something they project changed or is due.
    if (!p.finished && phaseNow !== 'Succeeded' && phaseNow !== 'Failed' && (!p.volumesReady || p.volumesDirty || this.o.clock.now() >= p.nextVolumeSync)) {
      const ok = await this.setUpVolumes(p);
      if (!ok && !p.volumesReady) {
        this.wakeAt(p, this.o.clock.now() + VOLUME_RETRY_MS);
        await this.postStatus(p);
        return;
      }
    }
    // A Pod whose containers are all done for good needs no sandbox (one that died, or never came up).
    const wantsRun = [...p.ctrs.values()].some((c) => !c.last || shouldRestart(plan.restartPolicy, c.last.exitCode));
    if (!p.sandbox && !p.finished && !wantsRun) {
      await this.releaseSandbox(p);
      p.finished = true;
    }
    if (!p.sandbox && !p.finished && phaseNow !== 'Succeeded' && phaseNow !== 'Failed') {
      // Not again before the retry time, whatever kicks the worker meanwhile (its own status coming back, say).
      if (this.o.clock.now() < p.sandboxRetryAt) {
        this.wakeAt(p, p.sandboxRetryAt);
        await this.postStatus(p);
        return;
      }
      try {
        await this.createSandbox(p);
      } catch (e) {
        const msg = e instanceof Error ? e.message : String(e);
        this.event(p, 'Warning', 'FailedCreatePodSandBox', `Failed to create pod sandbox: ${msg}`);
        this.log.warn({ [F.pod]: key, [F.err]: msg }, 'pod sandbox failed');
        p.sandboxRetryAt = this.o.clock.now() + SANDBOX_RETRY_MS;
        this.wakeAt(p, p.sandboxRetryAt);
        await this.postStatus(p);
        return;
      }
    }
    const now = this.o.clock.now();
    let nextWake: number | null = null;
    /** After a start that failed, the worker comes back when the restart is due (the first at once). */
    const retryStart = (c: Ctr) => {
      if (c.current || !c.last || !shouldRestart(plan.restartPolicy, c.last.exitCode)) return;
      const at = restartAt(c.backoff, c.last.startedAt, c.last.finishedAt, this.o.backoff);
      nextWake = nextWake === null ? at : Math.min(nextWake, at);
    };
    if (p.sandbox) {
      for (const c of p.ctrs.values()) {
        const img = imageProblem(c.plan.image);
        if (img) {
          if (c.waiting?.reason !== img.reason) this.event(p, 'Warning', img.reason, img.message, c.plan.name);
          c.waiting = img;
          continue;
        }
        if (c.current) continue;
        if (c.waiting?.reason === 'CreateContainerConfigError' && now < c.configRetryAt && !p.retryConfig) {
          nextWake = nextWake === null ? c.configRetryAt : Math.min(nextWake, c.configRetryAt);
          continue;
        }
        if (!c.last) {
          const prep = await this.prepareRun(p, c, plan);
          if (!prep) {
            nextWake = nextWake === null ? c.configRetryAt : Math.min(nextWake, c.configRetryAt);
            continue;
          }
          await this.startRun(p, c, prep);
          retryStart(c);
          continue;
        }
        if (!shouldRestart(plan.restartPolicy, c.last.exitCode)) {
          c.waiting = null;
          continue;
        }
        const at = restartAt(c.backoff, c.last.startedAt, c.last.finishedAt, this.o.backoff);
        if (at <= now) {
          const prep = await this.prepareRun(p, c, plan);
          if (!prep) {
            nextWake = nextWake === null ? c.configRetryAt : Math.min(nextWake, c.configRetryAt);
            continue;
          }
          c.backoff = afterRestart(c.backoff, c.last.finishedAt - c.last.startedAt, now, this.o.backoff);
          c.restartCount++;
          await this.startRun(p, c, prep);
          retryStart(c);
        } else {
          const secs = Math.round((c.backoff?.delayMs ?? 0) / 1000);
          const message = `back-off ${secs}s restarting failed container=${c.plan.name} pod=${p.name}_${p.namespace}(${p.uid})`;
          if (c.waiting?.reason !== 'CrashLoopBackOff') this.event(p, 'Warning', 'BackOff', 'Back-off restarting failed container', c.plan.name);
          c.waiting = { reason: 'CrashLoopBackOff', message };
          nextWake = nextWake === null ? at : Math.min(nextWake, at);
        }
      }
    }
    p.retryConfig = false;
    if (nextWake !== null) this.wakeAt(p, nextWake);
    // Every container done for good: the Pod is finished, its IP goes back and its sandbox stops.
    const phase = podPhase(this.view(p));
    if ((phase === 'Succeeded' || phase === 'Failed') && p.sandbox) {
      await this.releaseSandbox(p);
      p.finished = true;
    }
    this.save(p);
    await this.postStatus(p);
  }

  private newCtr(plan: ContainerPlan): Ctr {
    return { plan, current: null, last: null, previous: null, restartCount: 0, backoff: null, waiting: null, started: false, probes: { readiness: initialProbeState('readiness'), liveness: initialProbeState('liveness'), startup: initialProbeState('startup') }, timers: [], killing: false, env: null, configRetryAt: 0 };
  }

  /** An adopted Pod's containers from its record: runs still going keep their probes; the others exited meanwhile. */
  private restoreContainers(p: PodState, r: PodRecord): void {
    for (const rc of r.containers) {
      const c = p.ctrs.get(rc.name);
      if (!c) continue;
      c.last = rc.last;
      c.previous = rc.previous;
      c.restartCount = rc.restartCount;
      c.backoff = rc.backoff;
      if (rc.current) {
        c.current = rc.current;
        // Probes start over as after a kubelet restart: readiness must pass again, unless there is none.
        c.started = !c.plan.startup;
        this.armProbes(p, c, rc.current, true);
        if (!this.o.runtime.running(rc.current)) this.exited(p, c, rc.current);
      }
    }
  }

  /**
   * A new sandbox with its IP, recorded. A failed attempt is undone (CNI DEL, the sandbox stopped) and, if the undo
   * fails too, undone again before the next attempt (`sandboxDirty`): a sandbox or an attachment left behind
   * would refuse the next one.
   */
  private async createSandbox(p: PodState): Promise<void> {
    if (p.sandboxDirty) await this.releaseSandbox(p);
    const hostname = p.plan?.hostname ?? p.name;
    p.sandboxDirty = true;
    const { ref, startTime } = await this.o.runtime.startSandbox(p.uid, hostname);
    try {
      // emptyDir medium Memory: a tmpfs in the sandbox's mount namespace (a new sandbox starts it empty).
      for (const v of p.plan?.volumes ?? []) {
        if (v.source.kind === 'emptyDir' && v.source.medium === 'Memory') await this.o.runtime.mountMemory(ref, p.uid, v.name, sizeBytes(v.source.sizeLimit));
      }
      const out = await this.o.cni.add({ containerId: p.uid, netns: ref.netnsPath, ifName: CNI_IFNAME, args: '', path: '', config: new TextEncoder().encode(JSON.stringify(this.o.cniConfig)) });
      const result = JSON.parse(new TextDecoder().decode(out)) as { ips?: { address?: string }[] };
      const ip = result.ips?.[0]?.address?.split('/')[0];
      if (!ip) throw new Error('CNI ADD gave no IP');
      p.sandbox = ref;
      p.sandboxStart = startTime;
      p.podIP = ip;
      p.startedAt ??= this.o.clock.now();
      this.save(p);
      p.sandboxDirty = false;
      this.log.info({ [F.pod]: `${p.namespace}/${p.name}`, [F.ip]: ip, pause: ref.pid }, 'pod sandbox ready');
    } catch (e) {
      p.sandbox = null;
      p.sandboxStart = '';
      p.podIP = null;
      try {
        await this.cniDel(p.uid, ref.netnsPath);
        await this.o.runtime.stopSandbox(p.uid);
        p.sandboxDirty = false;
      } catch (undo) {
        this.log.warn({ [F.pod]: `${p.namespace}/${p.name}`, [F.err]: undo instanceof Error ? undo.message : String(undo) }, 'undoing a failed sandbox failed; done again before the next');
      }
      throw e;
    }
  }

  /** The IP back (CNI DEL, idempotent) and the sandbox stopped (idempotent); what is owed of a failed attempt too. */
  private async releaseSandbox(p: PodState): Promise<void> {
    if (p.sandbox || p.podIP || p.sandboxDirty) await this.cniDel(p.uid, p.sandbox?.netnsPath ?? '');
    await this.o.runtime.stopSandbox(p.uid);
    p.sandbox = null;
    p.sandboxDirty = false;
  }

  private cniDel(uid: string, netns: string): Promise<void> {
    return this.o.cni.del({ containerId: uid, netns, ifName: CNI_IFNAME, args: '', path: '', config: new TextEncoder().encode(JSON.stringify(this.o.cniConfig)) });
  }

  private fieldValues(p: PodState): FieldValues {
    return {
      'metadata.name': p.name,
      'metadata.namespace': p.namespace,
      'metadata.uid': p.uid,
      'spec.nodeName': this.o.nodeName,
      'spec.serviceAccountName': p.plan?.serviceAccountName ?? 'default',
      'status.podIP': p.podIP ?? '',
      'status.podIPs': p.podIP ?? '',
      'status.hostIP': this.o.hostIP,
      'status.hostIPs': this.o.hostIP,
    };
  }

  /** The ConfigMaps or Secrets `names` of the Pod's namespace, each its object, null (none) or the failed read. */
  private async fetchObjects(p: PodState, wanted: Iterable<[ObjectKind, string]>): Promise<Map<string, Record<string, unknown> | null | Error>> {
    const out = new Map<string, Record<string, unknown> | null | Error>();
    for (const [kind, name] of wanted) {
      const key = `${kind}/${name}`;
      if (out.has(key)) continue;
      try {
        out.set(key, await this.o.objects.get(kind, p.namespace, name));
      } catch (e) {
        out.set(key, e instanceof Error ? e : new Error(String(e)));
      }
    }
    return out;
  }

  private static lookup(fetched: Map<string, Record<string, unknown> | null | Error>, kind: ObjectKind): (name: string) => Record<string, unknown> | null {
    return (name) => {
      const v = fetched.get(`${kind}/${name}`);
      if (v instanceof Error) throw v;
      return v ?? null;
    };
  }

  /**
   * Sets the Pod's volumes up (again): emptyDir directories, the other volumes' files through the AtomicWriter.
   * Returns whether every one is set up; one that is not is a FailedMount Event (once per message) and keeps
   * what it had. Arms the next resync (the periodic one, or a token's refresh).
   */
  private async setUpVolumes(p: PodState): Promise<boolean> {
    const plan = p.plan!;
    const pod = p.pod!;
    p.volumesDirty = false;
    const wanted: [ObjectKind, string][] = [];
    for (const v of plan.volumes) {
      const s = v.source;
      if (s.kind === 'configMap' || s.kind === 'secret') wanted.push([s.kind, s.name]);
      if (s.kind === 'projected') for (const src of s.sources) if (src.kind === 'configMap' || src.kind === 'secret') wanted.push([src.kind, src.name]);
    }
    const fetched = await this.fetchObjects(p, wanted);
    const tokens = new Map<string, string | Error>();
    const tokenKey = (t: TokenSpec) => `${t.audience}/${t.expirationSeconds}`;
    for (const t of podTokenSpecs(plan)) {
      try {
        tokens.set(tokenKey(t), await this.tokens.get({ serviceAccount: plan.serviceAccountName, namespace: p.namespace, audiences: t.audience ? [t.audience] : [], expirationSeconds: t.expirationSeconds, pod: { name: p.name, uid: p.uid } }));
      } catch (e) {
        tokens.set(tokenKey(t), e instanceof Error ? e : new Error(String(e)));
      }
    }
    const ctx: VolumeContext = {
      pod, plan, node: this.o.node,
      configMap: Kubelet.lookup(fetched, 'configMap'),
      secret: Kubelet.lookup(fetched, 'secret'),
      token: (t) => {
        const v = tokens.get(tokenKey(t));
        if (v === undefined || v instanceof Error) throw v ?? new Error('no token');
        return v;
      },
    };
    let ok = true;
    for (const v of plan.volumes) {
      let msg: string | null = null;
      try {
        if (v.source.kind === 'emptyDir') this.o.runtime.makeEmptyDir(p.uid, v.name);
        else {
          const r = volumePayload(v, ctx);
          if (r.ok) this.o.runtime.writeVolume(p.uid, PLUGIN[v.source.kind], v.name, r.payload);
          else msg = r.message;
        }
      } catch (e) {
        msg = e instanceof Error ? e.message : String(e);
      }
      if (msg === null) {
        p.mountErrors.delete(v.name);
        continue;
      }
      ok = false;
      if (p.mountErrors.get(v.name) !== msg) this.event(p, 'Warning', 'FailedMount', `MountVolume.SetUp failed for volume "${v.name}" : ${msg}`);
      p.mountErrors.set(v.name, msg);
      this.log.warn({ [F.pod]: `${p.namespace}/${p.name}`, volume: v.name, [F.err]: msg }, 'volume not set up');
    }
    const now = this.o.clock.now();
    const projects = plan.volumes.some((v) => v.source.kind !== 'emptyDir');
    // A token due (or a refresh that failed) is asked again, but not in a loop: at least a second apart.
    p.nextVolumeSync = projects ? Math.max(now + 1000, Math.min(now + VOLUME_RESYNC_MS, this.tokens.refreshAt(p.uid) ?? Infinity)) : Infinity;
    if (projects) this.wakeAt(p, p.nextVolumeSync);
    if (ok) p.volumesReady = true;
    return ok;
  }

  /** A container's environment, from what the watches have (env.ts). */
  private async containerEnv(p: PodState, c: Ctr): Promise<EnvResult> {
    const wanted: [ObjectKind, string][] = c.plan.envFrom.map((e) => [e.kind, e.name]);
    for (const e of c.plan.env) {
      if ('configMapKeyRef' in e) wanted.push(['configMap', e.configMapKeyRef.name]);
      if ('secretKeyRef' in e) wanted.push(['secret', e.secretKeyRef.name]);
    }
    const fetched = await this.fetchObjects(p, wanted);
    let services: Record<string, unknown>[];
    try {
      services = await this.o.objects.services();
    } catch (e) {
      return { ok: false, message: e instanceof Error ? e.message : String(e), events: [] };
    }
    return resolveEnv(c.plan, {
      pod: p.pod!, plan: p.plan!, fields: this.fieldValues(p), hostname: this.hostname(p), services, node: this.o.node,
      configMap: Kubelet.lookup(fetched, 'configMap'), secret: Kubelet.lookup(fetched, 'secret'),
    });
  }

  private hostname(p: PodState): string {
    return (p.plan?.hostname ?? p.name).slice(0, 63).replace(/[-.]+$/, '');
  }

  /**
   * What a run needs before it starts: its environment and its mounts (volumeMounts with subPathExpr expanded,
   * the Pod's /etc/hosts and resolv.conf). null when it cannot have them: the container waits with
   * CreateContainerConfigError (a Failed Event each attempt, as the kubelet's), tried again later.
   */
  private async prepareRun(p: PodState, c: Ctr, plan: PodPlan): Promise<{ env: Record<string, string>; argv: string[]; mounts: MountRequest[] } | null> {
    const r = await this.containerEnv(p, c);
    for (const ev of r.events) this.event(p, 'Warning', ev.reason, ev.message);
    let message = r.ok ? '' : r.message;
    let mounts: MountRequest[] = [];
    if (r.ok) {
      try {
        mounts = this.mountRequests(p, c, plan, r.env);
      } catch (e) {
        message = e instanceof Error ? e.message : String(e);
      }
    }
    if (!r.ok || message) {
      this.event(p, 'Warning', 'Failed', `Error: ${message}`, c.plan.name);
      c.waiting = { reason: 'CreateContainerConfigError', message };
      c.configRetryAt = this.o.clock.now() + CONFIG_RETRY_MS;
      return null;
    }
    return { env: r.env, argv: r.argv, mounts };
  }

  /** The mounts of a run: its volumeMounts, then /etc/hosts and /etc/resolv.conf unless a volume is mounted there. @throws Error on a subPathExpr that expands to a bad path */
  private mountRequests(p: PodState, c: Ctr, plan: PodPlan, env: Record<string, string>): MountRequest[] {
    const out: MountRequest[] = [];
    for (const m of c.plan.volumeMounts) {
      const v = plan.volumes.find((x) => x.name === m.name)!;
      let subPath = m.subPath;
      if (m.subPathExpr) {
        subPath = expand(m.subPathExpr, new Map(Object.entries(env)));
        if (subPath.startsWith('/') || subPath.split('/').includes('..')) throw new Error(`subPathExpr ${JSON.stringify(m.subPathExpr)} expands to ${JSON.stringify(subPath)}, which must be a relative path without '..'`);
      }
      out.push({ volumeDir: this.o.runtime.volumeDir(p.uid, PLUGIN[v.source.kind], v.name), subPath, target: m.mountPath, readOnly: m.readOnly });
    }
    const taken = new Set(out.map((m) => m.target));
    if (!taken.has('/etc/hosts')) {
      const hosts = this.o.runtime.writePodFile(p.uid, 'etc-hosts', etcHosts({ podIPs: p.podIP ? [p.podIP] : [], hostname: this.hostname(p), subdomain: plan.subdomain, namespace: p.namespace, hostAliases: plan.hostAliases, clusterDomain: this.o.clusterDomain ?? CLUSTER_DOMAIN }));
      out.push({ volumeDir: hosts, subPath: '', target: '/etc/hosts', readOnly: false });
    }
    if (!taken.has('/etc/resolv.conf')) {
      const resolv = this.o.runtime.writePodFile(p.uid, 'resolv.conf', this.resolvConf(p, plan));
      out.push({ volumeDir: resolv, subPath: '', target: '/etc/resolv.conf', readOnly: false });
    }
    return out;
  }

  /**
   * The Pod's resolv.conf (resolv-conf.ts) from the node's, read at each container start as the kubelet reads it at
   * each sandbox's. hostNetwork is refused (pod-spec.ts), so ClusterFirst is the cluster's here.
   */
  private resolvConf(p: PodState, plan: PodPlan): string {
    const r = podDns({
      policy: plan.dns.policy,
      config: plan.dns.config,
      hostNetwork: false,
      clusterDNS: this.o.clusterDNS ?? [],
      clusterDomain: this.o.clusterDomain ?? CLUSTER_DOMAIN,
      pod: { namespace: p.namespace, name: p.name, uid: p.uid },
      node: parseResolvConf(this.o.runtime.nodeResolvConf()),
    });
    for (const ev of r.events) {
      const key = `${ev.reason} ${ev.message}`;
      if (p.dnsWarned.has(key)) continue;
      p.dnsWarned.add(key);
      this.event(p, 'Warning', ev.reason, ev.message);
    }
    return renderResolvConf(r.conf);
  }

  /** A Warning Event, once, on a Pod that sets a limit the node cannot enforce (its containers and the reasons). */
  private warnLimits(p: PodState): void {
    if (p.limitsWarned || !p.plan) return;
    const missing = this.o.runtime.limitsNotEnforced();
    const parts: string[] = [];
    for (const [ctl, reason] of Object.entries(missing)) {
      const names = p.plan.containers.filter((c) => (limitsSet(c.resources) as string[]).includes(ctl)).map((c) => c.name);
      if (names.length) parts.push(`limits.${ctl} of container${names.length > 1 ? 's' : ''} ${names.join(', ')} (${reason})`);
    }
    if (!parts.length) return;
    p.limitsWarned = true;
    this.event(p, 'Warning', 'LimitsNotEnforced', `Not enforced on node ${this.o.nodeName}, the containers run without them: ${parts.join('; ')}`);
  }

  private async startRun(p: PodState, c: Ctr, prep: { env: Record<string, string>; argv: string[]; mounts: MountRequest[] }): Promise<void> {
    const now = this.o.clock.now();
    c.waiting = null;
    c.killing = false;
    const plan = p.plan!;
    const resources = { pod: podConfig(plan.containers.map((x) => x.resources)), container: containerConfig(c.plan.resources) };
    try {
      const run = await this.o.runtime.startContainer(p.sandbox!, { uid: p.uid, container: c.plan.name, run: c.restartCount, argv: prep.argv, env: prep.env, cwd: c.plan.workingDir, mounts: prep.mounts, nowMs: now, resources });
      c.current = run;
      c.env = prep.env;
      c.started = !c.plan.startup;
      c.probes = { readiness: initialProbeState('readiness'), liveness: initialProbeState('liveness'), startup: initialProbeState('startup') };
      this.armProbes(p, c, run, false);
      this.event(p, 'Normal', 'Started', `Started container ${c.plan.name}`, c.plan.name);
      this.log.info({ [F.pod]: `${p.namespace}/${p.name}`, container: c.plan.name, run: run.run, pid: run.pid }, 'container started');
    } catch (e) {
      const msg = e instanceof Error ? e.message : String(e);
      this.event(p, 'Warning', 'Failed', `Error: ${msg}`, c.plan.name);
      c.previous = c.last;
      c.last = { exitCode: 128, reason: 'StartError', message: msg, startedAt: now, finishedAt: now };
    }
  }

  /**
   * A run ended: its termination is recorded, probes stop, the worker decides what next. `forced`: the end of a
   * run given up on (it outlived SIGKILL; the sandbox's stop ends it). Never throws (it runs on the poller's
   * timer): a record that cannot be written is written by the sync it kicks.
   */
  private exited(p: PodState, c: Ctr, run: RunRecord, forced?: ExitStatus): void {
    if (c.current !== run) return;
    const ex = forced ?? this.o.runtime.exitOf(p.uid, c.plan.name, run);
    const now = this.o.clock.now();
    c.previous = c.last;
    // OOMKilled as the CRI reports it (containerd: an OOM event in the container's cgroup during the run), whatever the exit code.
    const reason = ex.oomKilled ? 'OOMKilled' : ex.exitCode === 0 ? 'Completed' : 'Error';
    c.last = { exitCode: ex.exitCode, ...(ex.signal ? { signal: ex.signal } : {}), reason, startedAt: run.startedAt, finishedAt: now };
    c.current = null;
    c.started = false;
    c.killing = false;
    this.clearProbes(c);
    this.log.info({ [F.pod]: `${p.namespace}/${p.name}`, container: c.plan.name, run: run.run, exitCode: ex.exitCode, [F.reason]: reason }, 'container exited');
    try {
      this.save(p);
    } catch (e) {
      this.log.warn({ [F.pod]: `${p.namespace}/${p.name}`, [F.err]: e instanceof Error ? e.message : String(e) }, 'writing the pod record failed; the sync writes it');
    }
    this.kick(p);
  }

  /** Looks at every running container (the same way for the ones this process started and adopted ones). */
  private arm(): void {
    if (this.stopped) return;
    this.poller = this.o.clock.setTimeout(() => {
      this.poller = null;
      for (const p of this.pods.values()) {
        for (const c of p.ctrs.values()) if (c.current && !this.o.runtime.running(c.current)) this.exited(p, c, c.current);
        if (p.sandbox && !this.o.runtime.sandboxRunning(p.sandbox, p.sandboxStart)) this.kick(p);
      }
      this.arm();
    }, this.o.pollMs ?? 250);
  }

  /** SIGTERM to a run's process group, SIGKILL after `graceSeconds` if it still runs. */
  private kill(c: Ctr, graceSeconds: number): void {
    const run = c.current;
    if (!run) return;
    c.killing = true;
    this.o.runtime.signal(run, 'SIGTERM');
    c.timers.push(this.o.clock.setTimeout(() => {
      if (c.current === run && this.o.runtime.running(run)) this.o.runtime.signal(run, 'SIGKILL');
    }, graceSeconds * 1000));
  }

  private async terminate(p: PodState, graceSeconds: number): Promise<void> {
    const running = [...p.ctrs.values()].filter((c) => c.current);
    for (const c of p.ctrs.values()) this.clearProbes(c);
    if (running.length) {
      this.event(p, 'Normal', 'Killing', `Stopping container ${running.map((c) => c.plan.name).join(', ')}`);
      for (const c of running) this.o.runtime.signal(c.current!, 'SIGTERM');
      const alive = () => running.filter((c) => c.current && this.o.runtime.running(c.current));
      const deadline = this.o.clock.now() + graceSeconds * 1000;
      while (alive().length && this.o.clock.now() < deadline) await this.sleep(100);
      for (const c of alive()) this.o.runtime.signal(c.current!, 'SIGKILL');
      const killDeadline = this.o.clock.now() + KILL_WAIT_MS;
      while (alive().length && this.o.clock.now() < killDeadline) await this.sleep(50);
      for (const c of running) {
        if (!c.current) continue;
        const stuck = this.o.runtime.running(c.current);
        if (stuck) this.log.warn({ [F.pod]: `${p.namespace}/${p.name}`, container: c.plan.name, pid: c.current.pid }, 'container outlived SIGKILL; the sandbox\'s stop ends it');
        this.exited(p, c, c.current, stuck ? KILLED : undefined);
      }
    }
    await this.releaseSandbox(p);
    this.o.runtime.remove(p.uid);
  }

  private sleep(ms: number): Promise<void> {
    return new Promise((r) => this.o.clock.setTimeout(r, ms));
  }

  // --- probes ----------------------------------------------------------------------------------------------

  private clearProbes(c: Ctr): void {
    for (const t of c.timers) this.o.clock.clearTimeout(t);
    c.timers = [];
  }

  private armProbes(p: PodState, c: Ctr, run: RunRecord, adopted: boolean): void {
    const kinds: [ProbeKind, ContainerPlan['readiness']][] = [['startup', c.plan.startup], ['readiness', c.plan.readiness], ['liveness', c.plan.liveness]];
    for (const [kind, spec] of kinds) {
      if (!spec) continue;
      const first = adopted ? this.o.clock.now() : firstProbeAt(spec, run.startedAt);
      this.schedule(p, c, run, kind, first);
    }
  }

  private schedule(p: PodState, c: Ctr, run: RunRecord, kind: ProbeKind, at: number): void {
    if (this.stopped) return;
    const t = this.o.clock.setTimeout(() => {
      c.timers = c.timers.filter((x) => x !== t);
      void this.probeOnce(p, c, run, kind);
    }, Math.max(0, at - this.o.clock.now()));
    c.timers.push(t);
  }

  private async probeOnce(p: PodState, c: Ctr, run: RunRecord, kind: ProbeKind): Promise<void> {
    const spec = kind === 'startup' ? c.plan.startup : kind === 'readiness' ? c.plan.readiness : c.plan.liveness;
    if (!spec || c.current !== run || p.forgotten || this.stopped) return;
    if (c.killing || !probeActive(kind, c.started) || !p.sandbox || !p.podIP) {
      this.schedule(p, c, run, kind, nextProbeAt(spec, this.o.clock.now()));
      return;
    }
    if (!c.env && spec.action.kind === 'exec') {
      // An adopted run: its environment as it would be made now (the objects may have changed since; env never does).
      const r = await this.containerEnv(p, c);
      c.env = r.ok ? r.env : { PATH: '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin', HOSTNAME: this.hostname(p) };
    }
    if (c.current !== run || p.forgotten || this.stopped || !p.sandbox || !p.podIP) return;
    const out: ProbeOutcome = await (this.o.probe ?? runProbe)(spec.action, { podIP: p.podIP, sandbox: p.sandbox, timeoutMs: spec.timeoutSeconds * 1000, env: c.env ?? {}, pid: run.pid, workingDir: c.plan.workingDir });
    if (c.current !== run || p.forgotten || this.stopped) return;
    const before = c.probes[kind];
    const after = observe(spec, before, out.ok);
    c.probes[kind] = after;
    const label = kind === 'readiness' ? 'Readiness' : kind === 'liveness' ? 'Liveness' : 'Startup';
    if (!out.ok) this.event(p, 'Warning', 'Unhealthy', `${label} probe failed: ${out.message}`, c.plan.name);
    if (after.result !== before.result) {
      this.log.info({ [F.pod]: `${p.namespace}/${p.name}`, container: c.plan.name, probe: kind, result: after.result }, 'probe result changed');
      if (kind === 'startup' && after.result === 'Success') c.started = true;
      if ((kind === 'liveness' || kind === 'startup') && after.result === 'Failure') {
        const grace = spec.terminationGracePeriodSeconds ?? p.plan?.terminationGracePeriodSeconds ?? 30;
        this.event(p, 'Normal', 'Killing', `Container ${c.plan.name} failed ${kind} probe, will be restarted`, c.plan.name);
        this.kill(c, grace);
      }
      this.kick(p);
    }
    this.schedule(p, c, run, kind, nextProbeAt(spec, this.o.clock.now()));
  }

  // --- status ----------------------------------------------------------------------------------------------

  /**
   * The kubelet's resource admission: the Pod's requests (resourcehelper's, init containers included) with those of
   * every Pod admitted and not finished must fit the node's allocatable, and the Pods must fit its `pods`; else the
   * kubelet's rejection, `OutOf<resource>` with "Node didn't have enough resource: cpu, requested: 500, used: 1800,
   * capacity: 2000" (cpu in milli-cores, the rest in units).
   */
  private admissionRefusal(p: PodState): { reason: string; message: string } | null {
    const alloc = this.o.node as Readonly<Record<string, string>>;
    const others = [...this.pods.values()].filter((x) => x !== p && x.admitted && !x.finished && !x.deleted && x.pod);
    const maxPods = alloc['pods'] !== undefined ? quantityNanos(alloc['pods']) : null;
    if (maxPods !== null && BigInt(others.length + 1) * 1_000_000_000n > maxPods) {
      return { reason: 'OutOfpods', message: `Pod was rejected: Node didn't have enough resource: pods, requested: 1, used: ${others.length}, capacity: ${maxPods / 1_000_000_000n}` };
    }
    const units = resourceUnits;
    const want = podAmounts(obj(p.pod!['spec']) ?? {}, 'requests');
    for (const [r, q] of [...want].sort(([a], [b]) => (a < b ? -1 : 1))) {
      const need = units(r, q.nanos);
      if (need <= 0n || alloc[r] === undefined) continue;
      let used = 0n;
      for (const x of others) used += units(r, podAmounts(obj(x.pod!['spec']) ?? {}, 'requests').get(r)?.nanos ?? 0n);
      const cap = units(r, quantityNanos(alloc[r]) ?? 0n);
      if (used + need > cap) return { reason: `OutOf${r}`, message: `Pod was rejected: Node didn't have enough resource: ${r}, requested: ${need}, used: ${used}, capacity: ${cap}` };
    }
    return null;
  }

  private view(p: PodState): PodView {
    const containers: ContainerView[] = (p.plan?.containers ?? []).map((cp) => {
      const c = p.ctrs.get(cp.name)!;
      const ranRun = c.current?.run ?? (c.last ? c.restartCount : null);
      const containerID = ranRun === null ? '' : `nodenet://${p.uid}/${cp.name}/${ranRun}`;
      const readiness = c.plan.readiness ? c.probes.readiness.result === 'Success' : true;
      if (c.current) return { name: cp.name, image: cp.image, containerID, state: { running: { startedAt: c.current.startedAt } }, lastState: c.last, restartCount: c.restartCount, ready: c.started && readiness && !c.killing, started: c.started };
      if (c.waiting) return { name: cp.name, image: cp.image, containerID, state: { waiting: c.waiting }, lastState: c.last, restartCount: c.restartCount, ready: false, started: false };
      if (c.last) return { name: cp.name, image: cp.image, containerID, state: { terminated: c.last }, lastState: c.previous, restartCount: c.restartCount, ready: false, started: false };
      return { name: cp.name, image: cp.image, containerID, state: { waiting: { reason: 'ContainerCreating' } }, lastState: null, restartCount: 0, ready: false, started: false };
    });
    const failed = p.problems ? { reason: 'UnsupportedPodSpec', message: describeProblems(p.problems) } : p.rejected ?? undefined;
    const specContainers = (obj(p.pod?.['spec'])?.['containers'] as unknown[] | undefined) ?? [];
    const refused = !!(p.problems || p.rejected);
    const rejected: ContainerView[] = refused
      ? specContainers.map((x) => ({ name: str(obj(x)?.['name']), image: str(obj(x)?.['image']), containerID: '', state: { waiting: { reason: failed!.reason } }, lastState: null, restartCount: 0, ready: false, started: false }))
      : [];
    return { restartPolicy: p.plan?.restartPolicy ?? 'Never', podIP: p.podIP, hostIP: this.o.hostIP, startTime: p.startedAt ?? (refused ? this.o.clock.now() : null), containers: refused ? rejected : containers, ...(failed ? { failed } : {}) };
  }

  private async postStatus(p: PodState): Promise<void> {
    if (!p.pod || p.deleted) return;
    const apiStatus = p.pod['status'];
    const want = podStatus(this.view(p), apiStatus, this.o.clock.now());
    const json = JSON.stringify(want);
    const rv = str(obj(p.pod['metadata'])?.['resourceVersion']);
    if (!statusDiffers(want, apiStatus)) {
      p.lastPosted = json;
      p.lastPostedRv = rv;
      return;
    }
    if (json === p.lastPosted && rv === p.lastPostedRv) return; // posted; the watch has not brought it back yet
    await this.o.api.patchPodStatus(p.namespace, p.name, want);
    p.lastPosted = json;
    p.lastPostedRv = rv;
  }

  private save(p: PodState): void {
    if (p.forgotten) return;
    this.o.runtime.save({
      version: 1,
      uid: p.uid,
      namespace: p.namespace,
      name: p.name,
      sandbox: p.sandbox ? { name: this.o.runtime.sandboxName(p.uid), pid: p.sandbox.pid, startTime: p.sandboxStart, netns: p.sandbox.netnsPath } : null,
      podIP: p.podIP,
      startedAt: p.startedAt ?? this.o.clock.now(),
      containers: [...p.ctrs.values()].map((c) => ({ name: c.plan.name, current: c.current, last: c.last, previous: c.previous, restartCount: c.restartCount, backoff: c.backoff })),
    });
  }

  // --- events ----------------------------------------------------------------------------------------------

  /** A core/v1 Event about the Pod (or one of its containers), through the shared recorder: never blocks or throws. */
  private event(p: PodState, type: EventType, reason: string, message: string, container?: string): void {
    this.o.events.event({ kind: 'Pod', apiVersion: 'v1', namespace: p.namespace, name: p.name, uid: p.uid, ...(container ? { fieldPath: `spec.containers{${container}}` } : {}) }, type, reason, message);
  }
}
