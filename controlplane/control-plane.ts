/**
 * controlplane/control-plane: `nodenet control-plane`, the embedded
 * Kubernetes API server, put together.
 *
 * Its data directory (0700) holds everything it needs across restarts:
 *   state.db              the objects and the history (SQLite, WAL), unless --storage etcd:URL,...
 *                         puts them in etcd (several control planes then share it)
 *   state.db.lock         its flock: one control plane per SQLite database (a second is refused)
 *   pki/ca.{crt,key}      the cluster CA (made once)
 *   pki/apiserver.{crt,key}  the serving certificate, re-issued when the names it must cover change
 *   tokens.json           the admin token and one token per node (0600)
 *   admin.kubeconfig      ready for kubectl: server, CA, admin token
 *   nodes/<name>.kubeconfig  one per node the control plane was told about
 */
import { randomBytes, randomUUID, X509Certificate } from 'node:crypto';
import { hostname } from 'node:os';
import { chmodSync, existsSync, mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { stringify as toYaml } from 'yaml';
import { ErrorCode, NodenetError } from '../lib/errors/errors.js';
import { F } from '../lib/log/fields.js';
import { silentLogger, type Logger } from '../lib/log/log.js';
import { realClock, type Clock } from '../lib/reconcile/clock.js';
import { writeFileDurable } from '../lib/state/durable.js';
import { readJsonFile } from '../lib/state/read.js';
import { NodeAuthorizer, privilegedGroupAuthorizer, type Tokens } from './auth/authz.js';
import { reconcileBootstrapPolicy } from './auth/bootstrap.js';
import { cacheNodeGraph } from './auth/node-graph.js';
import { CachePolicySource } from './auth/policy-source.js';
import { AuthorizerChain, RbacAuthorizer } from './auth/rbac.js';
import { ClusterRoleAggregationController } from './controllers/clusterrole-aggregation.js';
import { CONTROLLER_MANAGER_USER, CONTROLLER_ROLES, controllerUser, SCHEDULER_USER } from './auth/bootstrap-policy.js';
import { LoopbackRest } from './api/loopback.js';
import type { User } from './auth/authz.js';
import { Admission, enabledPlugins } from './admission/admission.js';
import { makePlugins } from './admission/plugins.js';
import { ResourceQuotaController } from './controllers/resource-quota.js';
import { SYSTEM_PRIORITY_CLASSES } from './kinds/priorityclass.js';
import { defaultServiceAccount, NamespaceObjectController, rootCAConfigMap } from './controllers/namespace-objects.js';
import { newSigningKey, ServiceAccountTokens } from './auth/sa-token.js';
import { issue } from '../lib/pki/pki.js';
import { OpenApi } from './api/openapi.js';
import { RESOURCES } from './api/resources.js';
import { Rest, type RestClient } from './api/rest.js';
import { loadSchemas } from './api/schema.js';
import { ApiMetrics } from './api/metrics.js';
import { GarbageCollector } from './gc/garbage-collector.js';
import { NodeIpam } from './controllers/node-ipam.js';
import { PodGarbageCollector, POD_GC_COMPONENT } from './controllers/pod-gc.js';
import { EndpointSliceController } from './controllers/endpointslice.js';
import { EndpointsController } from './controllers/endpoints.js';
import { EventTtl } from './controllers/event-ttl.js';
import { ReplicaSetController } from './controllers/replicaset.js';
import { DeploymentController } from './controllers/deployment.js';
import { EventBroadcaster } from './controllers/events.js';
import { Scheduler } from './controllers/scheduler.js';
import { EVICTION_COMPONENT, NODE_COMPONENT, NodeLifecycleController } from './controllers/node-lifecycle.js';
import { ServiceAllocator } from './alloc/service-allocator.js';
import { Claims } from './alloc/claims.js';
import { LOAD_BALANCER_COMPONENT, LoadBalancerController, parseLoadBalancerPool } from './controllers/loadbalancer.js';
import { ApiServer } from './api/server.js';
import { Compactor } from './store/compactor.js';
import { describeStorage, openStorage, type StorageSpec } from './store/spec.js';
import { describeEncryption, loadEncryptionConfig, withEncryption } from './store/encryption.js';
import type { Storage } from './store/storage.js';
import { WatchCache } from './store/watch-cache.js';
import { Lifecycle } from '../lib/lifecycle/lifecycle.js';
import { LeaderElector } from './leaderelection/leader-election.js';
import { RestLeaseLock } from './leaderelection/rest-lock.js';
import { isDNS1123Subdomain } from '../lib/net/dns-names.js';
import { ApiServerEndpoints } from './controllers/apiserver-endpoints.js';
import { isIP } from 'node:net';
import { networkInterfaces } from 'node:os';
import { fileURLToPath } from 'node:url';
import { addonKey, coreDnsObjects, parseDisabled } from './addons/coredns.js';

export interface ControlPlaneOptions {
  readonly dataDir: string;
  /** Where the cluster state lives (default SQLite in the data directory). */
  readonly storage?: StorageSpec;
  readonly host: string;
  readonly port: number;
  /** Plain HTTP: only on a loopback address. */
  readonly insecureHttp?: boolean;
  /** Nodes to make tokens and kubeconfigs for. */
  readonly nodes?: readonly string[];
  /** More names and addresses the serving certificate covers (the listen address and localhost always). */
  readonly hosts?: readonly string[];
  readonly version: string;
  readonly log?: Logger;
  readonly clock?: Clock;
  /** The storage's history window (ms), what watches may resume from; default 5 minutes. */
  readonly historyMs?: number;
  /** How often the history is compacted (ms); default a minute on SQLite, 5 minutes on etcd (kube-apiserver's); tests shorten it. */
  readonly compactEveryMs?: number;
  /** ClusterIPs come from here (default 10.96.0.0/12; its first address is the `kubernetes` Service's). */
  readonly serviceCIDR?: string;
  /** NodePorts come from here (default 30000-32767). */
  readonly nodePortRange?: { readonly from: number; readonly to: number };
  /** Nodes' pod CIDRs come from here (default 10.244.0.0/16) ... */
  readonly clusterCIDR?: string;
  /** ... in blocks of this prefix length (default 24). */
  readonly nodeCIDRMaskSize?: number;
  /** How long a Node may go without renewing its Lease or posting a heartbeat before it is Ready=Unknown (ms; default 40 s). */
  readonly nodeMonitorGracePeriodMs?: number;
  /** The pod GC deletes the Pods of a Node gone this long (default 40 s, upstream's quarantine). */
  readonly orphanPodQuarantineMs?: number;
  /** LoadBalancer Services' ingress IPs come from here (CIDR or START-END, comma-separated); none: they stay pending. */
  readonly loadBalancerPool?: string;
  /** How often a watch that allows bookmarks gets one (ms; default 30 s, tests shorten it). */
  readonly bookmarkEveryMs?: number;
  /**
   * This server's address in the `kubernetes` Service's EndpointSlice (kube-apiserver's --advertise-address);
   * default the listen address (on 0.0.0.0: this machine's first non-loopback IPv4 address).
   */
  readonly advertiseAddress?: string;
  /**
   * The address clients are given (kubeadm's controlPlaneEndpoint, HOST:PORT): a load balancer in front of several
   * API servers. The kubeconfigs written name it, and the serving certificate covers its host. Default: this server.
   */
  readonly controlPlaneEndpoint?: string;
  /** On a clean stop, /readyz is red this long before the server closes (kube-apiserver's --shutdown-delay-duration; default 0). */
  readonly shutdownDelayMs?: number;
  /** The API server leases' TTL and renewal (ms; defaults 15 s and 10 s, kube-apiserver's; tests shorten them). */
  readonly apiServerLease?: { readonly ttlMs: number; readonly renewEveryMs: number; readonly checkEveryMs?: number };
  /** A request with no credentials is system:anonymous (default true, kube-apiserver's --anonymous-auth); false: a 401. */
  readonly anonymousAuth?: boolean;
  /** --service-account-max-token-expiration, seconds. */
  readonly maxTokenExpirationSeconds?: number;
  /** Admission plugins turned on beyond the defaults, and off (kube-apiserver's flags; every plugin is on by default). */
  readonly enableAdmissionPlugins?: readonly string[];
  readonly disableAdmissionPlugins?: readonly string[];
  /** Events not updated for this long are deleted (kube-apiserver's --event-ttl; default 1 h). */
  readonly eventTtlMs?: number;
  /** How often every ResourceQuota is counted again (kube-controller-manager's --resource-quota-sync-period; 5 min). */
  readonly quotaResyncMs?: number;
  /** kube-apiserver's --encryption-provider-config: an EncryptionConfiguration file; what it names is encrypted at rest. */
  readonly encryptionProviderConfig?: string;
  /** Addons not to install (k3s's --disable): `coredns`. An unknown name stops the start. */
  readonly disable?: readonly string[];
  /**
   * The nodenet CLI's entry script, which the addon Pods run (`node <entry> dns`, on each node's filesystem). The
   * command line passes its own; default: dist/nodenet.js of this checkout or package (tests in-process).
   */
  readonly nodenetEntry?: string;
}

export interface ControlPlane {
  readonly url: string;
  readonly kubeconfig: string;
  /** The storage backend (writes, and what a consistent read asks). */
  readonly storage: Storage;
  /** The watch cache over it (every read). */
  readonly cache: WatchCache;
  readonly rest: Rest;
  nodeKubeconfig(name: string): string;
  stop(): Promise<void>;
}

/** The namespaces kube-apiserver makes at start. */
const SYSTEM_NAMESPACES = ['default', 'kube-system', 'kube-public', 'kube-node-lease'];

function isLoopback(host: string): boolean {
  return host === 'localhost' || host === '::1' || /^127\./.test(host);
}

function loadOrMakeTokens(file: string, nodes: readonly string[]): Tokens {
  let admin = '';
  const known: Record<string, string> = {};
  if (existsSync(file)) {
    readJsonFile(file, (r) => {
      admin = r.string('admin');
      const ns = r.optObject('nodes');
      for (const k of Object.keys(ns?.obj ?? {})) known[k] = ns!.string(k);
    });
  }
  let changed = !admin;
  admin ||= randomBytes(32).toString('base64url');
  for (const n of nodes) {
    if (!known[n]) {
      known[n] = randomBytes(32).toString('base64url');
      changed = true;
    }
  }
  const tokens = { admin, nodes: known };
  if (changed) writeFileDurable(file, `${JSON.stringify(tokens, null, 2)}\n`, { mode: 0o600 });
  return tokens;
}

function kubeconfig(server: string, caPem: string | null, user: string, token: string): string {
  const cluster: Record<string, unknown> = { server };
  if (caPem) cluster['certificate-authority-data'] = Buffer.from(caPem).toString('base64');
  return toYaml({
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [{ name: 'nodenet', cluster }],
    users: [{ name: user, user: { token } }],
    contexts: [{ name: 'nodenet', context: { cluster: 'nodenet', user, namespace: 'default' } }],
    'current-context': 'nodenet',
  });
}

/** The CA and a serving certificate covering `hosts`, made or reused. */
function ensurePki(dir: string, hosts: readonly string[]): { caPem: string; cert: string; key: string } {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const caCrt = join(dir, 'ca.crt');
  const caKey = join(dir, 'ca.key');
  if (!existsSync(caCrt) || !existsSync(caKey)) {
    const ca = issue({ commonName: 'nodenet-ca', organization: 'nodenet', isCA: true });
    writeFileDurable(caKey, ca.keyPem, { mode: 0o600 });
    writeFileDurable(caCrt, ca.certPem, { mode: 0o644 });
  }
  const caPem = readFileSync(caCrt, 'utf8');
  const crt = join(dir, 'apiserver.crt');
  const key = join(dir, 'apiserver.key');
  const covers = (pem: string) => {
    const x = new X509Certificate(pem);
    return x.checkIssued(new X509Certificate(caPem)) && hosts.every((h) => (/^\d+\.\d+\.\d+\.\d+$/.test(h) ? x.checkIP(h) : x.checkHost(h)) !== undefined) && Date.parse(x.validTo) > Date.now() + 30 * 86_400_000;
  };
  if (!existsSync(crt) || !existsSync(key) || !covers(readFileSync(crt, 'utf8'))) {
    const s = issue({ commonName: 'nodenet-apiserver', hosts, issuer: { certPem: caPem, keyPem: readFileSync(caKey, 'utf8'), commonName: 'nodenet-ca', organization: 'nodenet' } });
    writeFileDurable(key, s.keyPem, { mode: 0o600 });
    writeFileDurable(crt, s.certPem, { mode: 0o644 });
  }
  return { caPem, cert: readFileSync(crt, 'utf8'), key: readFileSync(key, 'utf8') };
}

/**
 * The ServiceAccount token signing key (kubeadm's pki/sa.key and sa.pub), made or reused. Every API server of a
 * cluster needs the same one: the lab copies it with the CA.
 */
function ensureSigningKey(dir: string): string {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const key = join(dir, 'sa.key');
  if (!existsSync(key)) {
    const k = newSigningKey();
    writeFileDurable(key, k.privateKeyPem, { mode: 0o600 });
    writeFileDurable(join(dir, 'sa.pub'), k.publicKeyPem, { mode: 0o644 });
  }
  return readFileSync(key, 'utf8');
}

/**
 * dist/nodenet.js next to this module: the module is either bundled into dist/ (dist/nodenet.js, or a chunk in
 * dist/chunks/) or run from the sources (controlplane/, beside dist/).
 */
function defaultNodenetEntry(): string {
  const here = fileURLToPath(new URL('.', import.meta.url));
  if (here.endsWith('/dist/')) return `${here}nodenet.js`;
  if (here.endsWith('/dist/chunks/')) return fileURLToPath(new URL('../nodenet.js', import.meta.url));
  return fileURLToPath(new URL('../dist/nodenet.js', import.meta.url));
}

const REPAIR_EVERY_MS = 3 * 60_000;

/** A component that runs fn at start and then every everyMs, for as long as it runs. */
function periodic(clock: Clock, everyMs: number, fn: () => Promise<void>, onError: (e: unknown) => void): { start(): Promise<void>; stop(): Promise<void> } {
  let timer: unknown = null;
  let running = false;
  let last: Promise<void> = Promise.resolve();
  const run = (): Promise<void> => {
    last = fn().catch(onError).finally(() => {
      if (running) timer = clock.setTimeout(() => void run(), everyMs);
    });
    return last;
  };
  return {
    start: () => { running = true; return run(); },
    async stop() {
      running = false;
      if (timer !== null) clock.clearTimeout(timer);
      await last;
    },
  };
}

function parseEndpoint(v: string): { host: string; port: number } {
  const m = /^(?:\[([^\]]+)\]|([^:]+)):(\d+)$/.exec(v);
  const port = Number(m?.[3]);
  if (!m || !(port >= 1 && port <= 65535)) throw new NodenetError(ErrorCode.InvalidConfig, `--control-plane-endpoint ${JSON.stringify(v)}: want HOST:PORT (a name or an address, and a port 1-65535)`);
  return { host: m[1] ?? m[2]!, port };
}

function firstNonLoopbackIPv4(): string {
  for (const list of Object.values(networkInterfaces())) for (const a of list ?? []) if (a.family === 'IPv4' && !a.internal) return a.address;
  return '127.0.0.1';
}

export async function startControlPlane(o: ControlPlaneOptions): Promise<ControlPlane> {
  const log = (o.log ?? silentLogger()).child({ [F.subsys]: 'controlplane' });
  const clock = o.clock ?? realClock;
  if (o.insecureHttp && !isLoopback(o.host)) {
    throw new NodenetError(ErrorCode.InvalidConfig, `--insecure-http: plain HTTP is only allowed on a loopback address, not ${o.host}`);
  }
  for (const n of o.nodes ?? []) if (!isDNS1123Subdomain(n)) throw new NodenetError(ErrorCode.InvalidConfig, `--node ${JSON.stringify(n)}: a node name must be a lowercase RFC 1123 subdomain`);
  const grace = o.nodeMonitorGracePeriodMs;
  try {
    if (o.loadBalancerPool) parseLoadBalancerPool(o.loadBalancerPool);
  } catch (e) {
    throw new NodenetError(ErrorCode.InvalidConfig, `--load-balancer-ip-pool: ${e instanceof Error ? e.message : String(e)}`, { cause: e });
  }
  if (grace !== undefined && !(Number.isFinite(grace) && grace > 0)) throw new NodenetError(ErrorCode.InvalidConfig, `--node-monitor-grace-period: must be more than 0, not ${grace} ms`);
  mkdirSync(o.dataDir, { recursive: true, mode: 0o700 });
  chmodSync(o.dataDir, 0o700);
  const tokens = loadOrMakeTokens(join(o.dataDir, 'tokens.json'), o.nodes ?? []);
  const endpoint = o.controlPlaneEndpoint ? parseEndpoint(o.controlPlaneEndpoint) : null;
  const advertise = o.advertiseAddress ?? (o.host === '0.0.0.0' ? firstNonLoopbackIPv4() : o.host === 'localhost' ? '127.0.0.1' : o.host);
  if (!isIP(advertise)) throw new NodenetError(ErrorCode.InvalidConfig, `--advertise-address ${JSON.stringify(advertise)}: not an IP address`);
  let services: ServiceAllocator;
  try {
    services = new ServiceAllocator({ clock, ...(o.serviceCIDR ? { serviceCIDR: o.serviceCIDR } : {}), ...(o.nodePortRange ? { nodePortRange: o.nodePortRange } : {}) });
  } catch (e) {
    throw new NodenetError(ErrorCode.InvalidConfig, `--service-cidr / --service-node-port-range: ${e instanceof Error ? e.message : String(e)}`, { cause: e });
  }
  // The serving certificate also names what in-cluster clients dial, as kube-apiserver's: the kubernetes Service's
  // ClusterIP (the service CIDR's first address) and its DNS names.
  // The addons' objects are built (and their flags checked) before anything is opened.
  let addons: ReturnType<typeof coreDnsObjects> = [];
  try {
    const disabled = parseDisabled(o.disable ?? []);
    if (!disabled.has('coredns')) addons = coreDnsObjects({ serviceCIDR: services.cidr, command: [process.execPath, o.nodenetEntry ?? defaultNodenetEntry()] });
  } catch (e) {
    throw new NodenetError(ErrorCode.InvalidConfig, e instanceof Error ? e.message : String(e), { cause: e });
  }
  const inCluster = [services.firstIP, 'kubernetes', 'kubernetes.default', 'kubernetes.default.svc', 'kubernetes.default.svc.cluster.local'];
  const hosts = [...new Set(['localhost', '127.0.0.1', o.host === '0.0.0.0' ? '' : o.host, advertise, endpoint?.host ?? '', ...inCluster, ...(o.hosts ?? [])].filter(Boolean))];
  const pki = o.insecureHttp ? null : ensurePki(join(o.dataDir, 'pki'), hosts);

  const schemas = await loadSchemas([...RESOURCES.map((r) => r.model), 'V1Scale', 'V1Status', 'V1DeleteOptions', 'V1ListMeta']);
  // Opening SQLite takes the data directory's lock: a second control plane on it stops here. On etcd, several
  // control planes share the state (each with the same CA and tokens).
  const spec: StorageSpec = o.storage ?? { kind: 'sqlite', dir: null };
  const encryption = o.encryptionProviderConfig ? loadEncryptionConfig(o.encryptionProviderConfig) : null;
  const storage = withEncryption(openStorage(spec, o.dataDir, log), encryption);
  if (encryption) log.info({ encryption: describeEncryption(encryption) }, 'encryption at rest');
  const cache = new WatchCache({ storage, clock, log });
  let admission: Admission;
  try {
    admission = Admission.of(makePlugins({ cache, storage, clock, projectServiceAccountToken: pki !== null }), enabledPlugins(o.enableAdmissionPlugins, o.disableAdmissionPlugins));
  } catch (e) {
    await storage.close();
    throw e;
  }
  log.info({ plugins: admission.names }, 'admission chain');
  const rest = new Rest({ storage, cache, schemas, clock, services, admission });
  const makeIpam = (client: RestClient = rest) => new NodeIpam({ rest: client, cache, claims: new Claims(storage, cache, 'podcidrs.nodenet.io'), clock, log: log.child({ [F.subsys]: 'controlplane/node-ipam' }), ...(o.clusterCIDR ? { clusterCIDR: o.clusterCIDR } : {}), ...(o.nodeCIDRMaskSize ? { maskSize: o.nodeCIDRMaskSize } : {}) });
  try {
    makeIpam(); // the flags checked at start, not when leading begins
  } catch (e) {
    await storage.close();
    throw new NodenetError(ErrorCode.InvalidConfig, `--cluster-cidr / --node-cidr-mask-size: ${e instanceof Error ? e.message : String(e)}`, { cause: e });
  }
  const metrics = new ApiMetrics(() => cache.counts());
  // kube-apiserver's --authorization-mode=Node,RBAC, behind its privileged group authorizer (system:masters).
  const policy = new CachePolicySource(cache);
  const authorizer = new AuthorizerChain([privilegedGroupAuthorizer, new NodeAuthorizer(cacheNodeGraph(cache)), new RbacAuthorizer(policy)]);
  const saTokens = new ServiceAccountTokens({
    privateKeyPem: ensureSigningKey(join(o.dataDir, 'pki')),
    now: () => clock.now(),
    lookups: {
      serviceAccountUid: (ns, name) => {
        const u = cache.get(`serviceaccounts/${ns}/${name}`)?.object.metadata?.['uid'];
        return typeof u === 'string' ? u : undefined;
      },
      object: (kind, ns, name) => {
        const s = cache.get(kind === 'Pod' ? `pods/${ns}/${name}` : kind === 'Secret' ? `secrets/${ns}/${name}` : `nodes//${name}`);
        if (!s) return undefined;
        const deleted = Date.parse(String(s.object.metadata?.['deletionTimestamp'] ?? ''));
        return { uid: String(s.object.metadata?.['uid'] ?? ''), ...(Number.isNaN(deleted) ? {} : { deletionTimestampMs: deleted }) };
      },
    },
  });
  const server = new ApiServer({ rest, cache, tokens, metrics, authorizer, policy, serviceAccountTokens: saTokens, ...(o.anonymousAuth === false ? { anonymousAuth: false } : {}), ...(o.maxTokenExpirationSeconds ? { maxTokenExpirationSeconds: o.maxTokenExpirationSeconds } : {}), anonymousAdmin: o.insecureHttp === true, log: log.child({ [F.subsys]: 'controlplane/api' }), clock, openapi: new OpenApi(schemas), version: o.version, ...(o.bookmarkEveryMs ? { bookmarkEveryMs: o.bookmarkEveryMs } : {}), ...(pki ? { tls: { cert: pki.cert, key: pki.key, clientCA: pki.caPem } } : {}) });
  const sub = (name: string) => log.child({ [F.subsys]: `controlplane/${name}` });
  const apiLog = log.child({ [F.subsys]: 'controlplane/api' });
  // The components' Events go out through one recorder, each written as the component that records it (its
  // ServiceAccount under its system:controller: role, or system:kube-scheduler), as upstream's clients each write
  // their own; a component without a role of its own writes as system:kube-controller-manager.
  const EVENT_IDENTITY: Readonly<Record<string, User>> = {
    'default-scheduler': SCHEDULER_USER,
    [LOAD_BALANCER_COMPONENT]: controllerUser('service-controller'),
    [EVICTION_COMPONENT]: controllerUser('node-controller'),
  };
  const eventRests = new Map<string, LoopbackRest>();
  const eventRest = (component: string) => {
    let r = eventRests.get(component);
    if (!r) {
      const user = EVENT_IDENTITY[component] ?? (component in CONTROLLER_ROLES ? controllerUser(component) : CONTROLLER_MANAGER_USER);
      eventRests.set(component, (r = new LoopbackRest({ rest, user, authorizer, log: apiLog, metrics })));
    }
    return r;
  };
  const events = new EventBroadcaster({ rest: eventRest, clock, log: log.child({ [F.subsys]: 'controlplane/events' }) });

  // Every component in start order; they stop in reverse, and a failed start stops what had started.
  const lc = new Lifecycle(log);
  lc.append({ name: 'storage', stop: () => storage.close() });
  lc.append({ name: 'watch-cache', start: () => cache.start(), stop: () => cache.close() });
  // On etcd, kube-apiserver's --etcd-compaction-interval (5 minutes), each round a compare-and-swap on compact_rev_key
  // so that of several API servers one compacts; SQLite's own history is trimmed every minute.
  const compactEveryMs = o.compactEveryMs ?? (spec.kind === 'etcd' ? 5 * 60_000 : undefined);
  const compactor = new Compactor({ storage, clock, log, onCompacted: (rev) => cache.compacted(rev), ...(o.historyMs ? { historyMs: o.historyMs } : {}), ...(compactEveryMs ? { everyMs: compactEveryMs } : {}) });
  lc.append({ name: 'compactor', start: () => compactor.start(), stop: () => compactor.stop() });
  // Every API server follows the allocation objects; their repair is the controller manager's leader's (below).
  lc.append({ name: 'service-allocator', start: () => services.start(cache), stop: () => services.stop() });
  lc.append({
    name: 'bootstrap',
    start: async () => {
      const nsRes = RESOURCES.find((r) => r.resource === 'namespaces')!;
      // Several API servers on one etcd may start at once: a create another made first is as good.
      const ensure = (p: Promise<unknown>) => p.catch((e: unknown) => {
        if (!(e instanceof NodenetError && e.code === 'NN_ERR_ALREADY_EXISTS')) throw e;
      });
      for (const ns of SYSTEM_NAMESPACES) {
        if (!cache.get(`namespaces//${ns}`)) await ensure(rest.create(nsRes, '', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } }, { fieldManager: 'nodenet-control-plane' }));
      }
      // The bootstrap RBAC policy (cluster-admin, admin, edit, view, the system: roles and their bindings).
      await reconcileBootstrapPolicy(rest, cache, sub('rbac-bootstrap'));
      // The two system PriorityClasses, as kube-apiserver's scheduling post-start hook makes them.
      const pcRes = RESOURCES.find((r) => r.resource === 'priorityclasses')!;
      for (const c of SYSTEM_PRIORITY_CLASSES) {
        if (!cache.get(`priorityclasses.scheduling.k8s.io//${c.name}`)) await ensure(rest.create(pcRes, '', { apiVersion: 'scheduling.k8s.io/v1', kind: 'PriorityClass', metadata: { name: c.name }, value: c.value, description: c.description }, { fieldManager: 'nodenet-control-plane' }));
      }
      // The `kubernetes` Service, on the first address of the service CIDR, as kube-apiserver makes it.
      if (!cache.get('services/default/kubernetes')) {
        const svcRes = RESOURCES.find((r) => r.resource === 'services')!;
        await ensure(rest.create(svcRes, 'default', {
          apiVersion: 'v1', kind: 'Service',
          metadata: { name: 'kubernetes', labels: { component: 'apiserver', provider: 'kubernetes' } },
          spec: { clusterIP: services.firstIP, ports: [{ name: 'https', port: 443, protocol: 'TCP', targetPort: o.port || 6443 }], sessionAffinity: 'None', type: 'ClusterIP' },
        }, { fieldManager: 'nodenet-control-plane' }));
      }
      // The addons (cluster DNS), each object created if absent and never updated: a user's edit or scale sticks
      // (addons/coredns.ts says why). One that cannot be made (its ClusterIP taken by a user's Service) is logged
      // and the control plane serves anyway, as a cluster without DNS is still a cluster.
      for (const a of addons) {
        if (cache.get(addonKey(a))) continue;
        const res = RESOURCES.find((r) => r.resource === a.resource && r.group === a.group)!;
        await ensure(rest.create(res, a.namespace, a.object, { fieldManager: 'nodenet-control-plane' })).catch((e: unknown) => {
          log.warn({ [F.err]: e instanceof Error ? e.message : String(e), [F.resource]: a.resource, [F.namespace]: a.namespace, [F.name]: a.name }, 'an addon object could not be created; it is retried at the next start');
        });
      }
    },
  });
  // The scheduler and the controller manager's controllers run behind leader election, each on its Lease in
  // kube-system (kube-scheduler, kube-controller-manager), as upstream's do: with several API servers on one etcd
  // exactly one replica of each acts. They are made afresh each time this replica starts leading.
  // Each component writes as its own identity (kube-controller-manager's --use-service-account-credentials: one
  // ServiceAccount per controller in kube-system, under its system:controller: role; the scheduler as
  // system:kube-scheduler), through RBAC and admission, logged and counted as requests.
  const as = (user: User) => new LoopbackRest({ rest, user, authorizer, log: apiLog, metrics });
  const ctl = (name: keyof typeof CONTROLLER_ROLES) => as(controllerUser(name));
  const makeControllerManager = () => [
    // The allocators' repair, at once and every 3 minutes (kube-apiserver's repair interval): every value the
    // stored Services hold has its allocation object, and no object outlives its Service.
    periodic(clock, REPAIR_EVERY_MS, async () => {
      await services.repair(cache, storage);
      for (const d of services.duplicates) log.warn({ duplicate: d }, 'two Services hold the same value; the one its allocation object names keeps it');
    }, (e) => log.warn({ [F.err]: e instanceof Error ? e.message : String(e) }, 'the allocators\' repair failed; retrying at the next interval')),
    makeIpam(ctl('node-ipam-controller')),
    new EndpointSliceController({ rest: ctl('endpointslice-controller'), cache, clock, log: sub('endpointslice') }),
    new EndpointsController({ rest: ctl('endpoint-controller'), cache, clock, log: sub('endpoints'), events: events.recorder('endpoint-controller') }),
    new EventTtl({ rest: ctl('event-ttl-controller'), cache, clock, log: sub('event-ttl'), ...(o.eventTtlMs !== undefined ? { ttlMs: o.eventTtlMs } : {}) }),
    new ReplicaSetController({ rest: ctl('replicaset-controller'), cache, clock, log: sub('replicaset'), events: events.recorder('replicaset-controller') }),
    new DeploymentController({ rest: ctl('deployment-controller'), cache, clock, log: sub('deployment'), events: events.recorder('deployment-controller') }),
    new NodeLifecycleController({
      rest: ctl('node-controller'), cache, clock, log: sub('node-lifecycle'), ...(grace !== undefined ? { gracePeriodMs: grace } : {}),
      events: events.recorder(NODE_COMPONENT), evictionEvents: events.recorder(EVICTION_COMPONENT),
    }),
    new LoadBalancerController({ rest: ctl('service-controller'), cache, claims: new Claims(storage, cache, 'loadbalancerips.nodenet.io'), clock, log: sub('loadbalancer'), events: events.recorder(LOAD_BALANCER_COMPONENT), ...(o.loadBalancerPool ? { pool: o.loadBalancerPool } : {}) }),
    new GarbageCollector({ rest: ctl('generic-garbage-collector'), cache, clock, log: sub('gc') }),
    new ResourceQuotaController({ rest: ctl('resourcequota-controller'), cache, clock, log: sub('resourcequota'), ...(o.quotaResyncMs !== undefined ? { resyncMs: o.quotaResyncMs } : {}) }),
    new ClusterRoleAggregationController({ rest: ctl('clusterrole-aggregation-controller'), cache, clock, log: sub('clusterrole-aggregation') }),
    new NamespaceObjectController(defaultServiceAccount, { rest: ctl('service-account-controller'), cache, clock, log: sub('serviceaccounts') }),
    ...(pki ? [new NamespaceObjectController(rootCAConfigMap(pki.caPem), { rest: ctl('root-ca-cert-publisher'), cache, clock, log: sub('root-ca-cert-publisher') })] : []),
    new PodGarbageCollector({ rest: ctl('pod-garbage-collector'), cache, clock, log: sub('pod-gc'), events: events.recorder(POD_GC_COMPONENT), ...(o.orphanPodQuarantineMs !== undefined ? { quarantineMs: o.orphanPodQuarantineMs } : {}) }),
  ];
  const makeScheduler = () => [new Scheduler({ rest: as(SCHEDULER_USER), cache, clock, log: sub('scheduler'), events: events.recorder('default-scheduler') })];
  // The recorder flushes last: the controllers' final Events go out before it stops.
  lc.append({ name: 'events', stop: () => events.stop() });
  // client-go's identity (hostname_uuid); written to the data directory so that a lab can tell which replica leads.
  const identity = `${hostname()}_${randomUUID()}`;
  writeFileDurable(join(o.dataDir, 'identity'), `${identity}\n`, { mode: 0o600 });
  for (const [lease, make] of [['kube-controller-manager', makeControllerManager], ['kube-scheduler', makeScheduler]] as const) {
    let running: { start(): unknown; stop(): unknown }[] = [];
    const elector = new LeaderElector({
      lock: new RestLeaseLock(as(lease === 'kube-scheduler' ? SCHEDULER_USER : CONTROLLER_MANAGER_USER), lease), identity, clock, log,
      onStartedLeading: async () => {
        running = make();
        for (const c of running) await c.start();
      },
      onStoppedLeading: async () => {
        for (const c of [...running].reverse()) await c.stop();
        running = [];
      },
    });
    lc.append({ name: `leader-election ${lease}`, start: () => elector.start(), stop: () => elector.stop() });
  }
  let addr: { port: number } | undefined;
  lc.append({
    name: 'api-server',
    start: async () => {
      try {
        addr = await server.listen(o.port, o.host);
      } catch (e) {
        throw new NodenetError(ErrorCode.InvalidConfig, `cannot listen on ${o.host}:${o.port}: ${e instanceof Error ? e.message : String(e)}`, { cause: e });
      }
    },
    stop: () => server.close(),
  });
  const endpoints = new ApiServerEndpoints({
    storage, cache, rest, clock, log: sub('apiserver-endpoints'), ip: advertise, port: 0, ...(o.apiServerLease ?? {}),
  });
  const delay = o.shutdownDelayMs ?? 0;
  // Stopped first, as kube-apiserver's shutdown begins: /readyz turns red and this server leaves the kubernetes
  // EndpointSlice at once; balancers and clients then have the delay to move away while every request is still
  // served; then the rest stops.
  lc.append({
    name: 'kubernetes endpoints',
    start: () => { endpoints.port = addr!.port; return endpoints.start(); },
    stop: async () => {
      server.beginShutdown();
      await endpoints.stop();
      if (delay > 0) {
        log.info({ delayMs: delay }, '/readyz is red: waiting for balancers and clients to move away');
        await new Promise<void>((r) => clock.setTimeout(r, delay));
      }
    },
  });
  await lc.start();
  const dialHost = endpoint?.host ?? (o.host === '0.0.0.0' ? '127.0.0.1' : o.host);
  const url = `${pki ? 'https' : 'http'}://${dialHost.includes(':') ? `[${dialHost}]` : dialHost}:${endpoint?.port ?? addr!.port}`;
  mkdirSync(join(o.dataDir, 'nodes'), { recursive: true, mode: 0o700 });
  for (const [n, t] of Object.entries(tokens.nodes)) writeFileDurable(join(o.dataDir, 'nodes', `${n}.kubeconfig`), kubeconfig(url, pki?.caPem ?? null, `system:node:${n}`, t), { mode: 0o600 });
  // The admin's last: provisioning (provision/nodenet.sh) waits for it, then hands the node kubeconfigs out.
  const kc = join(o.dataDir, 'admin.kubeconfig');
  writeFileDurable(kc, kubeconfig(url, pki?.caPem ?? null, 'admin', tokens.admin), { mode: 0o600 });
  log.info({ url, dataDir: o.dataDir, [F.rev]: cache.rev, storage: describeStorage(spec, o.dataDir) }, 'control plane serving');
  return {
    url,
    kubeconfig: kc,
    storage,
    cache,
    rest,
    nodeKubeconfig: (name) => join(o.dataDir, 'nodes', `${name}.kubeconfig`),
    async stop() {
      await lc.stop();
      log.info('control plane stopped');
    },
  };
}
