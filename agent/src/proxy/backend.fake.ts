/**
 * A ProxyBackend that keeps "installed" state per Service instead of kernel
 * rules, and checks what a real backend relies on:
 * - the snapshot is well formed (keys match spns, every endpoints key is a
 *   Service port, IPs and ports valid);
 * - a partial sync comes only after a successful full one, with nothing
 *   failed, flushed (removeCanary) or cleaned up since — otherwise it throws
 *   a plain Error (a bug in the caller, not a rule failure);
 * - partial scopes name ServiceKeys ("ns/name").
 * A partial sync rewrites only the named Services, as a real one does, so
 * a caller that forgets a changed Service leaves stale state behind, which
 * installedEquals(snapshot) then exposes. failNext() makes syncs throw
 * NodenetError(RuleApply) like a failed restore.
 */
import { ErrorCode, NodenetError } from '../../../lib/errors/errors.js';
import { isIPv4 } from '../../../lib/net/ip.js';
import { deepEqual } from '../../../lib/reconcile/deep-equal.js';
import { spnString, type EndpointInfo, type ProxyBackend, type ProxySnapshot, type ServiceKey, type ServicePortInfo, type SyncScope } from './types.js';

type Installed = Map<ServiceKey, Map<string, { svc: ServicePortInfo; eps: readonly EndpointInfo[] }>>;

export interface FakeSync {
  readonly snapshot: ProxySnapshot;
  readonly scope: SyncScope;
  readonly ok: boolean;
}

function group(snapshot: ProxySnapshot): Installed {
  const out: Installed = new Map();
  for (const [k, svc] of snapshot.services) {
    const sk = `${svc.spn.namespace}/${svc.spn.name}`;
    let m = out.get(sk);
    if (!m) out.set(sk, (m = new Map()));
    m.set(k, { svc, eps: snapshot.endpoints.get(k) ?? [] });
  }
  return out;
}

function validPort(p: number): boolean {
  return Number.isInteger(p) && p >= 1 && p <= 65535;
}

export function validateSnapshot(s: ProxySnapshot): void {
  for (const [k, svc] of s.services) {
    if (spnString(svc.spn) !== k) throw new Error(`FakeBackend: services key ${k} does not match its spn ${spnString(svc.spn)}`);
    if (!isIPv4(svc.clusterIP)) throw new Error(`FakeBackend: ${k}: bad clusterIP ${svc.clusterIP}`);
    if (!validPort(svc.port)) throw new Error(`FakeBackend: ${k}: bad port ${svc.port}`);
    if (svc.nodePort !== 0 && !validPort(svc.nodePort)) throw new Error(`FakeBackend: ${k}: bad nodePort ${svc.nodePort}`);
    if (svc.protocol !== svc.spn.protocol) throw new Error(`FakeBackend: ${k}: protocol differs from its spn`);
  }
  for (const [k, eps] of s.endpoints) {
    if (!s.services.has(k)) throw new Error(`FakeBackend: endpoints for ${k}, which is not a Service port`);
    for (const e of eps) {
      if (!isIPv4(e.ip) || !validPort(e.port)) throw new Error(`FakeBackend: ${k}: bad endpoint ${e.ip}:${e.port}`);
    }
  }
}

export class FakeBackend implements ProxyBackend {
  readonly syncs: FakeSync[] = [];
  cleanups = 0;
  /** null: unknown state (never synced, failed, flushed or cleaned up); only a full sync may follow. */
  private installed: Installed | null = null;
  private canaryGone = true;
  private failures: string[] = [];
  private canaryChecks = 0;

  constructor(readonly mode: ProxyBackend['mode'] = 'iptables') {}

  /** The next n syncs fail with NodenetError(RuleApply). */
  failNext(n = 1, message = 'iptables-restore: line 42 failed'): this {
    for (let i = 0; i < n; i++) this.failures.push(message);
    return this;
  }

  /** Someone flushed our rules: canaryMissing() turns true and only a full sync is valid. */
  removeCanary(): this {
    this.canaryGone = true;
    this.installed = null;
    return this;
  }

  async sync(snapshot: ProxySnapshot, scope: SyncScope): Promise<void> {
    validateSnapshot(snapshot);
    if (!scope.full) {
      if (this.installed === null) throw new Error('FakeBackend: partial sync without a successful full sync since start, failure, flush or cleanup');
      for (const k of scope.changed) if (!/^[^/:]+\/[^/:]+$/.test(k)) throw new Error(`FakeBackend: partial scope names ${JSON.stringify(k)}, not a ServiceKey`);
    }
    const failure = this.failures.shift();
    if (failure !== undefined) {
      this.syncs.push({ snapshot, scope, ok: false });
      this.installed = null;
      throw new NodenetError(ErrorCode.RuleApply, failure);
    }
    this.syncs.push({ snapshot, scope, ok: true });
    const wanted = group(snapshot);
    if (scope.full) {
      this.installed = wanted;
      this.canaryGone = false;
      return;
    }
    const installed = this.installed!;
    for (const k of scope.changed) {
      const w = wanted.get(k);
      if (w) installed.set(k, w);
      else installed.delete(k);
    }
  }

  async canaryMissing(): Promise<boolean> {
    this.canaryChecks++;
    return this.canaryGone;
  }

  async cleanup(): Promise<void> {
    this.cleanups++;
    this.installed = null;
    this.canaryGone = true;
  }

  /** Service ports plus endpoints installed: a stand-in for a rule count. */
  lastSyncRuleCount(): number | null {
    if (!this.installed) return null;
    let n = 0;
    for (const m of this.installed.values()) for (const v of m.values()) n += 1 + v.eps.length;
    return n;
  }

  /** Whether the installed state equals what `snapshot` asks for. */
  installedEquals(snapshot: ProxySnapshot): boolean {
    return this.installed !== null && deepEqual(this.installed, group(snapshot));
  }

  /** How often canaryMissing() was asked. */
  get canaryCheckCount(): number {
    return this.canaryChecks;
  }

  /** Scopes of all syncs as strings: "full", "partial default/a,default/b", suffixed " FAILED". */
  scopes(): string[] {
    return this.syncs.map((s) => (s.scope.full ? 'full' : `partial ${[...s.scope.changed].sort().join(',')}`) + (s.ok ? '' : ' FAILED'));
  }
}
