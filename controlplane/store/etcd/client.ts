/**
 * controlplane/store/etcd/client: etcd's v3 gRPC API over @grpc/grpc-js
 * (messages from proto/etcd/, etcd's own numbering), as much of it as the
 * etcd storage, the leases and the lab's tools use.
 *
 * - One channel to the member list given (`--storage etcd:URL,URL,...`):
 *   grpc-js's pick_first takes the first member that answers and moves on
 *   when it goes, as etcd's own client balancer does. rotate() rebuilds the
 *   channel starting at the next member: after a unary call that timed out
 *   or found no connection (a member cut off by a partition, or paused),
 *   and when a watch is cancelled for want of a leader.
 * - Every unary call has a deadline (default 5 s). Errors become stable
 *   codes: a call that never reached a member is StoreUnavailable, and only
 *   when grpc-js says so (UNAVAILABLE with "No connection established",
 *   "Name resolution failed", "Stream refused by server": not sent, or
 *   refused unread); one whose outcome is unknown (a deadline, any other
 *   UNAVAILABLE, such as a connection reset with the call in flight, etcd's
 *   "request timed out" or "leader changed") is Timeout, and the caller's
 *   retry must find it applied once or not at all (every write nodenet
 *   sends is a compare-and-swap); etcd's "required revision has been
 *   compacted" is Expired; anything else is Store.
 * - Watch streams carry `hasleader: true` (etcd's WithRequireLeader, as
 *   kube-apiserver's client): a member cut off from its leader cancels
 *   them, so they move to a member that has one instead of going quiet.
 */
import { ChannelCredentials, Channel, Metadata, status, type CallOptions, type ClientDuplexStream, type ServiceError } from '@grpc/grpc-js';
import { ErrorCode, NodenetError } from '../../../lib/errors/errors.js';
import {
  ClusterClient, KVClient, LeaseClient, MaintenanceClient, WatchClient,
  CompactionRequest, type LeaseGrantRequest, type LeaseGrantResponse, type LeaseKeepAliveRequest, type LeaseKeepAliveResponse, type MemberListResponse, RangeRequest,
  type RangeResponse, type StatusResponse, TxnRequest, type TxnResponse, type WatchRequest, type WatchResponse,
} from '../../../proto/etcd/rpc.js';

export interface EtcdEndpoint {
  readonly host: string;
  readonly port: number;
}

/** `http://127.0.0.1:2379` (or `127.0.0.1:2379`) → host and port. Only plain http: the lab's members listen in their own namespaces. @throws InvalidConfig */
export function parseEtcdEndpoints(urls: string): EtcdEndpoint[] {
  const out: EtcdEndpoint[] = [];
  for (const raw of urls.split(',').map((x) => x.trim()).filter(Boolean)) {
    const u = /^[a-z]+:\/\//.test(raw) ? raw : `http://${raw}`;
    let p: URL;
    try {
      p = new URL(u);
    } catch {
      throw new NodenetError(ErrorCode.InvalidConfig, `etcd endpoint ${JSON.stringify(raw)} is not a URL (http://HOST:PORT)`);
    }
    if (p.protocol !== 'http:') throw new NodenetError(ErrorCode.InvalidConfig, `etcd endpoint ${raw}: only http:// is supported (no client TLS yet)`);
    if (p.pathname !== '/' && p.pathname !== '') throw new NodenetError(ErrorCode.InvalidConfig, `etcd endpoint ${raw}: no path expected`);
    const host = p.hostname.replace(/^\[|\]$/g, '');
    out.push({ host, port: p.port ? Number(p.port) : 2379 });
  }
  if (!out.length) throw new NodenetError(ErrorCode.InvalidConfig, 'no etcd endpoint given (etcd:http://HOST:PORT[,...])');
  return out;
}

const isIPv4 = (h: string) => /^\d{1,3}(\.\d{1,3}){3}$/.test(h);

/** A grpc-js target for the endpoints, in this order: `ipv4:a:p,b:p` for literals, else the first name through DNS. */
function targetOf(eps: readonly EtcdEndpoint[]): string {
  if (eps.every((e) => isIPv4(e.host))) return `ipv4:${eps.map((e) => `${e.host}:${e.port}`).join(',')}`;
  const e = eps[0]!;
  return `dns:${e.host}:${e.port}`;
}

/** etcd's messages that mean "the outcome is unknown" (the write may or may not have been applied). */
const UNKNOWN_OUTCOME = /request timed out|leader changed|no leader|timed out due to|connection closed|transport is closing|Connection dropped|context deadline exceeded|context canceled/i;
/**
 * grpc-js's details of an UNAVAILABLE call that no member received (no connection to send it on, or the stream
 * refused before the server read it). Any other UNAVAILABLE may come after the request was sent: "read ECONNRESET"
 * when a member dies with the call in flight, and the write may have been committed (found by the fault tests).
 */
const NOT_SENT = /^(No connection established|Name resolution failed|Stream refused by server)/;

/** A gRPC failure as one of the registry's codes (see the header). */
export function etcdError(e: unknown, what: string): NodenetError {
  if (e instanceof NodenetError) return e;
  const se = e as Partial<ServiceError>;
  const msg = typeof se.details === 'string' && se.details ? se.details : e instanceof Error ? e.message : String(e);
  const text = `etcd ${what}: ${msg}`;
  if (/required revision has been compacted/.test(msg)) return new NodenetError(ErrorCode.Expired, text, { cause: e });
  if (se.code === status.UNAVAILABLE && NOT_SENT.test(msg)) return new NodenetError(ErrorCode.StoreUnavailable, text, { cause: e });
  if (se.code === status.DEADLINE_EXCEEDED || /context deadline exceeded|request timed out|timed out due to|leader changed/i.test(msg)) {
    // What a client sees while the cluster has no quorum: say so, and that the write may yet be applied.
    return new NodenetError(ErrorCode.Timeout, `etcd ${what}: no answer within the deadline, the outcome is unknown (is a quorum of etcd members up, with a leader?): ${msg}`, { cause: e });
  }
  if (se.code === status.UNAVAILABLE || UNKNOWN_OUTCOME.test(msg)) return new NodenetError(ErrorCode.Timeout, text, { cause: e });
  return new NodenetError(ErrorCode.Store, text, { cause: e });
}

export interface EtcdClientOptions {
  readonly endpoints: readonly EtcdEndpoint[];
  /** Deadline of a unary call (ms). Default 5,000. */
  readonly timeoutMs?: number;
}

export class EtcdClient {
  private readonly endpoints: EtcdEndpoint[];
  private readonly timeoutMs: number;
  private channel!: Channel;
  private kv!: KVClient;
  private watchClient!: WatchClient;
  private lease!: LeaseClient;
  private maintenance!: MaintenanceClient;
  private cluster!: ClusterClient;
  private closed = false;
  /** Bumped by rotate(): a stream opened before it belongs to an old channel. */
  generation = 0;

  constructor(o: EtcdClientOptions) {
    this.endpoints = [...o.endpoints];
    this.timeoutMs = o.timeoutMs ?? 5000;
    this.connect();
  }

  private connect(): void {
    const creds = ChannelCredentials.createInsecure();
    // Keepalive pings find a dead or cut-off member in about 4 s (as etcd's client does with its dial keepalive).
    const options = { 'grpc.keepalive_time_ms': 2000, 'grpc.keepalive_timeout_ms': 2000, 'grpc.keepalive_permit_without_calls': 1, 'grpc.initial_reconnect_backoff_ms': 200, 'grpc.max_reconnect_backoff_ms': 2000, 'grpc.max_receive_message_length': 64 << 20 };
    this.channel = new Channel(targetOf(this.endpoints), creds, options);
    const shared = { channelOverride: this.channel };
    const target = targetOf(this.endpoints);
    this.kv = new KVClient(target, creds, shared);
    this.watchClient = new WatchClient(target, creds, shared);
    this.lease = new LeaseClient(target, creds, shared);
    this.maintenance = new MaintenanceClient(target, creds, shared);
    this.cluster = new ClusterClient(target, creds, shared);
  }

  /** The endpoints in the order the channel tries them. */
  get order(): readonly EtcdEndpoint[] {
    return this.endpoints;
  }

  /** Starts again at the next member (the current one answers but cannot serve: no leader). */
  rotate(): void {
    if (this.closed || this.endpoints.length < 2) return;
    this.endpoints.push(this.endpoints.shift()!);
    const old = this.channel;
    this.generation++;
    this.connect();
    old.close();
  }

  private opts(ms?: number): Partial<CallOptions> {
    return { deadline: Date.now() + (ms ?? this.timeoutMs) };
  }

  private unary<Req, Res>(what: string, call: (req: Req, md: Metadata, o: Partial<CallOptions>, cb: (e: ServiceError | null, r: Res) => void) => unknown, req: Req, ms?: number): Promise<Res> {
    if (this.closed) return Promise.reject(new NodenetError(ErrorCode.Store, `etcd ${what}: the client is closed`));
    const generation = this.generation;
    return new Promise((resolve, reject) => {
      call(req, new Metadata(), this.opts(ms), (e, r) => {
        if (!e) return resolve(r);
        const err = etcdError(e, what);
        // A member that does not answer in time, drops the connection or has none: the next call starts at the next
        // member (once per failure of this channel: calls failing together rotate once), as etcd's client balancer
        // moves off an unhealthy endpoint. A partitioned member otherwise keeps the channel until keepalive gives up.
        if ((err.code === ErrorCode.Timeout || err.code === ErrorCode.StoreUnavailable) && this.generation === generation) this.rotate();
        reject(err);
      });
    });
  }

  /**
   * A Range, retried (after the channel moved on) while its deadline lasts when a member did not answer, had no
   * connection or lost its leader: a read is safe to repeat, as etcd's client retries its "repeatable" calls. So a
   * consistent GET during an election waits for it instead of failing. Writes are never retried here.
   */
  async range(req: Partial<RangeRequest>, ms?: number): Promise<RangeResponse> {
    const budget = ms ?? this.timeoutMs;
    const deadline = Date.now() + budget;
    const message = RangeRequest.fromPartial(req);
    for (let attempt = 0; ; attempt++) {
      try {
        return await this.unary('range', (r, md, o, cb) => this.kv.range(r, md, o, cb), message, Math.max(1, deadline - Date.now()));
      } catch (e) {
        const retriable = e instanceof NodenetError && (e.code === ErrorCode.Timeout || e.code === ErrorCode.StoreUnavailable) && !this.closed;
        const wait = Math.min(100 * 2 ** attempt, 1000);
        // Another attempt only with time for it (a sliver of a deadline only ends in etcd's own "context deadline
        // exceeded", which said less than this error does).
        if (!retriable || Date.now() + wait + 250 >= deadline) throw e;
        await new Promise((r) => setTimeout(r, wait));
      }
    }
  }

  txn(req: Partial<TxnRequest>, ms?: number): Promise<TxnResponse> {
    return this.unary('txn', (r, md, o, cb) => this.kv.txn(r, md, o, cb), TxnRequest.fromPartial(req), ms);
  }

  compact(req: Partial<CompactionRequest>): Promise<unknown> {
    return this.unary('compact', (r, md, o, cb) => this.kv.compact(r, md, o, cb), CompactionRequest.fromPartial(req));
  }

  status(ms?: number): Promise<StatusResponse> {
    return this.unary('status', (r, md, o, cb) => this.maintenance.status(r, md, o, cb), {}, ms);
  }

  memberList(): Promise<MemberListResponse> {
    return this.unary('member list', (r, md, o, cb) => this.cluster.memberList(r, md, o, cb), { linearizable: false });
  }

  leaseGrant(ttlSeconds: number): Promise<bigint> {
    return this.unary<LeaseGrantRequest, LeaseGrantResponse>('lease grant', (r, md, o, cb) => this.lease.leaseGrant(r, md, o, cb), { TTL: BigInt(ttlSeconds), ID: 0n }).then((r) => {
      if (r.error) throw new NodenetError(ErrorCode.Store, `etcd lease grant: ${r.error}`);
      return r.ID;
    });
  }

  leaseRevoke(id: bigint): Promise<unknown> {
    return this.unary('lease revoke', (r, md, o, cb) => this.lease.leaseRevoke(r, md, o, cb), { ID: id });
  }

  /** A keep-alive stream (the caller writes a request per renewal). */
  leaseKeepAlive(): ClientDuplexStream<LeaseKeepAliveRequest, LeaseKeepAliveResponse> {
    return this.lease.leaseKeepAlive();
  }

  /** A watch stream that requires a leader (see the header). */
  watch(): ClientDuplexStream<WatchRequest, WatchResponse> {
    if (this.closed) throw new NodenetError(ErrorCode.Store, 'etcd watch: the client is closed');
    const md = new Metadata();
    md.set('hasleader', 'true');
    return this.watchClient.watch(md);
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.channel.close();
  }
}

/** The key after every key with this prefix (etcd's range_end for a prefix). */
export function prefixEnd(prefix: Buffer): Buffer {
  const end = Buffer.from(prefix);
  for (let i = end.length - 1; i >= 0; i--) {
    if (end[i]! < 0xff) {
      end[i]!++;
      return end.subarray(0, i + 1);
    }
  }
  return Buffer.from([0]);
}
